/**
 * RFC 9421 HTTP Message Signatures as UCP profiles them: ES256 (ecdsa-p256-sha256) with raw
 * r‖s signatures, `alg` never sent, any verifying label authenticates the message.
 *
 * Pure protocol code: no key storage, no profile fetching, no routes. A message is a plain object
 * (HttpMessage); keys are node KeyObjects (see jwk.ts to import/export JWKs).
 *
 * Spec: RFC 9421 §2 (components, signature base), §3 (sign/verify), §4 (Signature-Input /
 * Signature), §7.2.2 (replay); RFC 8941 (structured fields); research brief "UCP + RFC 9421"
 * §7 (UCP profile of RFC 9421), §8 (implementation notes), §12 (pitfalls).
 */
import { sign as cryptoSign, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import {
  isInnerList,
  isValidKeyStr,
  parseDictionary,
  parseItem,
  parseList,
  serializeDictionary,
  serializeInnerList,
  serializeItem,
  serializeList,
  serializeParameters,
  type Dictionary,
  type InnerList,
  type Item,
  type Parameters,
} from 'structured-headers';
import { verifyContentDigest } from './content-digest.ts';
import { isP256Key } from './jwk.ts';
import type { ReplayEntry, ReplayGuard } from './replay-cache.ts';
import { SignatureError, type SignatureErrorCode, type SignatureLabelFailure } from './signature-error.ts';

/** The RFC 9421 algorithm name for ES256; the only `alg` value a verifier accepts. */
export const ECDSA_P256_SHA256 = 'ecdsa-p256-sha256';

/**
 * An HTTP request or response as plain data.
 * - request: `method` and `url` (full absolute URL as the client used it: scheme, Host/authority,
 *   raw path and query — see pitfall 8), no `status`.
 * - response: `status` (3 digits); `url` is the URL of the request it answers; `request` is that
 *   request, needed only for components carrying `;req`.
 * `headers` keys are matched case-insensitively; an array holds the field's separate lines.
 * `body` is the exact content bytes (after Content-Encoding); absent means no content.
 */
export interface HttpMessage {
  method?: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  status?: number;
  body?: Uint8Array;
  request?: HttpMessage;
}

/**
 * Signature parameters (RFC 9421 §2.3). `created`/`expires` are unix seconds. They are
 * serialized in the object's own key order.
 */
export interface SignatureParameters {
  created?: number;
  expires?: number;
  nonce?: string;
  alg?: string;
  keyid?: string;
  tag?: string;
}

/** Options for signMessage. Components use the identifier syntax described at createSignatureBase. */
export interface SignOptions {
  /** Key id published with the public key (JWK `kid`). */
  keyid: string;
  /** P-256 private KeyObject. */
  privateKey: KeyObject;
  /** Signature label, an RFC 8941 key (default "sig1"). */
  label?: string;
  /** Covered components in signing order, e.g. ['@method', '@authority', '@path', 'content-digest']. */
  components: readonly string[];
  /** Creation time, unix seconds (integer). */
  created: number;
  /** Expiry time, unix seconds (integer). */
  expires?: number;
  nonce?: string;
  tag?: string;
}

/** The two header fields signMessage produces (lower-case names). */
export interface SignatureHeaders {
  'signature-input': string;
  signature: string;
}

/** Options for verifyMessage. */
export interface VerifyOptions {
  /** Key lookup by `keyid`; undefined when unknown (→ key_not_found). May be async. A thrown
   * SignatureError fails that label; any other thrown error propagates unchanged. */
  resolveKey(keyid: string): KeyObject | undefined | Promise<KeyObject | undefined>;
  /** Components a signature must cover to be considered (identifier syntax as createSignatureBase). */
  requiredComponents?: readonly string[];
  /** Current time: unix seconds, or a Date (default: the system clock). */
  now?: number | Date;
  /** Clock skew tolerated on `created`/`expires`, seconds (default 60). */
  maxSkewSeconds?: number;
  /** Oldest acceptable `created`, seconds before now (default 300; Infinity disables). Signatures
   * without `created` are not age-checked. */
  maxAgeSeconds?: number;
  /** When given, a verified signature seen before within its window is refused. */
  replayCache?: ReplayGuard;
  /** Refuse a signature without `created` (`signature_invalid`), before anything is recorded. */
  requireCreated?: boolean;
}

/** Most signature labels one message may carry; more is `signature_invalid` (bounds the work and the replay rows an attacker can cause). */
export const MAX_SIGNATURE_LABELS = 8;

/** What verifyMessage returns for the label that verified. */
export interface VerifiedSignature {
  label: string;
  keyid: string;
  key: KeyObject;
  /** Covered component identifiers, serialized (e.g. `"@method"`, `"example-dict";key="a"`). */
  components: string[];
  /** The signature parameters as received. */
  params: SignatureParameters;
}

// ---------------------------------------------------------------------------------------------
// Component identifiers

interface ComponentId {
  /** Lower-case component name, e.g. "@method" or "content-type". */
  name: string;
  /** Component parameters in received/given order (sf, key, bs, req, tr, name). */
  params: Parameters;
  /** Serialized identifier as it appears in the base, e.g. `"@query-param";name="Pet"`. */
  serialized: string;
  /** Order-independent identity used for duplicates and required-component checks. */
  identity: string;
}

const DERIVED = new Set([
  '@method',
  '@target-uri',
  '@authority',
  '@scheme',
  '@request-target',
  '@path',
  '@query',
  '@query-param',
  '@status',
]);
const FIELD_PARAMS = new Set(['sf', 'key', 'bs', 'req', 'tr']);
const UPPERCASE = /[A-Z]/;
const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;

function invalid(message: string, cause?: unknown): SignatureError {
  return new SignatureError('signature_invalid', message, cause === undefined ? {} : { cause });
}

function toComponentId(item: Item): ComponentId {
  const [name, params] = item;
  if (typeof name !== 'string') throw invalid('component identifier must be an sf-string');
  if (UPPERCASE.test(name)) throw invalid(`component name ${name} must be lower-case`);
  if (name.startsWith('@')) {
    if (!DERIVED.has(name)) throw invalid(`unknown derived component ${name}`);
    if (name === '@signature-params') throw invalid('@signature-params cannot be covered');
    for (const [param, value] of params) {
      if (param === 'req' && value === true) continue;
      if (param === 'name' && name === '@query-param' && typeof value === 'string') continue;
      throw invalid(`parameter ${param} is not valid on ${name}`);
    }
    if (name === '@query-param' && !params.has('name')) throw invalid('@query-param needs a name parameter');
  } else {
    if (!FIELD_NAME.test(name)) throw invalid(`invalid field name ${JSON.stringify(name)}`);
    for (const [param, value] of params) {
      if (!FIELD_PARAMS.has(param)) throw invalid(`unknown component parameter ${param} on ${name}`);
      if (param === 'key' ? typeof value !== 'string' : value !== true) {
        throw invalid(`component parameter ${param} on ${name} has an invalid value`);
      }
    }
    if (params.has('bs') && (params.has('sf') || params.has('key'))) {
      throw invalid(`bs cannot be combined with sf or key on ${name}`);
    }
  }
  const identity =
    name +
    [...params.entries()]
      .map((entry) => serializeParameters(new Map([entry])))
      .sort()
      .join('');
  return { name, params, serialized: serializeItem(item), identity };
}

const componentCache = new Map<string, ComponentId>();
const COMPONENT_CACHE_LIMIT = 512;

/**
 * Parse an identifier written by a caller: `@method`, `Content-Type` (lower-cased),
 * `example-dict;key="a"`, or the serialized form `"@query-param";name="Pet"`. Cached.
 */
function parseComponentSpec(spec: string): ComponentId {
  const cached = componentCache.get(spec);
  if (cached !== undefined) return cached;
  let item: Item;
  try {
    if (spec.startsWith('"')) {
      item = parseItem(spec);
    } else {
      const split = spec.indexOf(';');
      const name = (split === -1 ? spec : spec.slice(0, split)).trim().toLowerCase();
      if (name === '' || name.includes('"') || name.includes('\\')) throw new Error('empty or quoted name');
      item = parseItem(`"${name}"${split === -1 ? '' : spec.slice(split)}`);
    }
  } catch (cause) {
    throw invalid(`cannot parse component identifier ${JSON.stringify(spec)}`, cause);
  }
  if (typeof item[0] === 'string') item = [item[0].toLowerCase(), item[1]];
  const id = toComponentId(item);
  if (componentCache.size >= COMPONENT_CACHE_LIMIT) componentCache.clear();
  componentCache.set(spec, id);
  return id;
}

function parseComponentSpecs(specs: readonly string[]): ComponentId[] {
  const ids = specs.map(parseComponentSpec);
  assertNoDuplicates(ids);
  return ids;
}

function assertNoDuplicates(ids: readonly ComponentId[]): void {
  const seen = new Set<string>();
  for (const id of ids) {
    if (seen.has(id.identity)) throw invalid(`component ${id.serialized} is listed twice`);
    seen.add(id.identity);
  }
}

// ---------------------------------------------------------------------------------------------
// Message access

const URL_PARTS = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(?:\?([^#]*))?/;
const OBS_FOLD = /\r?\n[ \t]+/g;
const EDGE_WHITESPACE = /^[ \t]+|[ \t]+$/g;
const BASE_SAFE = /^[\t\x20-\x7E]*$/;
// eslint-disable-next-line no-control-regex -- the range is all of ASCII
const NON_ASCII = /[^\x00-\x7F]/;
const DEFAULT_PORT: Readonly<Record<string, string>> = { http: '80', https: '443' };

interface UrlParts {
  scheme: string;
  authority: string;
  /** Raw path, "/" when empty. */
  path: string;
  /** Raw query without "?", undefined when the URL has none. */
  query: string | undefined;
  /** URL without fragment. */
  targetUri: string;
}

/** Lazily computed, per-call view of one message: lower-cased header map and raw URL parts. */
class MessageView {
  readonly message: HttpMessage;
  #fields: Map<string, string[]> | undefined;
  #url: UrlParts | undefined;
  #request: MessageView | undefined;

  constructor(message: HttpMessage) {
    this.message = message;
  }

  get isResponse(): boolean {
    return this.message.status !== undefined;
  }

  get request(): MessageView {
    if (!this.isResponse) throw invalid('the req parameter is only valid on a response');
    const request = this.message.request;
    if (request === undefined) throw invalid('a component with req needs the request (message.request)');
    this.#request ??= new MessageView(request);
    return this.#request;
  }

  /** Field lines of `name` (lower-case), undefined when absent. */
  field(name: string): string[] | undefined {
    if (this.#fields === undefined) {
      this.#fields = new Map();
      for (const [key, value] of Object.entries(this.message.headers)) {
        if (value === undefined) continue;
        const lower = key.toLowerCase();
        const lines = this.#fields.get(lower) ?? [];
        if (typeof value === 'string') lines.push(value);
        else lines.push(...value);
        this.#fields.set(lower, lines);
      }
    }
    const lines = this.#fields.get(name);
    return lines === undefined || lines.length === 0 ? undefined : lines;
  }

  get url(): UrlParts {
    if (this.#url === undefined) {
      const raw = this.message.url;
      const match = typeof raw === 'string' ? URL_PARTS.exec(raw) : null;
      if (match === null) throw invalid(`message url ${JSON.stringify(raw)} is not an absolute URL`);
      const scheme = match[1]!.toLowerCase();
      let authority = match[2]!;
      const at = authority.lastIndexOf('@');
      if (at !== -1) authority = authority.slice(at + 1);
      authority = NON_ASCII.test(authority) ? new URL(raw).host : authority.toLowerCase();
      const port = DEFAULT_PORT[scheme];
      if (port !== undefined && authority.endsWith(`:${port}`))
        authority = authority.slice(0, -port.length - 1);
      const path = match[3] === '' ? '/' : match[3]!;
      const query = match[4];
      const hash = raw.indexOf('#');
      this.#url = { scheme, authority, path, query, targetUri: hash === -1 ? raw : raw.slice(0, hash) };
    }
    return this.#url;
  }
}

// ---------------------------------------------------------------------------------------------
// Component values (RFC 9421 §2.1, §2.2)

/** Structured field types of fields UCP and RFC 9421 use; others are tried as dictionary, list, item. */
const KNOWN_SF_TYPES: ReadonlyMap<string, 'dictionary' | 'list' | 'item'> = new Map([
  ['signature-input', 'dictionary'],
  ['signature', 'dictionary'],
  ['content-digest', 'dictionary'],
  ['repr-digest', 'dictionary'],
  ['want-content-digest', 'dictionary'],
  ['want-repr-digest', 'dictionary'],
  ['ucp-agent', 'dictionary'],
  ['signature-agent', 'dictionary'],
  ['priority', 'dictionary'],
  ['cdn-cache-control', 'dictionary'],
  ['accept-ch', 'list'],
  ['cache-status', 'list'],
  ['proxy-status', 'list'],
]);

function strictSerialize(name: string, value: string): string {
  const known = KNOWN_SF_TYPES.get(name);
  const attempts = known === undefined ? (['dictionary', 'list', 'item'] as const) : [known];
  let lastError: unknown;
  for (const type of attempts) {
    try {
      if (type === 'dictionary') return serializeDictionary(parseDictionary(value));
      if (type === 'list') return serializeList(parseList(value));
      return serializeItem(parseItem(value));
    } catch (cause) {
      lastError = cause;
    }
  }
  throw invalid(`field ${name} is not a valid structured field`, lastError);
}

function fieldValue(view: MessageView, id: ComponentId): string {
  if (id.params.has('tr')) throw invalid(`trailer fields are not supported (${id.serialized})`);
  const lines = view.field(id.name);
  if (lines === undefined) throw invalid(`covered field ${id.name} is missing from the message`);
  if (id.params.has('bs')) {
    return lines
      .map((line) => serializeItem([Buffer.from(line.replace(EDGE_WHITESPACE, ''), 'latin1'), new Map()]))
      .join(', ');
  }
  const combined = lines.map((line) => line.replace(OBS_FOLD, ' ').replace(EDGE_WHITESPACE, '')).join(', ');
  const key = id.params.get('key');
  if (typeof key === 'string') {
    let dict: Dictionary;
    try {
      dict = parseDictionary(combined);
    } catch (cause) {
      throw invalid(`field ${id.name} is not a structured-field dictionary`, cause);
    }
    const member = dict.get(key);
    if (member === undefined) throw invalid(`dictionary field ${id.name} has no member ${key}`);
    return isInnerList(member) ? serializeInnerList(member) : serializeItem(member);
  }
  if (id.params.has('sf')) return strictSerialize(id.name, combined);
  return combined;
}

/** Percent-encode with the application/x-www-form-urlencoded set, space as %20 (RFC 9421 §2.2.8). */
function encodeQueryPart(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const safe =
      (byte >= 0x30 && byte <= 0x39) ||
      (byte >= 0x41 && byte <= 0x5a) ||
      (byte >= 0x61 && byte <= 0x7a) ||
      byte === 0x2a ||
      byte === 0x2d ||
      byte === 0x2e ||
      byte === 0x5f;
    out += safe ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function queryParamValue(view: MessageView, name: string): string {
  let found: string | undefined;
  for (const [key, value] of new URLSearchParams(view.url.query ?? '')) {
    if (encodeQueryPart(key) !== name) continue;
    if (found !== undefined) throw invalid(`query parameter ${name} occurs more than once`);
    found = encodeQueryPart(value);
  }
  if (found === undefined) throw invalid(`query parameter ${name} is missing`);
  return found;
}

function derivedValue(message: MessageView, id: ComponentId): string {
  const fromRequest = id.params.has('req');
  const view = fromRequest ? message.request : message;
  if (id.name === '@status') {
    const status = view.message.status;
    if (fromRequest || status === undefined) throw invalid('@status is only valid on a response');
    if (!Number.isInteger(status) || status < 100 || status > 999) throw invalid(`invalid status ${status}`);
    return String(status);
  }
  if (view.isResponse) throw invalid(`${id.name} needs the request: add ;req on a response`);
  switch (id.name) {
    case '@method': {
      const method = view.message.method;
      if (typeof method !== 'string' || method === '') throw invalid('@method needs message.method');
      return method;
    }
    case '@target-uri':
      return view.url.targetUri;
    case '@authority':
      return view.url.authority;
    case '@scheme':
      return view.url.scheme;
    case '@request-target':
      return view.url.query === undefined ? view.url.path : `${view.url.path}?${view.url.query}`;
    case '@path':
      return view.url.path;
    case '@query':
      return `?${view.url.query ?? ''}`;
    case '@query-param':
      return queryParamValue(view, id.params.get('name') as string);
    default:
      throw invalid(`unknown derived component ${id.name}`);
  }
}

function componentValue(message: MessageView, id: ComponentId): string {
  if (id.name.startsWith('@')) return derivedValue(message, id);
  return fieldValue(id.params.has('req') ? message.request : message, id);
}

/** Build the base for already-validated components and parameters (RFC 9421 §2.5). */
function buildBase(view: MessageView, components: readonly ComponentId[], sigParams: Parameters): string {
  let base = '';
  for (const id of components) {
    const value = componentValue(view, id);
    if (!BASE_SAFE.test(value))
      throw invalid(`component ${id.serialized} has a non-ASCII or control character`);
    base += `${id.serialized}: ${value}\n`;
  }
  const innerList: InnerList = [components.map((id) => [id.name, id.params]), sigParams];
  return `${base}"@signature-params": ${serializeInnerList(innerList)}`;
}

function toSfParameters(params: SignatureParameters): Parameters {
  const out: Parameters = new Map();
  for (const [name, value] of Object.entries(params) as [keyof SignatureParameters, unknown][]) {
    if (value === undefined) continue;
    if (name === 'created' || name === 'expires') {
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
        throw invalid(`${name} must be a non-negative integer of unix seconds`);
      }
    } else if (name === 'nonce' || name === 'alg' || name === 'keyid' || name === 'tag') {
      if (typeof value !== 'string' || !BASE_SAFE.test(value) || value.includes('\t')) {
        throw invalid(`${name} must be a printable ASCII string`);
      }
    } else {
      throw invalid(`unknown signature parameter ${String(name)}`);
    }
    out.set(name, value);
  }
  return out;
}

/**
 * Build the exact RFC 9421 signature base (§2.5): one `"<identifier>": <value>` line per covered
 * component, then `"@signature-params": <inner list>`; LF-separated, no trailing LF.
 *
 * Component identifiers (strings): derived `@method`, `@authority`, `@path`, `@query`,
 * `@target-uri`, `@scheme`, `@request-target`, `@status`, `"@query-param";name="<encoded>"`;
 * fields by name (lower-cased: `Content-Type` → `content-type`) with optional parameters
 * `;sf` (strict structured-field re-serialization), `;key="k"` (one dictionary member), `;bs`
 * (byte sequences), `;req` (taken from `message.request`, responses only). Both `name;key="a"` and
 * the serialized form `"name";key="a"` are accepted.
 *
 * @param params signature parameters, serialized in their key order (created/expires unix seconds)
 * @throws SignatureError `signature_invalid` when a component is missing from the message, unknown,
 *   duplicated, carries an invalid parameter, or its value is not ASCII
 */
export function createSignatureBase(
  message: HttpMessage,
  components: readonly string[],
  params: SignatureParameters,
): string {
  return buildBase(new MessageView(message), parseComponentSpecs(components), toSfParameters(params));
}

/**
 * Sign a message with ES256 (RFC 9421 §3.1, `ecdsa-p256-sha256`, raw 64-byte r‖s, never DER).
 * Emits `created`, `expires`, `keyid`, `nonce`, `tag` in that order; never `alg` (UCP rule).
 * Compute and set `Content-Digest` (content-digest.ts) on the message before covering it.
 *
 * @returns the `signature-input` and `signature` values for `label`, e.g.
 *   `sig1=("@method" "@authority" "@path");created=1738617600;keyid="k1"` and `sig1=:<base64>:`.
 *   To add a second signature to a message already carrying these fields, append with ", ".
 * @throws SignatureError `algorithm_unsupported` when `privateKey` is not a P-256 private key;
 *   `signature_invalid` for an invalid label, component or parameter (see createSignatureBase)
 */
export function signMessage(message: HttpMessage, options: SignOptions): SignatureHeaders {
  const label = options.label ?? 'sig1';
  if (!isValidKeyStr(label))
    throw invalid(`signature label ${JSON.stringify(label)} is not a structured-field key`);
  const key = options.privateKey;
  if (key.type !== 'private' || !isP256Key(key)) {
    throw new SignatureError('algorithm_unsupported', 'signing needs a P-256 private key (ES256)');
  }
  const components = parseComponentSpecs(options.components);
  const sigParams = toSfParameters({
    created: options.created,
    expires: options.expires,
    keyid: options.keyid,
    nonce: options.nonce,
    tag: options.tag,
  });
  const base = buildBase(new MessageView(message), components, sigParams);
  const signature = cryptoSign('sha256', Buffer.from(base, 'latin1'), { key, dsaEncoding: 'ieee-p1363' });
  const innerList: InnerList = [components.map((id) => [id.name, id.params]), sigParams];
  return {
    'signature-input': serializeDictionary(new Map([[label, innerList]])),
    signature: serializeDictionary(new Map([[label, [signature, new Map()]]])),
  };
}

// ---------------------------------------------------------------------------------------------
// Verification (RFC 9421 §3.2, UCP §7.4–7.5)

interface ParsedSignature {
  label: string;
  components: ComponentId[];
  sfParams: Parameters;
  params: SignatureParameters;
  signature: Uint8Array;
}

function readHeaderDictionary(view: MessageView, name: string): Dictionary | undefined {
  const lines = view.field(name);
  if (lines === undefined) return undefined;
  try {
    return parseDictionary(lines.join(', '));
  } catch (cause) {
    throw invalid(`${name} is not a valid structured-field dictionary`, cause);
  }
}

function readSignatureParams(sfParams: Parameters): SignatureParameters {
  const params: SignatureParameters = {};
  for (const [name, value] of sfParams) {
    if (name === 'created' || name === 'expires') {
      if (typeof value !== 'number' || !Number.isSafeInteger(value))
        throw invalid(`${name} must be an integer`);
      params[name] = value;
    } else if (name === 'nonce' || name === 'alg' || name === 'keyid' || name === 'tag') {
      if (typeof value !== 'string') throw invalid(`${name} must be a string`);
      params[name] = value;
    }
    // Unknown parameters are covered by the signature (they are in @signature-params) and ignored.
  }
  return params;
}

function parseLabel(
  label: string,
  input: Item | InnerList | undefined,
  signature: Item | InnerList | undefined,
): ParsedSignature {
  if (input === undefined) throw invalid(`label ${label} is in Signature but not in Signature-Input`);
  if (signature === undefined) throw invalid(`label ${label} is in Signature-Input but not in Signature`);
  if (!isInnerList(input)) throw invalid(`Signature-Input member ${label} is not an inner list`);
  if (isInnerList(signature) || !(signature[0] instanceof ArrayBuffer)) {
    throw invalid(`Signature member ${label} is not a byte sequence`);
  }
  const components = input[0].map(toComponentId);
  assertNoDuplicates(components);
  return {
    label,
    components,
    sfParams: input[1],
    params: readSignatureParams(input[1]),
    signature: new Uint8Array(signature[0]),
  };
}

function toUnixSeconds(now: number | Date | undefined): number {
  if (now === undefined) return Math.floor(Date.now() / 1000);
  return Math.floor(now instanceof Date ? now.getTime() / 1000 : now);
}

/** Unix seconds until which a replay of this signature must be refused. */
function windowEnd(params: SignatureParameters, now: number, maxAge: number, skew: number): number {
  let end = params.expires === undefined ? Infinity : params.expires + skew;
  if (params.created !== undefined) end = Math.min(end, params.created + maxAge + skew);
  return Number.isFinite(end) ? end : now + (Number.isFinite(maxAge) ? maxAge : 86_400) + skew;
}

/** The order n of the P-256 group: ECDSA's s and n − s both verify (signature malleability). */
const P256_ORDER = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
const P256_HALF_ORDER = P256_ORDER >> 1n;

/**
 * The replay-guard id of a signature: keyid plus the raw r‖s with s folded to the low half
 * (s ≤ n/2). An ECDSA signature (r, s) has a twin (r, n − s) that verifies just as well and that
 * anyone can compute from a captured request, so keying on the bytes as sent would let a replay
 * through as the twin. Non-64-byte values (unverified other labels) are keyed as sent.
 */
function replayId(keyid: string, signature: Uint8Array): string {
  let bytes = Buffer.from(signature);
  if (bytes.length === 64) {
    const s = BigInt(`0x${bytes.subarray(32).toString('hex')}`);
    if (s > P256_HALF_ORDER) {
      bytes = Buffer.concat([
        bytes.subarray(0, 32),
        Buffer.from((P256_ORDER - s).toString(16).padStart(64, '0'), 'hex'),
      ]);
    }
  }
  return `${keyid} ${bytes.toString('base64')}`;
}

const EMPTY_BODY = new Uint8Array(0);

/**
 * Verify an RFC 9421 signed message the UCP way: each label of `Signature-Input`/`Signature`
 * (RFC 8941 dictionaries) is tried on its own; the message is accepted when ANY label verifies.
 * Per label, in order: parse → `alg` absent or `ecdsa-p256-sha256` → required components covered
 * → `created`/`expires` within skew and max age → key lookup by `keyid` (must be P-256) →
 * signature base rebuilt from the received message → `Content-Digest` recomputed over
 * `message.body` (absent body = empty) when the message's own `content-digest` is covered →
 * 64-byte raw r‖s check → ES256 verify → replay check.
 *
 * A verified signature found in `replayCache` rejects the whole message (`signature_replayed`);
 * on success every label's signature is recorded until its window end (expires, or created +
 * maxAgeSeconds, plus skew), so stripping one label does not make a replay pass.
 *
 * @returns the first label that verified, with its key id, key, components and parameters
 * @throws SignatureError when no label verifies: the first label's failure is the error's code,
 *   all are listed in `failures`. Codes: `signature_missing` (no Signature-Input or Signature),
 *   `signature_invalid` (malformed headers/labels, missing covered field, wrong length or DER
 *   signature, bad signature), `algorithm_unsupported` (alg other than ecdsa-p256-sha256, non-P-256
 *   key, no supported digest), `components_missing`, `signature_expired`, `key_not_found`,
 *   `digest_mismatch`, `signature_replayed`. Errors thrown by resolveKey or replayCache that are
 *   not SignatureErrors propagate unchanged.
 */
export async function verifyMessage(
  message: HttpMessage,
  options: VerifyOptions,
): Promise<VerifiedSignature> {
  const view = new MessageView(message);
  const inputs = readHeaderDictionary(view, 'signature-input');
  const signatures = readHeaderDictionary(view, 'signature');
  if (inputs === undefined || signatures === undefined || inputs.size === 0 || signatures.size === 0) {
    throw new SignatureError('signature_missing', 'the message carries no Signature-Input/Signature');
  }
  const now = toUnixSeconds(options.now);
  const skew = options.maxSkewSeconds ?? 60;
  const maxAge = options.maxAgeSeconds ?? 300;
  const required = parseComponentSpecs(options.requiredComponents ?? []);
  const labels = [...new Set([...inputs.keys(), ...signatures.keys()])];
  if (labels.length > MAX_SIGNATURE_LABELS) {
    throw new SignatureError(
      'signature_invalid',
      `the message carries ${labels.length} signature labels; at most ${MAX_SIGNATURE_LABELS} are accepted`,
    );
  }
  const parsed = new Map<string, ParsedSignature>();
  const failures: SignatureLabelFailure[] = [];

  for (const label of labels) {
    try {
      const sig = parseLabel(label, inputs.get(label), signatures.get(label));
      parsed.set(label, sig);
      const verified = await verifyLabel(view, sig, options, required, now, skew, maxAge);
      if (options.replayCache !== undefined) {
        // The other labels' signatures are recorded too (stripping the verified label must not let a
        // replay pass on another one). They are unverified input, so their window is capped at the
        // longest any accepted signature can have: now + max age + skew.
        const cap = now + (Number.isFinite(maxAge) ? maxAge : 86_400) + skew;
        const others: ReplayEntry[] = [];
        for (const other of labels) {
          if (other === label) continue;
          const otherSig =
            parsed.get(other) ?? tryParseLabel(other, inputs.get(other), signatures.get(other));
          if (otherSig?.params.keyid === undefined) continue;
          others.push({
            id: replayId(otherSig.params.keyid, otherSig.signature),
            expiresAtSeconds: Math.min(windowEnd(otherSig.params, now, maxAge, skew), cap),
          });
        }
        const first = {
          id: replayId(verified.keyid, sig.signature),
          expiresAtSeconds: windowEnd(sig.params, now, maxAge, skew),
        };
        const fresh = await recordSignatures(options.replayCache, first, others, now);
        if (!fresh) {
          throw new SignatureError(
            'signature_replayed',
            `signature ${label} was already used within its window`,
            {
              failures: [...failures, { label, code: 'signature_replayed', message: 'replayed' }],
            },
          );
        }
      }
      return verified;
    } catch (error) {
      if (!(error instanceof SignatureError) || error.code === 'signature_replayed') throw error;
      failures.push({ label, code: error.code, message: error.message });
    }
  }
  const first = failures[0]!;
  throw new SignatureError(
    first.code,
    labels.length === 1 ? first.message : `no signature verified: ${first.label}: ${first.message}`,
    { failures },
  );
}

/** Check-and-record `first`, then record `others` — in one call when the guard can batch (one store transaction). */
async function recordSignatures(
  guard: ReplayGuard,
  first: ReplayEntry,
  others: ReplayEntry[],
  now: number,
): Promise<boolean> {
  if (guard.checkAndRecordAll !== undefined) return guard.checkAndRecordAll(first, others, now);
  if (!(await guard.checkAndRecord(first.id, first.expiresAtSeconds, now))) return false;
  for (const o of others) await guard.checkAndRecord(o.id, o.expiresAtSeconds, now);
  return true;
}

function tryParseLabel(
  label: string,
  input: Item | InnerList | undefined,
  signature: Item | InnerList | undefined,
): ParsedSignature | undefined {
  try {
    return parseLabel(label, input, signature);
  } catch {
    return undefined;
  }
}

function fail(code: SignatureErrorCode, message: string): SignatureError {
  return new SignatureError(code, message);
}

async function verifyLabel(
  view: MessageView,
  sig: ParsedSignature,
  options: VerifyOptions,
  required: readonly ComponentId[],
  now: number,
  skew: number,
  maxAge: number,
): Promise<VerifiedSignature> {
  const { label, params } = sig;
  if (params.alg !== undefined && params.alg !== ECDSA_P256_SHA256) {
    throw fail(
      'algorithm_unsupported',
      `signature ${label} uses alg ${params.alg}; only ${ECDSA_P256_SHA256} is accepted`,
    );
  }
  const covered = new Set(sig.components.map((id) => id.identity));
  const missing = required.filter((id) => !covered.has(id.identity)).map((id) => id.serialized);
  if (missing.length > 0) {
    throw fail('components_missing', `signature ${label} does not cover ${missing.join(' ')}`);
  }
  if (params.created === undefined && options.requireCreated === true) {
    throw fail(
      'signature_invalid',
      `signature ${label} has no created parameter; it is required (it bounds the replay window)`,
    );
  }
  if (params.created !== undefined) {
    if (params.created > now + skew)
      throw fail('signature_expired', `signature ${label} was created in the future`);
    if (params.created < now - maxAge - skew)
      throw fail('signature_expired', `signature ${label} is older than ${maxAge} s`);
  }
  if (params.expires !== undefined) {
    if (params.created !== undefined && params.expires < params.created) {
      throw fail('signature_invalid', `signature ${label} expires before it was created`);
    }
    if (params.expires < now - skew) throw fail('signature_expired', `signature ${label} has expired`);
  }
  const keyid = params.keyid;
  if (keyid === undefined) throw fail('signature_invalid', `signature ${label} has no keyid`);
  const key = await options.resolveKey(keyid);
  if (key === undefined || key === null)
    throw fail('key_not_found', `no key for keyid ${JSON.stringify(keyid)}`);
  if (key.type === 'secret' || !isP256Key(key)) {
    throw fail('algorithm_unsupported', `key ${JSON.stringify(keyid)} is not a P-256 key`);
  }
  const base = buildBase(view, sig.components, sig.sfParams);
  if (sig.components.some((id) => id.name === 'content-digest' && id.params.size === 0)) {
    verifyContentDigest(view.field('content-digest'), view.message.body ?? EMPTY_BODY);
  }
  if (sig.signature.length !== 64) {
    throw fail(
      'signature_invalid',
      `signature ${label} is ${sig.signature.length} bytes; ES256 needs 64 raw r‖s bytes (not DER)`,
    );
  }
  const ok = cryptoVerify(
    'sha256',
    Buffer.from(base, 'latin1'),
    { key, dsaEncoding: 'ieee-p1363' },
    sig.signature,
  );
  if (!ok) throw fail('signature_invalid', `signature ${label} does not verify`);
  return {
    label,
    keyid,
    key,
    components: sig.components.map((id) => id.serialized),
    params,
  };
}

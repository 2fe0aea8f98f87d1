/**
 * RFC 9421 §2: the signature base — component identifiers (derived components and fields, with
 * their `;sf`, `;key`, `;bs`, `;req` and `;tr` parameters), the view of a message they are read
 * from, and the base string both signing and verification hash. Pure: no keys, no clock.
 */
import {
  isInnerList,
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
import { SignatureError } from './signature-error.ts';

/**
 * An HTTP request or response as plain data.
 * - request: `method` and `url` (full absolute URL as the client used it: scheme, Host/authority,
 *   raw path and query: a proxy that rewrites it breaks `@authority` and `@path`), no `status`.
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

// ---------------------------------------------------------------------------------------------
// Component identifiers

export interface ComponentId {
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

export function invalid(message: string, cause?: unknown): SignatureError {
  return new SignatureError('signature_invalid', message, cause === undefined ? {} : { cause });
}

const COMPONENT_CACHE_LIMIT = 512;

/** Parameterless identifiers by name (the common case: `"@method"`, `"content-digest"`); bounded. */
const plainComponents = new Map<string, ComponentId>();

/**
 * The validated identifier of a received or given component item (RFC 9421 §2).
 * @throws SignatureError `signature_invalid` for an unknown derived component, an upper-case or
 *   invalid field name, or a parameter not valid on it
 */
export function toComponentId(item: Item): ComponentId {
  const [name, params] = item;
  if (params.size === 0 && typeof name === 'string') {
    const hit = plainComponents.get(name);
    if (hit !== undefined) return hit;
    const id = checkComponentId(item);
    if (plainComponents.size >= COMPONENT_CACHE_LIMIT) plainComponents.clear();
    plainComponents.set(name, id);
    return id;
  }
  return checkComponentId(item);
}

function checkComponentId(item: Item): ComponentId {
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

export function parseComponentSpecs(specs: readonly string[]): ComponentId[] {
  const ids = specs.map(parseComponentSpec);
  assertNoDuplicates(ids);
  return ids;
}

export function assertNoDuplicates(ids: readonly ComponentId[]): void {
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
export class MessageView {
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
export function buildBase(
  view: MessageView,
  components: readonly ComponentId[],
  sigParams: Parameters,
): string {
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

export function toSfParameters(params: SignatureParameters): Parameters {
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

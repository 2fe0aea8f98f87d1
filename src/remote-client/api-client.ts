/**
 * ApiClient: the HTTP client of a running `solid serve`, used by the remote CLI (src/transports/cli/remote-target.ts)
 * and the MCP bridge (mcp-bridge.ts). Typed calls for the agent API and the remote-mode routes:
 *
 *   manifest(surface, etag?)   GET /api/v1/agent/verbs?surface=  (If-None-Match → notModified)
 *   verb(name)                 GET /api/v1/agent/verbs/{name}
 *   hints(etag?)               GET /api/v1/agent/verb-hints
 *   dispatch(verb, args, opts) POST /api/v1/agent/dispatch/{verb}  { args, confirm, typed_phrase,
 *                              nonce } + Idempotency-Key (an RFC 8941 sf-string) + Solid-Surface
 *   whoami(), revokeOwnKey()   GET /api/v1/whoami, POST /api/v1/whoami/revoke-key
 *   startCliLogin(name), pollCliLogin(secret)   POST /api/v1/cli-login, …/poll
 *
 * Time is bounded: connecting (TCP + TLS) `connectTimeoutMs` (default 10 s), a manifest/hints/
 * whoami exchange `readTimeoutMs` (default 10 s), a dispatch `dispatchTimeoutMs` (default 60 s:
 * events.poll may hold a call 30 s).
 *
 * Retries only where a repeat cannot act twice: GETs, and dispatches the caller marks idempotent
 * (a read verb, or any call carrying an idempotency key, which the server deduplicates). They are
 * retried after a failure without an HTTP answer, or a 502/503/504, at most `retries` times
 * (default 2) with `retryDelayMs` × 2^n between tries (default 250 ms).
 *
 * Failures never escape as exceptions from the envelope-answering calls (dispatch, whoami, …):
 * they become an envelope with reason `upstream_unavailable` (HTTP 502, exit 8) whose message says
 * what failed (refused, DNS, TLS, timeout, not a solid server) and, for a write whose request was
 * sent, that it may or may not have run. The manifest calls throw that VerbError instead.
 * An envelope whose reason this process does not know (a business pack's domain reason) is
 * declared with the status the server answered, so its exit code matches embedded mode.
 *
 * Spec: spec/transports.md §remote.
 */
import http from 'node:http';
import https from 'node:https';
import { readFileSync } from 'node:fs';
import { VerbError, isVerbError } from '../runtime/errors.ts';
import type { DispatchOptions } from '../runtime/core.ts';
import { REASONS, ReasonTable, domainReasonTable } from '../spec/reasons.ts';
import type { Envelope, VerbRecord } from '../spec/types.ts';
import { CLIENT_SURFACE_HEADER, type DeclarableSurface } from '../transports/http/client-surface.ts';
import { sendRequest, RequestFailure, type HttpResponse } from './http-request.ts';
import { normalizeBaseUrl } from './remote-url.ts';
import { VERB_HINTS_PATH } from '../runtime/verb-hints.ts';
import { WHOAMI_PATH, REVOKE_KEY_PATH } from '../identity/whoami.ts';
import { CLI_LOGIN_PATH } from '../identity/cli-login-store.ts';

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_READ_TIMEOUT_MS = 10_000;
export const DEFAULT_DISPATCH_TIMEOUT_MS = 60_000;
export const DEFAULT_RETRIES = 2;
export const DEFAULT_RETRY_DELAY_MS = 250;

const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

export interface ApiClientOptions {
  /** Base URL of the server (normalised by remote-url.ts). */
  baseUrl: string;
  /** Bearer key of every call (null: keyless, the sandbox). */
  apiKey?: string | null;
  /** The surface this client projects (Solid-Surface header); default http (no header). */
  surface?: DeclarableSurface;
  connectTimeoutMs?: number;
  readTimeoutMs?: number;
  dispatchTimeoutMs?: number;
  retries?: number;
  retryDelayMs?: number;
  /** Sent as User-Agent, e.g. "solid-cli". */
  client?: string;
}

export type ManifestAnswer =
  { notModified: true; etag: string } | { notModified: false; verbs: unknown[]; etag: string | undefined };
export type HintsAnswer =
  | { notModified: true; etag: string }
  | { notModified: false; hints: Record<string, unknown>; etag: string | undefined };

export interface CallOptions {
  signal?: AbortSignal;
  /** May this request be repeated after a failure (a read, or a write with an idempotency key)? */
  idempotent?: boolean;
}

interface Exchange {
  method: 'GET' | 'POST';
  path: string;
  /** The verb the answer is about (envelopes, messages). */
  verb: string;
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs: number;
  idempotent: boolean;
  signal?: AbortSignal;
  /** Key to send (default the client's). */
  apiKey?: string | null;
}

/** The HTTP client of a remote solid server (see the header). */
export class ApiClient {
  readonly baseUrl: string;
  readonly apiKey: string | null;
  readonly surface: DeclarableSurface;
  readonly #connectTimeoutMs: number;
  readonly #readTimeoutMs: number;
  readonly #dispatchTimeoutMs: number;
  readonly #retries: number;
  readonly #retryDelayMs: number;
  readonly #userAgent: string;
  readonly #agent: http.Agent;

  constructor(options: ApiClientOptions) {
    this.baseUrl = normalizeBaseUrl(options.baseUrl);
    this.apiKey = options.apiKey != null && options.apiKey !== '' ? options.apiKey : null;
    this.surface = options.surface ?? 'http';
    this.#connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.#readTimeoutMs = options.readTimeoutMs ?? DEFAULT_READ_TIMEOUT_MS;
    this.#dispatchTimeoutMs = options.dispatchTimeoutMs ?? DEFAULT_DISPATCH_TIMEOUT_MS;
    this.#retries = options.retries ?? DEFAULT_RETRIES;
    this.#retryDelayMs = options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS;
    this.#userAgent = `${options.client ?? 'solid-remote'}/${VERSION}`;
    const AgentClass = this.baseUrl.startsWith('https:') ? https.Agent : http.Agent;
    this.#agent = new AgentClass({ keepAlive: true, maxSockets: 8 });
  }

  /**
   * The domain reasons this client learned from the server's answers, with the HTTP status the
   * server gave each (so a remote CLI exits with the same code as an embedded one). This client's
   * own table, never the process-global one: a server cannot change what another client or an
   * embedded runtime in the same process answers. At most {@link ApiClient.MAX_LEARNED_REASONS}.
   */
  readonly reasons = new ReasonTable();
  /** Most domain reasons one client learns (a server answering a new name per call stops there). */
  static readonly MAX_LEARNED_REASONS = 256;
  #learned = new Set<string>();

  /** Learn a domain reason this process does not know, with the status the server answered it with. */
  #learnReason(env: Envelope, status: number): void {
    const reason = env.error?.reason;
    if (
      reason === undefined ||
      reason in REASONS ||
      domainReasonTable().has(reason) ||
      !/^[a-z][a-z0-9_]*$/.test(reason) ||
      status < 400 ||
      status > 599
    )
      return;
    if (!this.#learned.has(reason) && this.#learned.size >= ApiClient.MAX_LEARNED_REASONS) return;
    this.#learned.add(reason);
    this.reasons.declare('the remote server', {
      [reason]: { status, summary: `Domain reason answered by the server (HTTP ${status}).` },
    });
  }

  /** Close pooled connections. */
  close(): void {
    this.#agent.destroy();
  }

  /**
   * The manifest of a surface. `etag`: the tag of the copy held; a match answers notModified.
   * @throws VerbError upstream_unavailable, or the server's refusal (e.g. invalid_request)
   */
  async manifest(surface: string, etag?: string, options: CallOptions = {}): Promise<ManifestAnswer> {
    const res = await this.#exchange({
      method: 'GET',
      path: `/api/v1/agent/verbs?surface=${encodeURIComponent(surface)}`,
      verb: 'verbs.list',
      headers: etag !== undefined ? { 'if-none-match': etag } : {},
      timeoutMs: this.#readTimeoutMs,
      idempotent: true,
      signal: options.signal,
    });
    if (res.status === 304) return { notModified: true, etag: etag! };
    const body = this.#json(res, '/api/v1/agent/verbs');
    if (isEnvelope(body)) throw envelopeError(body);
    const verbs = (body as { verbs?: unknown }).verbs;
    if (res.status !== 200 || !Array.isArray(verbs))
      throw notSolid(this.baseUrl, res, 'the manifest has no "verbs" list');
    return { notModified: false, verbs, etag: headerOf(res, 'etag') };
  }

  /** One VerbRecord, or the server's unknown_verb envelope. @throws VerbError upstream_unavailable */
  async verb(name: string): Promise<{ record: VerbRecord } | { envelope: Envelope }> {
    const res = await this.#exchange({
      method: 'GET',
      path: `/api/v1/agent/verbs/${encodeURIComponent(name)}`,
      verb: name,
      timeoutMs: this.#readTimeoutMs,
      idempotent: true,
    });
    const body = this.#json(res, '/api/v1/agent/verbs/{name}');
    if (isEnvelope(body)) {
      if (isMissingRoute(body)) throw notSolid(this.baseUrl, res, 'it has no /api/v1/agent/verbs route');
      return { envelope: body };
    }
    return { record: body as VerbRecord };
  }

  /** Every verb's hints (verb-hints.ts). @throws VerbError upstream_unavailable (also: an older server without the route) */
  async hints(etag?: string): Promise<HintsAnswer> {
    const res = await this.#exchange({
      method: 'GET',
      path: VERB_HINTS_PATH,
      verb: 'verb-hints',
      headers: etag !== undefined ? { 'if-none-match': etag } : {},
      timeoutMs: this.#readTimeoutMs,
      idempotent: true,
    });
    if (res.status === 304) return { notModified: true, etag: etag! };
    const body = this.#json(res, VERB_HINTS_PATH);
    const hints = (body as { hints?: unknown }).hints;
    if (res.status !== 200 || hints === null || typeof hints !== 'object' || Array.isArray(hints))
      throw notSolid(this.baseUrl, res, `it does not serve ${VERB_HINTS_PATH}`);
    return { notModified: false, hints: hints as Record<string, unknown>, etag: headerOf(res, 'etag') };
  }

  /**
   * Dispatch one verb; always resolves to an envelope (see the header for failures).
   * `options.idempotency_key` travels as the Idempotency-Key header.
   */
  async dispatch(
    verb: string,
    args: unknown,
    options: DispatchOptions = {},
    call: CallOptions & { apiKey?: string | null; surface?: DeclarableSurface } = {},
  ): Promise<Envelope> {
    const body: Record<string, unknown> = {};
    if (args !== undefined) body.args = args;
    if (options.confirm !== undefined) body.confirm = options.confirm;
    if (options.typed_phrase !== undefined) body.typed_phrase = options.typed_phrase;
    if (options.nonce !== undefined) body.nonce = options.nonce;
    if (options.plain_retry === true) body.plain_retry = true;
    const headers: Record<string, string> = {};
    const surface = call.surface ?? this.surface;
    if (surface !== 'http') headers[CLIENT_SURFACE_HEADER] = surface;
    if (options.idempotency_key !== undefined) {
      const key = sfString(options.idempotency_key);
      if (key === undefined) {
        return {
          ok: false,
          verb,
          error: {
            reason: 'idempotency_key_invalid',
            message: 'The idempotency key must be 1 to 255 printable ASCII characters.',
            hint: 'Use a UUID or another printable token, e.g. --idempotency-key 5f0c…',
          },
        };
      }
      headers['idempotency-key'] = key;
    }
    return this.#envelopeCall(verb, {
      method: 'POST',
      path: `/api/v1/agent/dispatch/${encodeURIComponent(verb)}`,
      verb,
      body,
      headers,
      timeoutMs: this.#dispatchTimeoutMs,
      idempotent: call.idempotent === true || options.idempotency_key !== undefined,
      signal: call.signal,
      ...(call.apiKey !== undefined ? { apiKey: call.apiKey } : {}),
    });
  }

  /** Who the client's key is (whoami.ts). */
  whoami(apiKey?: string | null): Promise<Envelope> {
    return this.#envelopeCall('whoami', {
      method: 'GET',
      path: WHOAMI_PATH,
      verb: 'whoami',
      timeoutMs: this.#readTimeoutMs,
      idempotent: true,
      ...(apiKey !== undefined ? { apiKey } : {}),
    });
  }

  /** Revoke the client's own key on the server (`solid logout --revoke`). */
  revokeOwnKey(): Promise<Envelope> {
    return this.#envelopeCall('whoami.revoke_key', {
      method: 'POST',
      path: REVOKE_KEY_PATH,
      verb: 'whoami.revoke_key',
      timeoutMs: this.#readTimeoutMs,
      idempotent: true,
    });
  }

  /** Start a browser login (cli-login-routes.ts). */
  startCliLogin(clientName: string): Promise<Envelope> {
    return this.#envelopeCall('cli_login', {
      method: 'POST',
      path: CLI_LOGIN_PATH,
      verb: 'cli_login',
      body: { client_name: clientName },
      timeoutMs: this.#readTimeoutMs,
      idempotent: false,
      apiKey: null,
    });
  }

  /** Poll a browser login with its secret. Collecting the key is single use: never retried. */
  pollCliLogin(pollSecret: string, signal?: AbortSignal): Promise<Envelope> {
    return this.#envelopeCall('cli_login', {
      method: 'POST',
      path: `${CLI_LOGIN_PATH}/poll`,
      verb: 'cli_login',
      body: { poll_secret: pollSecret },
      timeoutMs: this.#readTimeoutMs,
      idempotent: false,
      apiKey: null,
      signal,
    });
  }

  async #envelopeCall(verb: string, x: Exchange): Promise<Envelope> {
    let res: HttpResponse;
    try {
      res = await this.#exchange(x);
    } catch (err) {
      if (isVerbError(err)) return { ok: false, verb, error: err.toEnvelopeError() };
      throw err;
    }
    let body: unknown;
    try {
      body = this.#json(res, x.path.split('?')[0]!);
    } catch (err) {
      if (isVerbError(err)) return { ok: false, verb, error: err.toEnvelopeError() };
      throw err;
    }
    if (!isEnvelope(body))
      return {
        ok: false,
        verb,
        error: notSolid(this.baseUrl, res, 'the answer is not an envelope').toEnvelopeError(),
      };
    if (isMissingRoute(body)) {
      return {
        ok: false,
        verb,
        error: notSolid(
          this.baseUrl,
          res,
          `it has no ${x.method} ${x.path.split('?')[0]} route (an older solid, or a path prefix missing from the URL)`,
        ).toEnvelopeError(),
      };
    }
    this.#learnReason(body, res.status);
    return body;
  }

  /** One exchange with retries (see the header). @throws VerbError upstream_unavailable */
  async #exchange(x: Exchange): Promise<HttpResponse> {
    const url = new URL(`${this.baseUrl}${x.path}`);
    const apiKey = x.apiKey !== undefined ? x.apiKey : this.apiKey;
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': this.#userAgent,
      ...(x.headers ?? {}),
    };
    if (apiKey !== null && apiKey !== '') headers.authorization = `Bearer ${apiKey}`;
    const body = x.body === undefined ? undefined : JSON.stringify(x.body);
    if (body !== undefined) headers['content-type'] = 'application/json';
    for (let attempt = 0; ; attempt++) {
      const last = !x.idempotent || attempt >= this.#retries;
      try {
        const res = await sendRequest({
          method: x.method,
          url,
          headers,
          body,
          connectTimeoutMs: this.#connectTimeoutMs,
          timeoutMs: x.timeoutMs,
          signal: x.signal,
          agent: this.#agent,
        });
        if (!last && (res.status === 502 || res.status === 503 || res.status === 504)) {
          await delay(this.#retryDelayMs * 2 ** attempt, x.signal);
          continue;
        }
        return res;
      } catch (err) {
        if (!(err instanceof RequestFailure)) throw err;
        if (err.kind === 'aborted')
          throw new VerbError('cancelled', 'The call was cancelled before the server answered.', {
            hint: 'Nothing more will be sent; check the trail if it was a write.',
          });
        if (last || err.kind === 'tls' || err.kind === 'dns' || err.kind === 'too_large')
          throw unreachable(this.baseUrl, x, err);
        await delay(this.#retryDelayMs * 2 ** attempt, x.signal);
      }
    }
  }

  #json(res: HttpResponse, route: string): unknown {
    const type = headerOf(res, 'content-type') ?? '';
    if (!/json/i.test(type))
      throw notSolid(
        this.baseUrl,
        res,
        `${route} answered ${type === '' ? 'no content type' : type.split(';')[0]}, not JSON`,
      );
    try {
      return JSON.parse(res.body) as unknown;
    } catch {
      throw notSolid(this.baseUrl, res, `${route} answered malformed JSON`);
    }
  }
}

function headerOf(res: HttpResponse, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

function isEnvelope(x: unknown): x is Envelope {
  return (
    x !== null &&
    typeof x === 'object' &&
    !Array.isArray(x) &&
    typeof (x as Envelope).ok === 'boolean' &&
    typeof (x as Envelope).verb === 'string'
  );
}

/** The HTTP server's 404 for a route it does not have (not a verb's own not_found). */
function isMissingRoute(env: Envelope): boolean {
  return !env.ok && env.verb === '' && env.error?.reason === 'not_found';
}

function envelopeError(env: Envelope): VerbError {
  const e = env.error ?? { reason: 'internal_error', message: 'The server refused the request.' };
  return new VerbError(e.reason, e.message, {
    ...(e.hint !== undefined ? { hint: e.hint } : {}),
    ...(e.details !== undefined ? { details: e.details } : {}),
  });
}

/** An RFC 8941 sf-string for a key of printable ASCII (≤ 255), else undefined. */
function sfString(key: string): string | undefined {
  if (key.length < 1 || key.length > 255 || !/^[\x20-\x7e]+$/.test(key)) return undefined;
  return `"${key.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}

const URL_HINT =
  'Check --url / SOLID_API_URL: the base URL `solid serve` prints, e.g. http://127.0.0.1:4400.';

/** A request that got no HTTP answer, explained. */
function unreachable(base: string, x: Exchange, err: RequestFailure): VerbError {
  const what: Record<string, string> = {
    dns: `the host name of ${base} does not resolve`,
    refused: `nothing accepts connections at ${base} (connection refused): is \`solid serve\` running there?`,
    connect_timeout: `${base} did not accept a connection in time (${err.message})`,
    tls: `the TLS handshake with ${base} failed (${err.code ?? err.message})${base.startsWith('https:') ? ': is the server speaking plain http on that port? Try http:// — or its certificate is not trusted' : ''}`,
    reset: `the connection to ${base} dropped before a complete answer (${err.code ?? err.message})`,
    timeout: `${base} did not answer in time (${err.message})`,
    too_large: `the answer from ${base} was too large (${err.message})`,
    protocol: `${base} does not speak HTTP (${err.code ?? err.message})`,
    aborted: 'the call was cancelled',
  };
  const unknownOutcome = x.method === 'POST' && err.sent && (err.kind === 'reset' || err.kind === 'timeout');
  const said = what[err.kind] ?? err.message;
  const message = `The solid server could not be reached: ${said}${/[.?!]$/.test(said) ? '' : '.'}${unknownOutcome ? ' The request was sent, so it may or may not have run.' : ''}`;
  const hint = unknownOutcome
    ? 'Look at `solid audit trail` (or the dashboard) before repeating a write; repeat with --idempotency-key to make a retry safe.'
    : err.kind === 'tls' || err.kind === 'dns' || err.kind === 'protocol'
      ? URL_HINT
      : `Retry when the server is back. ${URL_HINT}`;
  return new VerbError('upstream_unavailable', message, {
    hint,
    details: {
      url: base,
      failure: err.kind,
      ...(err.code !== undefined ? { code: err.code } : {}),
      ...(unknownOutcome ? { may_have_run: true } : {}),
    },
  });
}

/** An HTTP answer that is not the solid API. */
function notSolid(base: string, res: HttpResponse, why: string): VerbError {
  return new VerbError(
    'upstream_unavailable',
    `${base} does not look like a solid server: HTTP ${res.status}, ${why}.`,
    {
      hint: URL_HINT,
      details: { url: base, status: res.status },
    },
  );
}

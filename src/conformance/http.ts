/**
 * The kit's HTTP client: every request counted against the run's budget (a number of requests and
 * a deadline), each with its own timeout and a size limit (after decompression), never following
 * redirects, and described for evidence without its credentials. Spec: spec/conformance.md §safety.
 */
import { BudgetExhausted, ConnectionFailed, RequestTimeout, ResponseTooLarge } from './outcome.ts';

/** The largest answer the kit reads (bytes, after any decompression) unless the run says otherwise. */
export const DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

/**
 * Read a fetch Response's body, at most `maxBytes` bytes (counted after decompression, so a
 * compression bomb stops at the limit too). Throws ResponseTooLarge (the body is cancelled) past
 * the limit, RequestTimeout when the body does not finish before the request's signal fires.
 */
export async function readBounded(
  res: Response,
  maxBytes: number,
  request: string,
  ms: number,
): Promise<Uint8Array> {
  const declared = Number(res.headers.get('content-length'));
  if (res.body === null) return new Uint8Array(0);
  const tooLarge = () =>
    new ResponseTooLarge(
      `the answer is larger than the run's limit of ${maxBytes} bytes (HTTP ${res.status}); it was not read further`,
      request,
    );
  if (Number.isFinite(declared) && declared > maxBytes && res.headers.get('content-encoding') === null) {
    await res.body.cancel().catch(() => {});
    throw tooLarge();
  }
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => {});
        throw tooLarge();
      }
      chunks.push(value);
    }
  } catch (err) {
    if (err instanceof ResponseTooLarge) throw err;
    const e = err as Error;
    if (e.name === 'TimeoutError' || e.name === 'AbortError')
      throw new RequestTimeout(`the answer did not finish within ${ms} ms`, request);
    throw new ConnectionFailed(`the answer broke off (${causeOf(e)})`, request, causeOf(e));
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** The low-level cause of a fetch failure (`ECONNREFUSED`, `ENOTFOUND`, `bad port`, …). */
export function causeOf(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string; cause?: unknown } };
  const c = e.cause;
  if (c !== undefined && c !== null) {
    if (typeof c.code === 'string') return c.code;
    if (typeof c.message === 'string' && c.message !== '') return c.message;
  }
  return e.message;
}

/** The run's limits, shared by HTTP and MCP. */
export class Budget {
  #count = 0;
  readonly deadline: number;
  constructor(
    readonly maxRequests: number,
    budgetMs: number,
    readonly timeoutMs: number,
  ) {
    this.deadline = Date.now() + budgetMs;
  }
  get count(): number {
    return this.#count;
  }
  /** Why the budget is used up, or undefined. */
  exhausted(): string | undefined {
    if (this.#count >= this.maxRequests) return `the run's limit of ${this.maxRequests} requests was reached`;
    if (Date.now() >= this.deadline) return `the run's time budget ran out`;
    return undefined;
  }
  /** Count one request; throws BudgetExhausted when none is left. Returns the ms it may take. */
  take(): number {
    const why = this.exhausted();
    if (why !== undefined) throw new BudgetExhausted(why);
    this.#count++;
    return Math.max(1, Math.min(this.timeoutMs, this.deadline - Date.now()));
  }
}

export interface RequestOptions {
  /** A JSON value sent as application/json. */
  json?: unknown;
  /** A raw body (with `contentType`). */
  raw?: string | Uint8Array;
  contentType?: string;
  headers?: Record<string, string>;
  /** Send the API key (default: when the run has one). */
  key?: boolean;
  /** Override the Authorization header (e.g. a bad key); never recorded. */
  authorization?: string;
}

/** An answer, read whole. */
export interface HttpAnswer {
  status: number;
  headers: Headers;
  bytes: Uint8Array;
  text: string;
  /** The body parsed as JSON, or undefined. */
  json: unknown;
  /** The request as evidence shows it. */
  request: string;
}

const BODY_IN_EVIDENCE = 400;

/**
 * Requests to the server under test (paths relative to its base URL). Throws BudgetExhausted when
 * the run has no request left, RequestTimeout when no answer came within the per-request timeout
 * (ms), and an Error naming the request when the connection failed.
 */
export class KitHttp {
  constructor(
    readonly base: string,
    readonly budget: Budget,
    readonly apiKey: string | undefined,
    readonly maxResponseBytes: number = DEFAULT_MAX_RESPONSE_BYTES,
  ) {}

  /** An absolute URL for a path of the server. */
  url(path: string): string {
    return `${this.base}${path}`;
  }

  /**
   * One request, its answer read whole (bytes, text, JSON when it parses) up to the run's size
   * limit. Asks for no compression (`accept-encoding: identity`); an answer compressed anyway is
   * still bounded after decompression. Throws ConnectionFailed, RequestTimeout, ResponseTooLarge.
   */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<HttpAnswer> {
    const headers: Record<string, string> = {
      accept: 'application/json',
      'accept-encoding': 'identity',
      ...(options.headers ?? {}),
    };
    let body: string | Uint8Array | undefined;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['content-type'] = 'application/json';
    } else if (options.raw !== undefined) {
      body = options.raw;
      if (options.contentType !== undefined) headers['content-type'] = options.contentType;
    }
    if (options.authorization !== undefined) headers.authorization = options.authorization;
    else if (options.key !== false && this.apiKey !== undefined)
      headers.authorization = `Bearer ${this.apiKey}`;
    const shown = describe(method, path, body, headers);
    const ms = this.budget.take();
    let res: Response;
    try {
      res = await fetch(this.url(path), {
        method,
        headers,
        ...(body !== undefined ? { body: typeof body === 'string' ? body : new Uint8Array(body) } : {}),
        redirect: 'manual',
        signal: AbortSignal.timeout(ms),
      });
    } catch (err) {
      const e = err as Error;
      if (e.name === 'TimeoutError' || e.name === 'AbortError')
        throw new RequestTimeout(`no answer within ${ms} ms`, shown);
      const code = causeOf(e);
      throw new ConnectionFailed(`the connection failed (${code})`, shown, code);
    }
    const bytes = await readBounded(res, this.maxResponseBytes, shown, ms);
    const text = new TextDecoder().decode(bytes);
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, bytes, text, json, request: shown };
  }

  get(path: string, options: RequestOptions = {}): Promise<HttpAnswer> {
    return this.request('GET', path, options);
  }

  post(path: string, options: RequestOptions = {}): Promise<HttpAnswer> {
    return this.request('POST', path, options);
  }
}

/** `METHOD /path [headers that matter] body…`, without credentials. */
function describe(
  method: string,
  path: string,
  body: string | Uint8Array | undefined,
  headers: Record<string, string>,
): string {
  const parts = [method, path];
  for (const h of ['idempotency-key', 'if-none-match'])
    if (headers[h] !== undefined) parts.push(`${h}: ${headers[h]}`);
  if (headers['content-type'] !== undefined && headers['content-type'] !== 'application/json')
    parts.push(`content-type: ${headers['content-type']}`);
  if (headers.authorization !== undefined) parts.push('(with a key)');
  if (body !== undefined) {
    const text = typeof body === 'string' ? body : `<${body.length} bytes>`;
    parts.push(text.length > BODY_IN_EVIDENCE ? `${text.slice(0, BODY_IN_EVIDENCE)}…` : text);
  }
  return parts.join(' ');
}

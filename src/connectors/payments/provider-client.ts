/**
 * The HTTP client of a payments provider in the style of Stripe: `POST /v1/charges` and
 * `POST /v1/refunds` with a bearer key and an `Idempotency-Key` header (the same key → the same
 * answer, never a second charge). Every call has a timeout.
 *
 * Outcomes: `{ ok: true, body }` for a 2xx; `{ ok: false, permanent: true, code }` for a 4xx the
 * provider will answer again identically (a declined card, an already refunded charge); a
 * thrown {@link ProviderUnavailable} for what a retry may cure (a timeout, a reset connection,
 * 409 request in progress, 429, 5xx, and 401: a key the owner may rotate). The outbox retries
 * the thrown ones with backoff and dead-letters them after its last attempt.
 *
 * Spec: spec/vault.md §connectors.
 */

/** A call that may succeed when retried (the outbox retries it). Its message never holds the key. */
export class ProviderUnavailable extends Error {
  override readonly name = 'ProviderUnavailable';
}

/** One provider call's outcome. */
export type ProviderAnswer =
  | { ok: true; status: number; body: Record<string, unknown>; replayed: boolean }
  | { ok: false; permanent: true; status: number; code: string; message: string };

/** Default timeout of one provider call (ms); the outbox's attempt deadline also aborts it. */
export const PROVIDER_TIMEOUT_MS = 5000;

/**
 * POST `body` as JSON to `baseUrl + path` with `Authorization: Bearer <apiKey>` and
 * `Idempotency-Key: <idempotencyKey>`, aborted by `signal` or after `timeoutMs`.
 * @throws ProviderUnavailable (see the header)
 */
export async function postToProvider(
  baseUrl: string,
  path: string,
  apiKey: string,
  idempotencyKey: string,
  body: Record<string, unknown>,
  options: { signal?: AbortSignal; timeoutMs?: number; fetchImpl?: typeof fetch } = {},
): Promise<ProviderAnswer> {
  const timeoutMs = options.timeoutMs ?? PROVIDER_TIMEOUT_MS;
  const signals = [AbortSignal.timeout(timeoutMs)];
  if (options.signal !== undefined) signals.push(options.signal);
  let res: Response;
  try {
    res = await (options.fetchImpl ?? fetch)(new URL(path, baseUrl), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'idempotency-key': idempotencyKey,
        'content-type': 'application/json',
      },
      body: JSON.stringify(body),
      signal: AbortSignal.any(signals),
      redirect: 'error',
    });
  } catch (err) {
    const e = err as Error;
    throw new ProviderUnavailable(
      e.name === 'TimeoutError' || e.name === 'AbortError'
        ? `the provider did not answer ${path} within ${timeoutMs} ms`
        : `the provider could not be reached for ${path}: ${e.message}`,
    );
  }
  let parsed: Record<string, unknown> = {};
  try {
    const text = await res.text();
    parsed = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  } catch {
    if (res.ok) throw new ProviderUnavailable(`the provider answered ${path} with a body that is not JSON`);
  }
  if (res.ok)
    return {
      ok: true,
      status: res.status,
      body: parsed,
      replayed: res.headers.get('idempotent-replayed') === 'true',
    };
  const error = (parsed.error ?? {}) as { code?: unknown; message?: unknown };
  const code = typeof error.code === 'string' ? error.code : `http_${res.status}`;
  if (
    res.status === 401 ||
    res.status === 408 ||
    res.status === 409 ||
    res.status === 429 ||
    res.status >= 500
  )
    throw new ProviderUnavailable(`the provider answered ${path} with ${res.status} (${code})`);
  return {
    ok: false,
    permanent: true,
    status: res.status,
    code,
    message: typeof error.message === 'string' ? error.message.slice(0, 300) : `HTTP ${res.status}`,
  };
}

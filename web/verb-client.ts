/**
 * Browser client of the verb-call endpoints, shared by /webmcp.js and the dashboard:
 *   target { kind: 'webmcp', surface }  POST /api/v1/webmcp/execute/{tool}   body { input, surface, … }
 *   target { kind: 'dashboard' }        POST /api/v1/dashboard/dispatch/{verb} body { input, … }
 *
 *   execute(tool, target, call, signal)  one POST with the session's CSRF token; resolves to the
 *                                    envelope, never throws (a network failure becomes
 *                                    `{ ok: false, error: { reason: 'network_error' } }`)
 *   callWithConsent(call, signal)    execute, and while the answer is dispatch_pending, ask the
 *                                    human in the consent dialog, then confirm with the nonce (and
 *                                    the typed phrase); a phrase mismatch re-opens the dialog with
 *                                    the error; declining ends with `declined: true`
 *
 * The CSRF token comes from `setCsrfToken` (login), else the `solid_csrf` cookie, else
 * `GET /api/v1/session`; a csrf_failed answer refreshes it once and retries.
 * Spec: spec/transports.md §webmcp-execute, §webmcp-consent.
 */
import { askConsent } from './consent-dialog.ts';
import type { ConsentRequest, Envelope } from '../src/spec/types.ts';

/** Where a call goes (see the header). */
export type CallTarget = { kind: 'webmcp'; surface: string } | { kind: 'dashboard' };

/** The call members of a request body (the surface is added for WebMCP targets). */
export interface CallPayload {
  input: unknown;
  confirm?: boolean;
  nonce?: string;
  typed_phrase?: string;
}

let csrfToken: string | undefined;

/** Remember the CSRF token of the current session (from the login answer); undefined forgets it. */
export function setCsrfToken(token: string | undefined): void {
  csrfToken = token;
}

function csrfFromCookie(): string | undefined {
  for (const part of document.cookie.split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === 'solid_csrf') {
      const value = decodeURIComponent(rest.join('='));
      return value === '' ? undefined : value;
    }
  }
  return undefined;
}

/** Ask the server for the session's CSRF token; undefined when there is no session. */
export async function fetchCsrfToken(): Promise<string | undefined> {
  try {
    const res = await fetch('/api/v1/session', { credentials: 'same-origin', cache: 'no-store' });
    if (!res.ok) return undefined;
    const env = (await res.json()) as Envelope;
    const token = env.result?.csrf_token;
    csrfToken = typeof token === 'string' ? token : undefined;
    return csrfToken;
  } catch {
    return undefined;
  }
}

function networkError(verb: string, err: unknown): Envelope {
  const aborted = err instanceof DOMException && err.name === 'AbortError';
  return {
    ok: false,
    verb,
    error: aborted
      ? { reason: 'cancelled', message: 'The call was cancelled.' }
      : {
          reason: 'network_error',
          message: `The server could not be reached: ${String((err as Error)?.message ?? err)}`,
          hint: 'Check the connection and retry.',
        },
  };
}

async function post(
  tool: string,
  target: CallTarget,
  payload: CallPayload,
  token: string | undefined,
  signal?: AbortSignal,
): Promise<Envelope> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== undefined) headers['x-csrf-token'] = token;
  const url =
    target.kind === 'webmcp'
      ? `/api/v1/webmcp/execute/${encodeURIComponent(tool)}`
      : `/api/v1/dashboard/dispatch/${encodeURIComponent(tool)}`;
  const body = target.kind === 'webmcp' ? { ...payload, surface: target.surface } : payload;
  const res = await fetch(url, {
    method: 'POST',
    credentials: 'same-origin',
    cache: 'no-store',
    headers,
    body: JSON.stringify(body),
    ...(signal !== undefined ? { signal } : {}),
  });
  const text = await res.text();
  try {
    return JSON.parse(text) as Envelope;
  } catch {
    return {
      ok: false,
      verb: tool,
      error: { reason: 'internal_error', message: `Unexpected answer (HTTP ${res.status}).` },
    };
  }
}

/** POST one call; resolves to the envelope (see the header). */
export async function execute(
  tool: string,
  target: CallTarget,
  payload: CallPayload,
  signal?: AbortSignal,
): Promise<Envelope> {
  try {
    let env = await post(tool, target, payload, csrfToken ?? csrfFromCookie(), signal);
    if (!env.ok && env.error?.reason === 'csrf_failed') {
      const fresh = await fetchCsrfToken();
      if (fresh !== undefined) env = await post(tool, target, payload, fresh, signal);
    }
    return env;
  } catch (err) {
    return networkError(tool, err);
  }
}

/** A verb call through the consent loop. */
export interface ConsentCall {
  /** Tool (or verb) name. */
  tool: string;
  /** Shown as the dialog's title. */
  title: string;
  input: unknown;
  target: CallTarget;
}

/** How a consent-looped call ended. */
export interface ConsentOutcome {
  envelope: Envelope;
  /** The human declined (Cancel, Escape) or the call was aborted while the dialog was open. */
  declined: boolean;
}

const MAX_ROUNDS = 5;

/** Execute with the human-consent loop (see the header). Never throws. */
export async function callWithConsent(call: ConsentCall, signal?: AbortSignal): Promise<ConsentOutcome> {
  let env = await execute(call.tool, call.target, { input: call.input }, signal);
  let error: string | undefined;
  for (
    let round = 0;
    round < MAX_ROUNDS && !env.ok && env.error?.reason === 'dispatch_pending' && env.consent !== undefined;
    round++
  ) {
    const consent: ConsentRequest = env.consent;
    const answer = await askConsent(
      { title: call.title, consent, ...(error !== undefined ? { error } : {}) },
      signal,
    );
    if (!answer.confirmed) return { envelope: env, declined: true };
    const confirmation: CallPayload = { input: call.input, confirm: true, nonce: consent.nonce };
    if (consent.gate === 'typed_phrase') confirmation.typed_phrase = answer.phrase ?? '';
    const next = await execute(call.tool, call.target, confirmation, signal);
    if (!next.ok && next.error?.reason === 'phrase_mismatch') {
      error = `${next.error.message} Type exactly: ${consent.typed_phrase ?? ''}`;
      continue;
    }
    error = undefined;
    env = next;
  }
  return { envelope: env, declined: false };
}

/**
 * API-key authentication: the step that turns the raw key a transport read (an `Authorization:
 * Bearer sk_solid_…` header, SOLID_API_KEY, `--api-key`) into the principal of its tenant
 * (`rt.tenants.authenticate`), and a bad key into the audited `auth_invalid` refusal (rows under
 * the sandbox tenant, plus the key owner's `api_key.wrong_secret` / `api_key.revoked` row when the
 * key id exists; repeated failures counted into windows, spec/audit.md §auth-failure-windows).
 * The runtime never sees a key: transports hand `rt.dispatch` the caller this module returns.
 * No key (null or '') leaves the caller without a principal: the pipeline then uses the sandbox.
 *
 * Spec: spec/transports.md §auth, spec/audit.md §auth-failures.
 */
import type { Envelope, Principal } from '../spec/types.ts';
import type { Caller, DispatchOptions } from '../runtime/core.ts';
import { VerbError } from '../runtime/errors.ts';
import { StoreError } from '../store/store.ts';
import type { Tenants } from '../runtime/tenants.ts';
import type { RefusalRows } from '../runtime/ledger/write/refusal-rows.ts';

/**
 * The API key of an `Authorization` header, as src/identity resolves it (authenticateKey).
 *   absent                          → null (keyless: sandbox reads, writes get auth_required)
 *   `Bearer <token>`                → the token
 *   anything else (other scheme,
 *   empty token, garbage)           → the raw header value, so the runtime answers auth_invalid
 *                                     and audits the attempt
 */
export function apiKeyOf(header: string | undefined): string | null {
  if (header === undefined) return null;
  const m = /^Bearer +([^\s]+) *$/i.exec(header);
  if (m) return m[1]!;
  return header.trim() === '' ? 'Bearer' : header;
}

/** What key authentication needs of the runtime: the tenants (to check a key) and the refusal rows. */
export interface KeyAuthRuntime {
  readonly tenants: Pick<Tenants, 'authenticate'>;
  recordRefusal(...a: Parameters<RefusalRows['record']>): Promise<Envelope>;
}

/** A runtime a transport dispatches into after authenticating the key here. */
export interface KeyDispatchRuntime extends KeyAuthRuntime {
  dispatch(caller: Caller, verb: string, args?: unknown, options?: DispatchOptions): Promise<Envelope>;
}

/**
 * The caller with the principal of `apiKey`, or the audited auth_invalid envelope of `verb`. A
 * caller that already has a principal, or no key (null, undefined, ''), is returned as is.
 */
export async function authenticateKey(
  rt: KeyAuthRuntime,
  caller: Caller,
  apiKey: string | null | undefined,
  verb: string,
): Promise<Caller | Envelope> {
  if (caller.principal != null || apiKey == null || apiKey === '') return caller;
  try {
    return { ...caller, principal: await rt.tenants.authenticate(apiKey) };
  } catch (err) {
    return authFailure(rt, caller, verb, err);
  }
}

/**
 * Record and answer a failed authentication: auth_invalid unless `err` is already a VerbError
 * (auth_required, key_expired…) or a StoreError (store_unavailable), audited under the sandbox
 * tenant and counted into the auth-failure windows; when the presented key id exists (wrong
 * secret, revoked key) the tenant owning it also gets a row. spec/audit.md §auth-failures
 */
export function authFailure(
  rt: KeyAuthRuntime,
  caller: Caller,
  verb: string,
  err: unknown,
): Promise<Envelope> {
  const e =
    err instanceof VerbError || err instanceof StoreError
      ? err
      : new VerbError('auth_invalid', 'The API key is not valid.');
  return rt.recordRefusal(caller, verb, e, 'auth');
}

/**
 * Authenticate `apiKey` (as authenticateKey), then dispatch `verb` as that caller; a bad key
 * answers the audited auth_invalid (authFailure). One promise chain, no async wrappers: this is
 * every keyed call's path.
 */
export function dispatchWithKey(
  rt: KeyDispatchRuntime,
  caller: Caller,
  apiKey: string | null | undefined,
  verb: string,
  args?: unknown,
  options?: DispatchOptions,
): Promise<Envelope> {
  if (caller.principal != null || apiKey == null || apiKey === '')
    return rt.dispatch(caller, verb, args, options);
  let authed: Promise<Principal>;
  try {
    authed = rt.tenants.authenticate(apiKey);
  } catch (err) {
    return authFailure(rt, caller, verb, err);
  }
  return authed.then(
    (principal) => rt.dispatch({ ...caller, principal }, verb, args, options),
    (err: unknown) => authFailure(rt, caller, verb, err),
  );
}

/**
 * Answer and audit a request a transport refuses before the pipeline (a malformed dispatch body):
 * the key is authenticated as dispatchWithKey would (a bad key is the audited auth_invalid), then
 * `err` is recorded as a refusal of `verb` in the caller's tenant (the sandbox's when keyless).
 */
export async function refuseWithKey(
  rt: KeyAuthRuntime,
  caller: Caller,
  apiKey: string | null | undefined,
  verb: string,
  err: VerbError,
): Promise<Envelope> {
  const authed = await authenticateKey(rt, caller, apiKey, verb);
  return 'ok' in authed ? authed : rt.recordRefusal(authed, verb, err);
}

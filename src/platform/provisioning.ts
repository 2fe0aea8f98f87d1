/**
 * Provisioning for platforms (spec/platform.md): the verbs a platform's backend program calls with
 * its platform credential to create and manage the businesses (tenants) it hosts, and to provision
 * their first people (as enrolment links) and their agents' API keys.
 *
 *   platform.tenants.create  { external_id, name, tier, time_zone? }   idempotent by external_id
 *   platform.tenants.get     { external_id }
 *   platform.tenants.list    { after?, limit? }
 *   platform.tenants.update  { external_id, name?, tier?, time_zone? }
 *   platform.tenants.suspend { external_id, note? }       every credential of the tenant refused
 *   platform.tenants.resume  { external_id }
 *   platform.tenants.export  { external_id, format? }     the audit export (ledger/verify/export.ts)
 *   platform.tenants.delete  { external_id, export_id }   only suspended, after an export of its head
 *   platform.users.invite    { external_id, name, role }  an enrolment link, only during the bootstrap
 *   platform.users.link      { external_id, user_id }     a fresh link, only during the bootstrap
 *   platform.api_keys.create { external_id, role ≤ admin, name?, agent_type?, user_id?, scope? }
 *   platform.api_keys.list   { external_id }
 *   platform.api_keys.revoke { external_id, key_id }
 *
 * Every call answers an envelope `{ ok, verb, result: { data }, secret?, error? }`; every call —
 * completed, refused or failed — leaves a row in the platform log (platform-log.ts), and a change
 * that touches a tenant also leaves a row in that tenant's own chain, in the same transaction
 * (agent_type `platform:<key_id>`). Secrets (a new API key, an enrolment link) are in `secret`,
 * shown once, never logged.
 *
 * What a platform credential can never do (the rule "agents act; humans consent"): approve, type a
 * phrase, change a tenant's consent settings (no verb here takes `settings`), open a human
 * session, act inside a tenant's verbs, make an owner key, or make a link for a person once the
 * tenant's bootstrap is over (someone of the tenant holds a passkey or TOTP): `human_required`.
 * Platform verbs act only on the tenants a platform created (with an external id): the operator's
 * own tenants (`solid init`, the sandbox) are `not_found` to them.
 *
 * This module is the runner (callPlatform: authentication, dispatch, the refusal's log row) and the
 * verb table; the tenant verbs are in provisioning-tenants.ts, the people and key verbs in
 * provisioning-people.ts, their shared context and input checks in provisioning-context.ts.
 *
 * Reasons: auth_invalid, platform_credential_required, invalid_input (with `path`), not_found,
 * role_denied, human_required, tenant_suspended (a deleted tenant), export_required,
 * result_too_large, store_unavailable, internal_error.
 */
import type { Envelope, EnvelopeError } from '../spec/types.ts';
import { reasonInfo } from '../spec/reasons.ts';
import { StoreError } from '../store/store.ts';
import { VerbError } from '../runtime/errors.ts';
import { appendPlatformLog } from './platform-log.ts';
import { authenticatePlatformKey, type PlatformPrincipal } from './platform-keys.ts';
import type { Ctx, Handler, PlatformCallOptions, PlatformRuntime } from './provisioning-context.ts';
import { create, exportTenant, get, list, remove, setStatus, update } from './provisioning-tenants.ts';
import { invite, keyCreate, keyList, keyRevoke, link } from './provisioning-people.ts';

export type { PlatformCallOptions, PlatformRuntime, PlatformTenantView } from './provisioning-context.ts';
export { KEPT_ON_DELETE, PLATFORM_EXPORT_MAX_ROWS } from './provisioning-tenants.ts';
export { PLATFORM_KEY_ROLES } from './provisioning-people.ts';

/** The provisioning verbs by name (spec/platform.md §api). */
export const PLATFORM_VERBS: Readonly<Record<string, Handler>> = {
  'platform.tenants.create': create,
  'platform.tenants.get': get,
  'platform.tenants.list': list,
  'platform.tenants.update': update,
  'platform.tenants.suspend': setStatus('suspended'),
  'platform.tenants.resume': setStatus('active'),
  'platform.tenants.export': exportTenant,
  'platform.tenants.delete': remove,
  'platform.users.invite': invite,
  'platform.users.link': link,
  'platform.api_keys.create': keyCreate,
  'platform.api_keys.list': keyList,
  'platform.api_keys.revoke': keyRevoke,
};

/** Is `name` a provisioning verb? */
export function isPlatformVerb(name: string): boolean {
  return Object.hasOwn(PLATFORM_VERBS, name);
}

function errorOf(err: unknown): EnvelopeError {
  if (err instanceof VerbError) return err.toEnvelopeError();
  if (err instanceof StoreError)
    return {
      reason: 'store_unavailable',
      message: 'The database is unavailable; nothing was written.',
      hint: 'Retry shortly.',
    };
  return {
    reason: 'internal_error',
    message: 'An unexpected error; it was logged.',
    hint: 'Retry; if it persists, tell the operator.',
  };
}

/**
 * Run one provisioning verb for the holder of `credential` (a platform key, `pk_solid_…`).
 * Never throws: every outcome is an envelope, and every outcome is in the platform log (a refusal
 * in its own transaction; a bad credential with the key id when that id exists).
 */
export async function callPlatform(
  rt: PlatformRuntime,
  credential: unknown,
  verb: string,
  args: unknown,
  opts: PlatformCallOptions,
): Promise<Envelope> {
  const now = rt.clock();
  let platform: PlatformPrincipal | undefined;
  const ctx: Ctx = { rt, platform: { key_id: '', name: '' }, now, opts, rows: [] };
  try {
    platform = await authenticatePlatformKey(rt.store, credential);
    ctx.platform = platform;
    const handler = Object.hasOwn(PLATFORM_VERBS, verb) ? PLATFORM_VERBS[verb] : undefined;
    if (handler === undefined)
      throw new VerbError('unknown_verb', `No provisioning verb "${verb.slice(0, 100)}".`, {
        details: { verbs: Object.keys(PLATFORM_VERBS) },
      });
    if (typeof args !== 'object' || args === null || Array.isArray(args))
      throw new VerbError('invalid_input', 'The arguments must be a JSON object.', { path: '' });
    const out = await handler(ctx, args as Record<string, unknown>);
    for (const row of ctx.rows) rt.afterWrite(row);
    const env: Envelope = { ok: true, verb, result: { data: out.data } };
    if (out.secret !== undefined) env.secret = out.secret;
    return env;
  } catch (err) {
    const error = errorOf(err);
    if (error.reason === 'internal_error') rt.logger.error({ err, verb }, 'provisioning failed');
    const info = reasonInfo(error.reason);
    const keyId = platform?.key_id ?? (error.details?.key_id as string | undefined) ?? null;
    try {
      await rt.store.write((tx) =>
        appendPlatformLog(tx, rt.store.engine, {
          key_id: keyId,
          action: verb.slice(0, 200),
          status: info.denial || info.kind === 'auth' ? 'denied' : 'failed',
          reason: error.reason,
          company_id: ctx.company_id ?? null,
          external_id: ctx.external_id ?? null,
          request_data: {},
          now,
        }),
      );
    } catch (logErr) {
      rt.logger.error({ err: logErr, verb }, 'could not write the platform log row of a refusal');
    }
    if (error.reason === 'auth_invalid' && error.details !== undefined) delete error.details;
    return { ok: false, verb, error };
  }
}

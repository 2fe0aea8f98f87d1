/**
 * The audit rows of refusals decided outside the pipeline (a bad key, a missing session, a failed
 * CSRF or Origin check, a malformed body): the caller's row (its tenant, else the sandbox tenant),
 * the key owner's copy when a refused key id exists, and the aggregated row of a closed window of
 * unauthenticated failures (auth-failure-log.ts). The pipeline's own refusals are audited by its
 * `fail` exit; these are the transports'.
 *
 * Spec: spec/audit.md (every denial is a row; §auth-failures, §auth-failure-windows),
 * spec/transports.md §auth.
 */
import type { Logger } from 'pino';
import type { Envelope, Principal } from '../../../spec/types.ts';
import { reasonInfo } from '../../../spec/reasons.ts';
import type { Store } from '../../../store/store.ts';
import { StoreError } from '../../../store/store.ts';
import type { Caller } from '../../core.ts';
import type { KeyAttribution, VerbError } from '../../errors.ts';
import { refuse } from '../../refusals.ts';
import type { Registry } from '../../registry.ts';
import type { AggregatedFailure, AuthFailureLog } from '../../../identity/auth-failure-log.ts';
import { appendAudit, auditEntry, type AuditRow } from './audit.ts';

/** action_type of the row a tenant gets when one of its key ids is presented with a wrong secret, or after revocation. */
export const KEY_REFUSED_ACTIONS = {
  wrong_secret: 'api_key.wrong_secret',
  revoked: 'api_key.revoked',
  expired: 'api_key.expired',
} as const;

/** The owner's row action for a refused key id (revoked, expired, else a wrong secret). */
function keyRefusedAction(k: KeyAttribution): string {
  if (k.revoked) return KEY_REFUSED_ACTIONS.revoked;
  return k.expired === true ? KEY_REFUSED_ACTIONS.expired : KEY_REFUSED_ACTIONS.wrong_secret;
}

/** action_type of the aggregated row of a window of unauthenticated failures (spec/audit.md §auth-failure-windows). */
export const AUTH_FAILURES_ACTION = 'auth.failures';

/** What the refusal rows need of the runtime. */
export interface RefusalRuntime {
  readonly store: Store;
  readonly registry: Registry;
  readonly logger: Logger;
  readonly clock: () => Date;
  readonly authFailures: Pick<AuthFailureLog, 'record'>;
  sandboxPrincipal(): Promise<Principal>;
  afterWrite(row: AuditRow): void;
}

/** Writes the rows of the refusals transports decide (see the module comment). */
export class RefusalRows {
  constructor(private readonly rt: RefusalRuntime) {}

  /**
   * Answer and audit a refusal decided outside the pipeline by a transport (a bad key, a missing
   * session, a failed CSRF or Origin check). The row goes to the caller's tenant when the
   * principal is known, else to the sandbox tenant; a refused key whose key id exists
   * (err.keyAttribution) also leaves an `api_key.wrong_secret` / `api_key.revoked` row in the tenant owning it. A store
   * failure answers store_unavailable.
   * Spec: spec/audit.md (every denial is a row), spec/transports.md §auth.
   */
  async record(
    caller: Caller,
    verb: string,
    err: VerbError | StoreError,
    category = 'transport',
  ): Promise<Envelope> {
    // A tool name (`crm__add_note`) is recorded as its verb's name, so the trail by verb finds it.
    const name = this.rt.registry.verbNameOf(String(verb)).slice(0, 200);
    if (err instanceof StoreError) {
      // The decision needed the database, which is down: not the caller's fault, and nothing to audit into.
      this.rt.logger.error({ err, verb: name }, 'store error while refusing a request');
      return {
        ok: false,
        verb: name,
        error: refuse.storeUnavailable().toEnvelopeError(),
      };
    }
    const env: Envelope = { ok: false, verb: name, error: err.toEnvelopeError() };
    const p = caller.principal ?? null;
    const key = p === null ? err.keyAttribution : undefined;
    const write = () => this.#write(caller, name, err, category, p, key);
    // Unauthenticated failures are counted per window (spec/audit.md §auth-failure-windows).
    const auditId =
      p === null && reasonInfo(err.reason, this.rt.registry.reasons).kind === 'auth'
        ? await this.rt.authFailures.record(
            {
              reason: err.reason,
              address: caller.address ?? null,
              surface: caller.surface,
              category,
              keyAttribution: key,
            },
            write,
          )
        : await write();
    if (auditId !== undefined) env.audit_id = auditId;
    return env;
  }

  /** The rows of one refusal (see recordRefusal); resolves to the caller's audit_id. Never throws. */
  async #write(
    caller: Caller,
    name: string,
    err: VerbError,
    category: string,
    p: Principal | null,
    key: VerbError['keyAttribution'],
  ): Promise<number | undefined> {
    try {
      // The row the caller's audit_id names: the caller's tenant, else the sandbox tenant — the same
      // place for every refused key, known or not, so nothing visible differs (no key-id oracle).
      const companyId =
        p?.company_id ??
        (await this.rt.sandboxPrincipal().then(
          (s) => s.company_id,
          () => undefined,
        ));
      const now = this.rt.clock();
      const rows = await this.rt.store.write(async (tx) => {
        const out: AuditRow[] = [];
        if (companyId !== undefined) {
          out.push(
            await appendAudit(
              tx,
              auditEntry(
                {
                  company_id: companyId,
                  now,
                  action: name,
                  category,
                  status: 'denied',
                  principal: p,
                  agent_type: caller.surface,
                },
                { reason: err.reason },
              ),
            ),
          );
        }
        if (key !== undefined) {
          // The owner's copy (spec/audit.md §auth-failures): a fixed action and only a registered
          // verb name, so a caller without the secret writes no text of its choosing into the log.
          const entry = auditEntry(
            {
              company_id: key.company_id,
              now,
              action: keyRefusedAction(key),
              category,
              status: 'denied',
              principal: null,
              agent_type: caller.surface,
            },
            { reason: err.reason, key_id: key.key_id },
          );
          entry.request_data = { key_revoked: key.revoked, verb: this.rt.registry.get(name)?.name ?? null };
          out.push(await appendAudit(tx, entry));
        }
        return out;
      });
      for (const row of rows) this.rt.afterWrite(row);
      return companyId !== undefined ? rows[0]!.audit_id : undefined;
    } catch (auditErr) {
      this.rt.logger.error({ err: auditErr, verb: name }, 'could not write the audit row of a refusal');
      return undefined;
    }
  }

  /**
   * The aggregated row(s) of a closed auth-failure window: `auth.failures` in the sandbox tenant
   * (where the first row of the window went) and, when the presented key id exists, the owner's
   * `api_key.wrong_secret` / `api_key.revoked` copy, both with `request_data` `{ aggregated: true,
   * count, first_at, last_at, address, surface, first_audit_id }`. spec/audit.md §auth-failure-windows
   */
  async writeAggregate(w: AggregatedFailure): Promise<void> {
    const companyId = await this.rt.sandboxPrincipal().then(
      (s) => s.company_id,
      () => undefined,
    );
    const data = {
      aggregated: true,
      count: w.count,
      first_at: w.first_at,
      last_at: w.last_at,
      address: w.address,
      surface: w.surface,
      first_audit_id: w.first_audit_id ?? null,
    };
    const now = this.rt.clock();
    const base = {
      now,
      category: w.category,
      status: 'denied' as const,
      principal: null,
      agent_type: w.surface,
    };
    const rows = await this.rt.store.write(async (tx) => {
      const out: AuditRow[] = [];
      if (companyId !== undefined) {
        const e = auditEntry(
          { ...base, company_id: companyId, action: AUTH_FAILURES_ACTION },
          { reason: w.reason },
        );
        e.request_data = data;
        out.push(await appendAudit(tx, e));
      }
      const k = w.keyAttribution;
      if (k !== undefined) {
        const e = auditEntry(
          {
            ...base,
            company_id: k.company_id,
            action: keyRefusedAction(k),
          },
          { reason: w.reason, key_id: k.key_id },
        );
        e.request_data = { ...data, key_revoked: k.revoked, verb: null, first_audit_id: null };
        out.push(await appendAudit(tx, e));
      }
      return out;
    });
    for (const row of rows) this.rt.afterWrite(row);
  }
}

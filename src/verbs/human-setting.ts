/**
 * The setter verbs of the tenant settings only a human changes — how long audit rows stay
 * (tenant.audit_retention_set), where the business day begins (tenant.time_zone_set), how long
 * approvals wait (tenant.approval_ttl_set), the conditional gates (tenant.gate_rules_set) — built
 * by one factory, so the human-only rule lives in one place: the set and its revert both call
 * requireHumanToChange (identity's predicate, spec/consent.md §channels) before anything is
 * read further or changed, and an agent's credential is refused `human_required`, audited.
 *
 * Each is WRITE_REVERSIBLE, cap-exempt (an owner must be able to act after a runaway agent used
 * the day's cap), owner only, projected on http and cli only (not in an agent's tool list), and
 * revertible (audit.revert restores the previous value from the rollback data).
 */
import type { JsonSchema } from '../spec/types.ts';
import { defineSystemVerb, type SystemVerbContext } from '../runtime/verb.ts';
import { requireHumanToChange } from '../runtime/consent/refusals.ts';
import type { TenantSettings } from '../runtime/tenants.ts';
import { readTenantSettings, writeTenantSettings } from './settings-row.ts';

/** What a human-only setter declares; the factory adds the class, floors, surfaces and the human check. */
export interface HumanSetting<A> {
  name: string;
  title: string;
  description: string;
  input: JsonSchema;
  summary: (args: A) => string;
  /** The setting in words, for the refusal: "the business's time zone (…)". */
  what: string;
  /**
   * Apply `args` to `settings` (in place; may throw invalid_input). Answers the verb's result and
   * the rollback to record; no rollback: nothing changed, nothing is written.
   */
  set: (
    ctx: SystemVerbContext,
    args: A,
    settings: TenantSettings,
  ) => { result: Record<string, unknown>; rollback?: { handle: string; data: Record<string, unknown> } };
  /** Put back the value the rollback data holds (in place); answers the revert_action sentence. */
  restore: (settings: TenantSettings, rollback: Record<string, unknown>) => string;
}

/**
 * Build a human-only setter verb (see the module comment). Output: `set`'s result. Refusals:
 * human_required (an agent's credential, on the set and on its revert), tenant_not_found, and what
 * `set` throws.
 */
export function humanSettingVerb<A>(v: HumanSetting<A>) {
  return defineSystemVerb<A>({
    name: v.name,
    title: v.title,
    description: v.description,
    shape: 'receipt',
    category: 'consent',
    consent: 'WRITE_REVERSIBLE',
    cap_exempt: true,
    role_floor: 'owner',
    surfaces: ['http', 'cli'],
    input: v.input,
    summary: v.summary,
    async handler(ctx, args) {
      const settings = await readTenantSettings(ctx.db, ctx.principal.company_id);
      requireHumanToChange(ctx.principal, settings, v.what);
      const { result, rollback } = v.set(ctx, args, settings);
      ctx.setEntity('tenant', ctx.principal.company_id);
      if (rollback !== undefined) {
        await writeTenantSettings(ctx, settings);
        ctx.setRollback(rollback.handle, rollback.data);
      }
      return result;
    },
    revert: {
      async handler(ctx, original) {
        const settings = await readTenantSettings(ctx.db, ctx.principal.company_id);
        // Putting the old value back changes the setting too: a human's act, like the set.
        requireHumanToChange(ctx.principal, settings, v.what);
        const revert_action = v.restore(settings, original.rollback);
        await writeTenantSettings(ctx, settings);
        ctx.setEntity('tenant', ctx.principal.company_id);
        return { revert_action };
      },
    },
  });
}

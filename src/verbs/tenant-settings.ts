/**
 * Tenant consent settings: daily caps per consent class and the tenant's own blocklist
 * (spec/consent.md §caps, §blocklist).
 *
 * - tenant.settings          READ (aggregate), admin: caps (limit, default, used today, reset time) and blocklists.
 * - tenant.caps_set          WRITE_REVERSIBLE, owner: set a class's daily cap (0–1,000,000) or null for the default.
 * - tenant.blocklist_add     WRITE_REVERSIBLE, owner: block a verb name for this tenant (registered or not).
 * - tenant.blocklist_remove  WRITE_REVERSIBLE, owner: unblock a name this tenant added (the defaults stay).
 * - tenant.phrase_channel_set WRITE_REVERSIBLE, owner: who may type a phrase that counts, `human`
 *                            (default) or `any` (spec/consent.md §channels); loosening `human` →
 *                            `any` needs a human itself (phrase_channel_human otherwise).
 * - tenant.time_zone_set      WRITE_REVERSIBLE, owner, a human only: the business's time zone (IANA),
 *                            where its day begins: daily caps reset at its midnight and money is
 *                            summed per business day (runtime/consent/business-day.ts). Moving
 *                            midnight moves the cap boundary, so an agent's key is refused
 *                            (human_required) either way, and so is its revert.
 * - tenant.confirmation_channel_set WRITE_REVERSIBLE, owner: who may confirm a confirmation gate,
 *                            `any` (default: the agent's confirm after asking the user counts) or
 *                            `human`; loosening `human` → `any` needs a human (human_required).
 *
 * The writes are projected on http and cli only: an agent does not tune its own guard rails
 * through its tool list. Each write is audited, counted against the tenant's WRITE_REVERSIBLE cap,
 * and revertible (audit.revert restores the previous value). Settings are cached per process for
 * up to 5 s (Tenants.cacheTtlMs); this process forgets its cache at commit.
 */
import type { VerbClass } from '../spec/types.ts';
import { VerbError } from '../runtime/errors.ts';
import { defineSystemVerb, type OriginalAction, type SystemVerbContext } from '../runtime/verb.ts';
import { DEFAULT_DAILY_CAPS } from '../runtime/consent/daily-caps.ts';
import {
  PHRASE_CHANNEL_SETTINGS,
  confirmationChannelOf,
  phraseChannelOf,
  type PhraseChannelSetting,
  type TenantSettings,
} from '../runtime/tenants.ts';
import { humanApprovalPlaces, requireHumanToChange as requireHumanTo } from '../runtime/consent/refusals.ts';
import { mayConsent } from '../identity/consent-predicate.ts';
import { blocklistKey, DEFAULT_BLOCKLIST } from '../runtime/consent/blocklist.ts';
import { businessDay, canonicalTimeZone, DEFAULT_TIME_ZONE } from '../runtime/consent/business-day.ts';
import { readTenantSettings, writeTenantSettings } from './settings-row.ts';
import { humanSettingVerb } from './human-setting.ts';

/** The classes with a daily cap. */
export const CAPPED_CLASSES = ['WRITE_REVERSIBLE', 'WRITE_FINANCIAL', 'IRREVERSIBLE'] as const;
export type CappedClass = (typeof CAPPED_CLASSES)[number];
const MAX_CAP = 1_000_000;
const MAX_TENANT_BLOCKLIST = 500;

/** Names that may not be blocked: blocking them would lock the owner out of unblocking. */
const UNBLOCKABLE = new Set(
  [
    'tenant.settings',
    'tenant.caps_set',
    'tenant.blocklist_add',
    'tenant.blocklist_remove',
    'tenant.phrase_channel_set',
    'tenant.confirmation_channel_set',
  ].map(blocklistKey),
);

export const tenantSettings = defineSystemVerb<Record<string, never>>({
  name: 'tenant.settings',
  title: 'Tenant consent settings',
  description:
    "Show this tenant's consent settings: its time zone and today's business day (caps reset at its midnight), each class's daily cap (limit, default, used today, reset time), the blocked verb names (built-in and the tenant's own), and who may type a phrase or confirm (phrase_channel, confirmation_channel: any | human). Admin role.",
  shape: 'aggregate',
  category: 'consent',
  role_floor: 'admin',
  input: { type: 'object', properties: {}, additionalProperties: false },
  idempotent: true,
  async handler(ctx) {
    const companyId = ctx.principal.company_id;
    const settings = await readTenantSettings(ctx.db, companyId);
    const today = businessDay(ctx.now, settings.time_zone);
    const used = await ctx.db.all<{ consent_class: string; count: number }>(
      'SELECT consent_class, count FROM daily_counts WHERE company_id = ? AND day = ?',
      [companyId, today.day],
    );
    const resets_at = today.end;
    const caps: Record<string, CapView> = {};
    for (const cls of CAPPED_CLASSES) {
      const limit = settings.caps?.[cls] ?? DEFAULT_DAILY_CAPS[cls];
      const n = Number(used.find((u) => u.consent_class === cls)?.count ?? 0);
      caps[cls] = {
        limit,
        default: DEFAULT_DAILY_CAPS[cls],
        custom: settings.caps?.[cls] !== undefined,
        used_today: n,
        remaining: Math.max(0, limit - n),
        resets_at,
      };
    }
    return {
      entity_type: 'tenant',
      entity_id: companyId,
      data: {
        time_zone: today.time_zone,
        business_day: today,
        caps,
        blocklist: { default: [...DEFAULT_BLOCKLIST], tenant: [...(settings.blocklist ?? [])] },
        phrase_channel: phraseChannelOf(settings),
        confirmation_channel: confirmationChannelOf(settings),
      },
      fetched_at: ctx.now.toISOString(),
    };
  },
});

/** Restore one settings member to its value before the action (undefined = absent). */
async function restore(
  ctx: SystemVerbContext,
  original: OriginalAction,
  member: 'caps' | 'blocklist' | 'phrase_channel' | 'confirmation_channel',
): Promise<{ revert_action: string }> {
  const settings = await readTenantSettings(ctx.db, ctx.principal.company_id);
  if (member === 'confirmation_channel') {
    const previous = (original.rollback as { previous?: unknown }).previous;
    // Restoring human tightens: always allowed; restoring `any` loosens: checked like a set.
    if (previous === 'any' && confirmationChannelOf(settings) === 'human')
      requireHumanToChange(ctx, settings, 'who may confirm (confirmation_channel)');
    if (previous === 'any' || previous === 'human') settings.confirmation_channel = previous;
    await writeTenantSettings(ctx, settings);
    return { revert_action: `confirmation channel restored to ${confirmationChannelOf(settings)}` };
  }
  if (member === 'phrase_channel') {
    const previous = (original.rollback as { previous?: unknown }).previous;
    if (previous === 'human' && phraseChannelOf(settings) !== 'human') {
      // Restoring human tightens: always allowed. (Reverting to `any` loosens: checked like a set.)
      settings.phrase_channel = 'human';
    } else if (previous === 'any') {
      requireHumanToLoosen(ctx, settings);
      settings.phrase_channel = 'any';
    }
    await writeTenantSettings(ctx, settings);
    return { revert_action: `phrase channel restored to ${phraseChannelOf(settings)}` };
  }
  const rb = original.rollback as { cls?: CappedClass; previous?: unknown };
  if (member === 'caps') {
    const caps = { ...(settings.caps ?? {}) } as Partial<Record<VerbClass, number>>;
    const restored = typeof rb.previous === 'number' ? rb.previous : DEFAULT_DAILY_CAPS[rb.cls!];
    if (restored > (caps[rb.cls!] ?? DEFAULT_DAILY_CAPS[rb.cls!]))
      requireHumanToChange(ctx, settings, `the daily ${rb.cls} cap (raising it)`);
    if (typeof rb.previous === 'number') caps[rb.cls!] = rb.previous;
    else delete caps[rb.cls!];
    settings.caps = caps;
    await writeTenantSettings(ctx, settings);
    return {
      revert_action: `daily cap of ${rb.cls} restored to ${typeof rb.previous === 'number' ? rb.previous : `the default (${DEFAULT_DAILY_CAPS[rb.cls!]})`}`,
    };
  }
  const restoredList = Array.isArray(rb.previous) ? (rb.previous as string[]) : [];
  const kept = new Set(restoredList.map(blocklistKey));
  if ((settings.blocklist ?? []).some((n) => !kept.has(blocklistKey(n))))
    requireHumanToChange(ctx, settings, 'the blocklist (unblocking a verb)');
  settings.blocklist = restoredList;
  await writeTenantSettings(ctx, settings);
  return { revert_action: `tenant blocklist restored to [${settings.blocklist.join(', ')}]` };
}

/**
 * One consent class's daily cap as `tenant.settings` reports it (spec/consent.md §caps):
 * `limit` and `default` in calls per business day (the tenant's time zone), `used_today` and
 * `remaining` counted in the same unit, `resets_at` the tenant's next midnight as an ISO 8601
 * instant (UTC).
 */
export interface CapView {
  limit: number;
  default: number;
  custom: boolean;
  used_today: number;
  remaining: number;
  resets_at: string;
}

export interface CapsSetArgs {
  consent_class: CappedClass;
  limit: number | null;
}

export const tenantCapsSet = defineSystemVerb<CapsSetArgs>({
  name: 'tenant.caps_set',
  title: 'Set a daily cap',
  description:
    "Set this tenant's daily cap for one consent class (WRITE_REVERSIBLE default 100, WRITE_FINANCIAL 25, IRREVERSIBLE 10): at most `limit` such writes per business day (reset at the tenant's midnight, tenant.time_zone_set); 0 allows none; null restores the default. Owner only; needs a confirmation.",
  shape: 'receipt',
  category: 'consent',
  consent: 'WRITE_REVERSIBLE',
  cap_exempt: true,
  role_floor: 'owner',
  surfaces: ['http', 'cli'],
  input: {
    type: 'object',
    properties: {
      consent_class: { type: 'string', enum: [...CAPPED_CLASSES] },
      limit: {
        type: ['integer', 'null'],
        minimum: 0,
        maximum: MAX_CAP,
        description: "Writes per business day (the tenant's time zone); null = the default.",
      },
    },
    required: ['consent_class', 'limit'],
    additionalProperties: false,
  },
  summary: (a) =>
    a.limit === null
      ? `Restore the daily ${a.consent_class} cap to its default (${DEFAULT_DAILY_CAPS[a.consent_class]}).`
      : `Set the daily ${a.consent_class} cap to ${a.limit}.`,
  async handler(ctx, args) {
    const settings = await readTenantSettings(ctx.db, ctx.principal.company_id);
    const caps = { ...(settings.caps ?? {}) } as Partial<Record<VerbClass, number>>;
    const previous = caps[args.consent_class];
    const before = previous ?? DEFAULT_DAILY_CAPS[args.consent_class];
    if ((args.limit ?? DEFAULT_DAILY_CAPS[args.consent_class]) > before)
      requireHumanToChange(ctx, settings, `the daily ${args.consent_class} cap (raising it)`);
    if (args.limit === null) delete caps[args.consent_class];
    else caps[args.consent_class] = args.limit;
    settings.caps = caps;
    await writeTenantSettings(ctx, settings);
    ctx.setEntity('tenant', ctx.principal.company_id);
    ctx.setRollback(`tenant:caps:${args.consent_class}:${previous ?? 'default'}`, {
      cls: args.consent_class,
      previous: previous ?? null,
    });
    return {
      status: 'completed',
      consent_class: args.consent_class,
      limit: args.limit ?? DEFAULT_DAILY_CAPS[args.consent_class],
      previous_limit: previous ?? DEFAULT_DAILY_CAPS[args.consent_class],
      is_default: args.limit === null,
    };
  },
  revert: { handler: (ctx, original) => restore(ctx, original, 'caps') },
});

const NAME = {
  type: 'string',
  minLength: 1,
  maxLength: 200,
  pattern: '^[a-zA-Z][a-zA-Z0-9_.-]*$',
  description: 'A verb name (registered or not); compared ignoring case and . _ - separators.',
} as const;

export const tenantBlocklistAdd = defineSystemVerb<{ name: string }>({
  name: 'tenant.blocklist_add',
  title: 'Block a verb name',
  description:
    'Block a verb name for this tenant: any call to it (or to the same name with other case or separators) is refused with blocked_verb whatever the role or phrase, registered or not, and audited. Owner only; needs a confirmation.',
  shape: 'receipt',
  category: 'consent',
  consent: 'WRITE_REVERSIBLE',
  cap_exempt: true,
  role_floor: 'owner',
  surfaces: ['http', 'cli'],
  input: { type: 'object', properties: { name: NAME }, required: ['name'], additionalProperties: false },
  summary: (a) => `Block the verb name "${a.name}" for this tenant.`,
  async handler(ctx, args) {
    if (UNBLOCKABLE.has(blocklistKey(args.name))) {
      throw new VerbError(
        'invalid_input',
        `${args.name} cannot be blocked: it would lock the owner out of the tenant settings.`,
        { path: '/name', hint: 'Block another name.' },
      );
    }
    const settings = await readTenantSettings(ctx.db, ctx.principal.company_id);
    const previous = [...(settings.blocklist ?? [])];
    const key = blocklistKey(args.name);
    const already =
      DEFAULT_BLOCKLIST.some((n) => blocklistKey(n) === key) || previous.some((n) => blocklistKey(n) === key);
    if (!already) {
      if (previous.length >= MAX_TENANT_BLOCKLIST)
        throw new VerbError(
          'invalid_input',
          `A tenant blocklist holds at most ${MAX_TENANT_BLOCKLIST} names.`,
          { path: '/name' },
        );
      settings.blocklist = [...previous, args.name];
      await writeTenantSettings(ctx, settings);
      ctx.setRollback(`tenant:blocklist:add:${args.name}`, { previous });
    }
    ctx.setEntity('tenant', ctx.principal.company_id);
    return {
      status: already ? 'unchanged' : 'completed',
      name: args.name,
      blocklist: settings.blocklist ?? previous,
    };
  },
  revert: { handler: (ctx, original) => restore(ctx, original, 'blocklist') },
});

export const tenantBlocklistRemove = defineSystemVerb<{ name: string }>({
  name: 'tenant.blocklist_remove',
  title: 'Unblock a verb name',
  description:
    "Remove a name from this tenant's blocklist. The four built-in names (subscription_cancel_immediate, customer_delete, company_delete, employee_terminate) stay blocked for every tenant. Owner only; needs a confirmation.",
  shape: 'receipt',
  category: 'consent',
  consent: 'WRITE_REVERSIBLE',
  cap_exempt: true,
  role_floor: 'owner',
  surfaces: ['http', 'cli'],
  input: { type: 'object', properties: { name: NAME }, required: ['name'], additionalProperties: false },
  summary: (a) => `Unblock the verb name "${a.name}" for this tenant.`,
  async handler(ctx, args) {
    const key = blocklistKey(args.name);
    if (DEFAULT_BLOCKLIST.some((n) => blocklistKey(n) === key)) {
      throw new VerbError(
        'invalid_input',
        `${args.name} is on the built-in blocklist and stays blocked for every tenant.`,
        { path: '/name', hint: 'Use a deliberately named safe alternative instead (see verbs.list).' },
      );
    }
    const settings = await readTenantSettings(ctx.db, ctx.principal.company_id);
    const previous = [...(settings.blocklist ?? [])];
    const next = previous.filter((n) => blocklistKey(n) !== key);
    if (next.length === previous.length) {
      throw new VerbError('not_found', `${args.name} is not on this tenant's blocklist.`, {
        hint: 'See the blocklist with tenant.settings (`solid tenant show`).',
      });
    }
    requireHumanToChange(ctx, settings, 'the blocklist (unblocking a verb)');
    settings.blocklist = next;
    await writeTenantSettings(ctx, settings);
    ctx.setEntity('tenant', ctx.principal.company_id);
    ctx.setRollback(`tenant:blocklist:remove:${args.name}`, { previous });
    return { status: 'completed', name: args.name, blocklist: next };
  },
  revert: { handler: (ctx, original) => restore(ctx, original, 'blocklist') },
});

/**
 * Loosening a consent setting — raising a daily cap, unblocking a verb, or the revert that does
 * either — is a human's decision (spec/consent.md §channels: change_consent_settings). Tightening
 * (a lower cap, a new block) only removes ways to act, so an agent's key may do it.
 * @throws VerbError human_required
 */
function requireHumanToChange(ctx: SystemVerbContext, settings: TenantSettings, what: string): void {
  requireHumanTo(ctx.principal, settings, what);
}

/**
 * Loosening `phrase_channel` from `human` to `any` must itself come from a human channel: else a
 * model holding an owner key would undo the setting over the HTTP API and confirm its own nonce.
 * @throws VerbError phrase_channel_human
 */
function requireHumanToLoosen(ctx: SystemVerbContext, settings: TenantSettings): void {
  if (phraseChannelOf(settings) !== 'human' || mayConsent(ctx.principal, 'change_consent_settings', settings))
    return;
  throw new VerbError(
    'phrase_channel_human',
    'This tenant counts typed phrases only from a human channel; switching that off must come from a human channel too. Nothing changed.',
    {
      hint: `Switch it with \`solid tenant phrase-channel any\` typed at a terminal on the server's database (the CLI prompt is a human channel). Approvals meanwhile: ${humanApprovalPlaces(undefined)}.`,
    },
  );
}

type ChannelMember = 'phrase_channel' | 'confirmation_channel';

/**
 * The setter verb of one channel setting (`tenant.phrase_channel_set`,
 * `tenant.confirmation_channel_set`): WRITE_REVERSIBLE, cap-exempt, owner, http and cli only,
 * revertible. Output `{ status: completed | unchanged, <member>, previous_<member> }`. Setting
 * `any` while the effective value is `human` is a loosening: `requireToLoosen` throws unless a
 * human asks (spec/consent.md §channels); tightening is open to agents.
 */
function channelSetVerb<M extends ChannelMember>(
  member: M,
  v: {
    name: string;
    title: string;
    description: string;
    summary: Record<PhraseChannelSetting, string>;
    effective: (settings: TenantSettings) => PhraseChannelSetting;
    requireToLoosen: (ctx: SystemVerbContext, settings: TenantSettings) => void;
  },
) {
  return defineSystemVerb<Record<M, PhraseChannelSetting>>({
    name: v.name,
    title: v.title,
    description: v.description,
    shape: 'receipt',
    category: 'consent',
    consent: 'WRITE_REVERSIBLE',
    cap_exempt: true,
    role_floor: 'owner',
    surfaces: ['http', 'cli'],
    input: {
      type: 'object',
      properties: { [member]: { type: 'string', enum: [...PHRASE_CHANNEL_SETTINGS] } },
      required: [member],
      additionalProperties: false,
    },
    summary: (a) => v.summary[a[member]],
    async handler(ctx, args) {
      const settings = await readTenantSettings(ctx.db, ctx.principal.company_id);
      const previous = v.effective(settings);
      const next = args[member];
      if (next === 'any' && previous === 'human') v.requireToLoosen(ctx, settings);
      // Stored explicitly, even when it equals the default (spec/consent.md §channels).
      settings[member] = next;
      ctx.setEntity('tenant', ctx.principal.company_id);
      if (previous !== next) {
        await writeTenantSettings(ctx, settings);
        ctx.setRollback(`tenant:${member}:${previous}`, { previous });
      }
      return {
        status: previous === next ? 'unchanged' : 'completed',
        [member]: next,
        [`previous_${member}`]: previous,
      };
    },
    revert: { handler: (ctx, original) => restore(ctx, original, member) },
  });
}

export const tenantPhraseChannelSet = channelSetVerb('phrase_channel', {
  name: 'tenant.phrase_channel_set',
  title: 'Set where typed phrases count',
  description:
    "Set who may type a phrase that counts (WRITE_FINANCIAL, IRREVERSIBLE): `human` (default) — only a signed-in person (the approval page, the dashboard) or the operator at the server's terminal; an agent's phrase is refused with phrase_channel_human and its pending answers do not show the phrase; `any` — agents too, an explicit owner choice that receipts name. Switching to `any` must itself come from a human. Owner only; needs a confirmation.",
  summary: {
    human:
      'Count typed phrases only when a human types them (approval page, dashboard, the terminal prompt on the server).',
    any: 'Count typed phrases from any channel, agents included.',
  },
  effective: phraseChannelOf,
  requireToLoosen: requireHumanToLoosen,
});

export const tenantConfirmationChannelSet = channelSetVerb('confirmation_channel', {
  name: 'tenant.confirmation_channel_set',
  title: 'Set who may confirm',
  description:
    "Set who may confirm a confirmation gate (WRITE_REVERSIBLE): `any` (default) — the agent's own confirmation counts (it asks the user in the conversation, then calls again); `human` — only a signed-in person (the approval page's Approve button, the dashboard) or the operator at the server's terminal, so every such write waits for a human's approval. Typed phrases are not affected. Switching to `any` must itself come from a human (human_required). Owner only; needs a confirmation.",
  summary: {
    human:
      'Count a confirmation only when a human gives it (approval page, dashboard, the terminal prompt on the server).',
    any: "Count the agent's own confirmation (after it asks the user in the conversation).",
  },
  effective: confirmationChannelOf,
  requireToLoosen: (ctx, settings) =>
    requireHumanToChange(ctx, settings, 'who may confirm (confirmation_channel)'),
});

export const tenantTimeZoneSet = humanSettingVerb<{ time_zone: string }>({
  name: 'tenant.time_zone_set',
  title: "Set the business's time zone",
  description:
    "Set this business's time zone (an IANA name such as Europe/Berlin or America/New_York; default UTC): its business day begins at midnight there, daily caps reset then and money moved is summed per business day. Moving midnight moves the cap boundary, so only a signed-in human may change it (an agent's key is refused human_required). Owner only; needs a confirmation; revertible.",
  input: {
    type: 'object',
    properties: {
      time_zone: {
        type: 'string',
        minLength: 1,
        maxLength: 64,
        pattern: '^[A-Za-z][A-Za-z0-9_+./-]*$',
        description: 'IANA time zone name, e.g. Europe/Berlin; UTC for none.',
      },
    },
    required: ['time_zone'],
    additionalProperties: false,
  },
  summary: (a) =>
    `Set the business's time zone to ${a.time_zone}: its day and daily caps begin at midnight there.`,
  what: "the business's time zone (where its day and daily caps begin)",
  set(ctx, args, settings) {
    const zone = canonicalTimeZone(args.time_zone);
    if (zone === undefined)
      throw new VerbError('invalid_input', `"${args.time_zone}" is not a time zone this server knows.`, {
        hint: 'Give an IANA time zone name such as Europe/Berlin, America/New_York or UTC.',
        path: '/time_zone',
      });
    const stored = settings.time_zone;
    const previous = stored ?? DEFAULT_TIME_ZONE;
    if (zone !== previous) settings.time_zone = zone;
    return {
      result: {
        status: zone === previous ? 'unchanged' : 'completed',
        time_zone: zone,
        previous_time_zone: previous,
        business_day: businessDay(ctx.now, zone),
      },
      ...(zone !== previous
        ? { rollback: { handle: `tenant:time_zone:${previous}`, data: { previous: stored ?? null } } }
        : {}),
    };
  },
  restore(settings, rollback) {
    // Moving midnight back moves the cap boundary too: a human's act, like the set (the factory).
    const previous = (rollback as { previous?: unknown }).previous;
    if (typeof previous === 'string' && canonicalTimeZone(previous) !== undefined)
      settings.time_zone = previous;
    else delete settings.time_zone;
    return `time zone restored to ${settings.time_zone ?? DEFAULT_TIME_ZONE}`;
  },
});

export const tenantSettingsVerbs = [
  tenantSettings,
  tenantCapsSet,
  tenantBlocklistAdd,
  tenantBlocklistRemove,
  tenantPhraseChannelSet,
  tenantConfirmationChannelSet,
  tenantTimeZoneSet,
];

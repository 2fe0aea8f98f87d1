/**
 * The owner's consent settings for approvals and conditional gates (spec/consent.md §approvals,
 * §conditional-gates):
 *
 * - tenant.approval_ttl_set  WRITE_REVERSIBLE, owner, human only: how long an approval of a
 *                            typed-phrase class waits for a human (5…1440 minutes; null = as long
 *                            as its nonce, the default).
 * - tenant.gate_rules_set    WRITE_REVERSIBLE, owner, human only: the tenant's conditional-gate
 *                            rules (replace the whole list; [] removes them). A rule only raises a
 *                            verb's gate (class or role floor) by its arguments: a JSON Pointer,
 *                            an operator and a literal, no code.
 * - tenant.gate_rules        READ, admin: the rules, each in words.
 *
 * Both writes are projected on http and cli only, audited, cap-exempt (an owner must be able to
 * tighten after a runaway agent used the day's cap) and revertible (audit.revert restores the
 * previous value). Changing consent settings is a human act: an agent's call (an API key, a
 * program the agent drives) is refused with `human_required`, audited.
 */
import { defineSystemVerb } from '../runtime/verb.ts';
import type { TenantSettings } from '../runtime/tenants.ts';
import { humanSettingVerb } from './human-setting.ts';
import {
  GATE_RULE_OPS,
  MAX_GATE_RULES,
  RAISABLE_CLASSES,
  checkGateRules,
  describeRule,
  type GateRule,
} from '../runtime/consent/gate-rules.ts';

/** Bounds of an approval TTL, in minutes: 5 (the nonce TTL) to a day. */
export const APPROVAL_TTL_MIN_MINUTES = 5;
export const APPROVAL_TTL_MAX_MINUTES = 1440;
const TTL_CLASSES = ['WRITE_FINANCIAL', 'IRREVERSIBLE'] as const;

/** Put back a member from its rollback data (`previous`; null or absent: the default). */
function restoreMember(
  settings: TenantSettings,
  rollback: Record<string, unknown>,
  member: 'approval_ttl_minutes' | 'gate_rules',
): string {
  const previous = (rollback as { previous?: unknown }).previous;
  if (previous === undefined || previous === null) delete settings[member];
  else (settings as Record<string, unknown>)[member] = previous;
  return `${member} restored to ${JSON.stringify(previous ?? null)}`;
}

export const tenantApprovalTtlSet = humanSettingVerb<{
  consent_class: (typeof TTL_CLASSES)[number];
  minutes: number | null;
}>({
  name: 'tenant.approval_ttl_set',
  title: 'Set how long approvals wait',
  description: `Set how long an approval of a typed-phrase class (WRITE_FINANCIAL or IRREVERSIBLE) waits for a human: ${APPROVAL_TTL_MIN_MINUTES} to ${APPROVAL_TTL_MAX_MINUTES} minutes, or null for the default (as long as its nonce, 5 minutes). The agent's confirm after an approval still has a nonce's lifetime from the moment of approval. Owner only, from a human channel (human_required otherwise); needs a confirmation.`,
  input: {
    type: 'object',
    properties: {
      consent_class: { type: 'string', enum: [...TTL_CLASSES] },
      minutes: {
        type: ['integer', 'null'],
        minimum: APPROVAL_TTL_MIN_MINUTES,
        maximum: APPROVAL_TTL_MAX_MINUTES,
        description: 'Minutes an approval waits; null restores the default.',
      },
    },
    required: ['consent_class', 'minutes'],
    additionalProperties: false,
  },
  summary: (a) =>
    a.minutes === null
      ? `Let ${a.consent_class} approvals wait as long as their nonce (the default).`
      : `Let ${a.consent_class} approvals wait ${a.minutes} minutes for a human.`,
  what: 'how long approvals wait',
  set(_ctx, args, settings) {
    const previous = settings.approval_ttl_minutes ?? null;
    const next = { ...(previous ?? {}) };
    if (args.minutes === null) delete next[args.consent_class];
    else next[args.consent_class] = args.minutes;
    if (Object.keys(next).length === 0) delete settings.approval_ttl_minutes;
    else settings.approval_ttl_minutes = next;
    return {
      result: {
        status: 'completed',
        consent_class: args.consent_class,
        minutes: args.minutes,
        approval_ttl_minutes: next,
      },
      rollback: { handle: 'tenant:approval_ttl', data: { previous } },
    };
  },
  restore: (settings, rollback) => restoreMember(settings, rollback, 'approval_ttl_minutes'),
});

const RULE_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,39}$', description: 'Your name for the rule.' },
    verb: { type: 'string', minLength: 1, maxLength: 200, description: 'The verb it applies to.' },
    when: {
      type: 'object',
      properties: {
        pointer: {
          type: 'string',
          maxLength: 200,
          description: 'JSON Pointer (RFC 6901) into the arguments, e.g. /amount_cents.',
        },
        op: { type: 'string', enum: [...GATE_RULE_OPS] },
        value: { type: ['number', 'string', 'boolean'], description: 'The literal compared with.' },
      },
      required: ['pointer', 'op', 'value'],
      additionalProperties: false,
    },
    raise_to: { type: 'string', enum: [...RAISABLE_CLASSES] },
    role_floor: { type: 'string', enum: ['employee', 'admin', 'owner'] },
    note: { type: 'string', maxLength: 300 },
  },
  required: ['id', 'verb', 'when', 'raise_to'],
  additionalProperties: false,
} as const;

export const tenantGateRulesSet = humanSettingVerb<{ rules: GateRule[] }>({
  name: 'tenant.gate_rules_set',
  title: 'Set conditional gates',
  description: `Replace this tenant's conditional-gate rules (at most ${MAX_GATE_RULES}; [] removes them). A rule raises a verb's consent gate when its arguments match: {id, verb, when: {pointer, op, value}, raise_to, role_floor?}, e.g. charge_invoice with /amount_cents gt 50000 raised to IRREVERSIBLE with role_floor owner. Rules only raise, never lower a verb's declared class; a pointer naming nothing does not match. Owner only, from a human channel (human_required otherwise); needs a confirmation.`,
  input: {
    type: 'object',
    properties: { rules: { type: 'array', maxItems: MAX_GATE_RULES, items: RULE_SCHEMA } },
    required: ['rules'],
    additionalProperties: false,
  },
  summary: (a) =>
    a.rules.length === 0
      ? 'Remove every conditional-gate rule.'
      : `Set ${a.rules.length} conditional-gate rule(s): ${a.rules.map((r) => `${r.verb} ${describeRule(r)}`).join('; ')}.`,
  what: 'conditional gates',
  set(ctx, args, settings) {
    checkGateRules(args.rules, (name) => ctx.runtime.registry.get(name));
    const previous = settings.gate_rules ?? null;
    if (args.rules.length === 0) delete settings.gate_rules;
    else settings.gate_rules = args.rules;
    return {
      result: {
        status: 'completed',
        rules: args.rules.map((r) => ({ ...r, description: describeRule(r) })),
        previous_count: previous?.length ?? 0,
      },
      rollback: { handle: 'tenant:gate_rules', data: { previous } },
    };
  },
  restore: (settings, rollback) => restoreMember(settings, rollback, 'gate_rules'),
});

export const tenantGateRules = defineSystemVerb<Record<string, never>>({
  name: 'tenant.gate_rules',
  title: 'Conditional gates',
  description:
    "This tenant's conditional-gate rules and approval waiting times: each rule with its verb, condition, the class and floor it raises to, and a description in words. Needs the admin role.",
  shape: 'aggregate',
  category: 'consent',
  role_floor: 'admin',
  // The owner's screens (dashboard, CLI); agents learn the rules that apply to a verb from
  // verbs.list (conditional_gates) and from the pending answer, not from an extra MCP tool.
  surfaces: ['http', 'cli'],
  input: { type: 'object', properties: {}, additionalProperties: false },
  output: {
    type: 'object',
    properties: {
      entity_type: { const: 'tenant' },
      entity_id: { type: 'integer' },
      data: {
        type: 'object',
        properties: {
          rules: { type: 'array', items: { type: 'object' } },
          approval_ttl_minutes: { type: 'object' },
        },
        required: ['rules', 'approval_ttl_minutes'],
      },
    },
    required: ['entity_type', 'entity_id', 'data'],
  },
  idempotent: true,
  async handler(ctx) {
    const settings = (await ctx.runtime.tenants.get(ctx.principal.company_id))?.settings ?? {};
    return {
      entity_type: 'tenant',
      entity_id: ctx.principal.company_id,
      data: {
        rules: (settings.gate_rules ?? []).map((r) => ({ ...r, description: describeRule(r) })),
        approval_ttl_minutes: settings.approval_ttl_minutes ?? {},
      },
    };
  },
});

export const consentSettingsVerbs = [tenantApprovalTtlSet, tenantGateRulesSet, tenantGateRules];

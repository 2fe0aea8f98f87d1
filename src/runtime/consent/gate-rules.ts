/**
 * Conditional gates: owner-edited rules that RAISE a verb's consent gate by its arguments (the
 * peers' `needsApproval(args)`), e.g. "charge_invoice with /amount_cents > 50000 needs the owner's
 * typed phrase". Stored per tenant in its settings (`gate_rules`), set through
 * `tenant.gate_rules_set` (src/verbs/consent-settings.ts).
 *
 * The rule language is data, never code: a JSON Pointer (RFC 6901) into the call's arguments, one
 * comparison operator and one literal. A rule can only raise — the consent class (READ <
 * WRITE_REVERSIBLE < WRITE_FINANCIAL < IRREVERSIBLE) and the role floor are the maximum of the
 * verb's declared ones and every matching rule's; nothing lowers a verb's declared class. A
 * pointer that names no value, or a value of another type than the literal, does not match.
 *
 * Spec: spec/consent.md §conditional-gates.
 */
import type { Role, VerbClass } from '../../spec/types.ts';
import { VerbError } from '../errors.ts';

/** Comparison operators of a rule: numbers for the order ones, any literal for eq / ne. */
export const GATE_RULE_OPS = ['gt', 'gte', 'lt', 'lte', 'eq', 'ne'] as const;
export type GateRuleOp = (typeof GATE_RULE_OPS)[number];

/** Classes a rule may raise a verb to. */
export const RAISABLE_CLASSES = ['WRITE_REVERSIBLE', 'WRITE_FINANCIAL', 'IRREVERSIBLE'] as const;
export type RaisableClass = (typeof RAISABLE_CLASSES)[number];

/** One rule, as stored in the tenant's settings and sent to tenant.gate_rules_set. */
export interface GateRule {
  /** The owner's name for the rule, shown in pending answers ("raised by rule big_charges"). */
  id: string;
  /** The verb it applies to (exact name). */
  verb: string;
  /** The condition on the call's arguments. */
  when: { pointer: string; op: GateRuleOp; value: number | string | boolean };
  /** The class the call is raised to when the condition holds (never lower than declared). */
  raise_to: RaisableClass;
  /** Optionally, the role a caller (and an approver) needs, e.g. owner. */
  role_floor?: Role;
  /** The owner's own words about the rule (shown in the catalogue). */
  note?: string;
}

/** At most this many rules per tenant. */
export const MAX_GATE_RULES = 50;

const CLASS_RANK: Record<VerbClass, number> = {
  READ: 0,
  WRITE_REVERSIBLE: 1,
  WRITE_FINANCIAL: 2,
  IRREVERSIBLE: 3,
  BLOCKED: 4,
};
const ROLE_RANK: Record<Role, number> = { read_only: 0, employee: 1, admin: 2, owner: 3 };
/** The default role floor of each class (spec/consent.md §classes). */
const CLASS_FLOOR: Record<RaisableClass, Role> = {
  WRITE_REVERSIBLE: 'employee',
  WRITE_FINANCIAL: 'admin',
  IRREVERSIBLE: 'owner',
};

/**
 * The value at a JSON Pointer (RFC 6901: `/a/0/b`, `~1` for `/`, `~0` for `~`) in `doc`, own
 * members only; undefined when the pointer names nothing. "" is the whole document.
 */
export function valueAt(doc: unknown, pointer: string): unknown {
  if (pointer === '') return doc;
  if (!pointer.startsWith('/')) return undefined;
  let cur: unknown = doc;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9]\d*)$/.test(key)) return undefined;
      cur = cur[Number(key)];
    } else if (cur !== null && typeof cur === 'object' && Object.hasOwn(cur, key)) {
      cur = (cur as Record<string, unknown>)[key];
    } else return undefined;
  }
  return cur;
}

/** Does the rule's condition hold for these arguments? */
export function ruleMatches(rule: GateRule, args: unknown): boolean {
  const v = valueAt(args, rule.when.pointer);
  const lit = rule.when.value;
  switch (rule.when.op) {
    case 'eq':
      return v === lit;
    case 'ne':
      return v !== undefined && v !== lit;
    default: {
      if (typeof v !== 'number' || typeof lit !== 'number') return false;
      if (rule.when.op === 'gt') return v > lit;
      if (rule.when.op === 'gte') return v >= lit;
      if (rule.when.op === 'lt') return v < lit;
      return v <= lit;
    }
  }
}

/** The gate of one call after the tenant's rules: class, floor and the rules that raised it. */
export interface RaisedGate {
  consentClass: VerbClass;
  roleFloor: Role;
  /** The matching rules that raised the class or the floor (empty: the declared gate stands). */
  raisedBy: GateRule[];
}

/**
 * Apply the tenant's rules for `verbName` to a call: the maximum of the declared class and floor
 * and every matching rule's. A READ or BLOCKED verb is never changed (reads run ungated; blocked
 * never runs).
 */
export function raiseGate(
  rules: readonly GateRule[] | undefined,
  verbName: string,
  declared: VerbClass,
  declaredFloor: Role,
  args: unknown,
): RaisedGate {
  const out: RaisedGate = { consentClass: declared, roleFloor: declaredFloor, raisedBy: [] };
  if (rules === undefined || rules.length === 0 || declared === 'READ' || declared === 'BLOCKED') return out;
  for (const rule of rules) {
    if (rule.verb !== verbName || !ruleMatches(rule, args)) continue;
    let raised = false;
    if (CLASS_RANK[rule.raise_to] > CLASS_RANK[out.consentClass]) {
      out.consentClass = rule.raise_to;
      raised = true;
    }
    const floor = rule.role_floor ?? CLASS_FLOOR[rule.raise_to];
    if (ROLE_RANK[floor] > ROLE_RANK[out.roleFloor]) {
      out.roleFloor = floor;
      raised = true;
    }
    if (raised) out.raisedBy.push(rule);
  }
  // The class's own floor comes with it.
  if (out.consentClass !== declared) {
    const classFloor = CLASS_FLOOR[out.consentClass as RaisableClass];
    if (ROLE_RANK[classFloor] > ROLE_RANK[out.roleFloor]) out.roleFloor = classFloor;
  }
  return out;
}

/** The words of a rule: "raised by rule big_charges (/amount_cents > 50000 → WRITE_FINANCIAL, owner)". */
export function describeRule(rule: GateRule): string {
  const op = { gt: '>', gte: '≥', lt: '<', lte: '≤', eq: '=', ne: '≠' }[rule.when.op];
  return `rule ${rule.id} (${rule.when.pointer} ${op} ${JSON.stringify(rule.when.value)} → ${rule.raise_to}${rule.role_floor ? `, ${rule.role_floor}` : ''})`;
}

/** The phrase of a call raised to a typed-phrase class when its verb declares no phrase builder. */
export function raisedPhrase(verbName: string, rules: readonly GateRule[]): string {
  return `RUN ${verbName} UNDER RULE ${rules.map((r) => r.id).join(', ')}`;
}

const RULE_ID = /^[a-z0-9][a-z0-9_-]{0,39}$/;

/**
 * Check a rule list as the owner sent it (tenant.gate_rules_set). Throws VerbError invalid_input
 * with the JSON Pointer of the first bad member: unknown verb, an id reused, a pointer that is not
 * a JSON Pointer, an order operator with a literal that is not a number, a rule on a READ or
 * BLOCKED verb or one that would not raise anything.
 */
export function checkGateRules(
  rules: readonly GateRule[],
  verbOf: (name: string) => { consentClass: VerbClass; roleFloor: Role } | undefined,
): void {
  const bad = (i: number, member: string, message: string): never => {
    throw new VerbError('invalid_input', `Rule ${i + 1}: ${message}`, {
      details: { path: `/rules/${i}${member}` },
    });
  };
  if (rules.length > MAX_GATE_RULES) bad(MAX_GATE_RULES, '', `at most ${MAX_GATE_RULES} rules per tenant.`);
  const seen = new Set<string>();
  rules.forEach((rule, i) => {
    if (!RULE_ID.test(rule.id)) bad(i, '/id', 'the id is lower-case letters, digits, _ and -, at most 40.');
    if (seen.has(rule.id)) bad(i, '/id', `the id ${rule.id} is used twice.`);
    seen.add(rule.id);
    const verb = verbOf(rule.verb);
    if (verb === undefined) bad(i, '/verb', `no verb named ${rule.verb}.`);
    if (verb!.consentClass === 'READ' || verb!.consentClass === 'BLOCKED')
      bad(i, '/verb', `${rule.verb} is ${verb!.consentClass}: a rule raises the gate of a gated write only.`);
    if (rule.when.pointer !== '' && !/^(\/([^~/]|~[01])*)+$/.test(rule.when.pointer))
      bad(i, '/when/pointer', 'not a JSON Pointer (RFC 6901), e.g. /amount_cents.');
    if (!['eq', 'ne'].includes(rule.when.op) && typeof rule.when.value !== 'number')
      bad(i, '/when/value', `${rule.when.op} compares numbers: the value must be a number.`);
    const raised = raiseGate([rule], rule.verb, verb!.consentClass, verb!.roleFloor, undefined);
    const would = raiseGate(
      [{ ...rule, when: { pointer: '', op: 'ne', value: false } }],
      rule.verb,
      verb!.consentClass,
      verb!.roleFloor,
      {},
    );
    if (raised.raisedBy.length === 0 && would.raisedBy.length === 0)
      bad(
        i,
        '/raise_to',
        `${rule.verb} is already ${verb!.consentClass} with floor ${verb!.roleFloor}: this rule would raise nothing.`,
      );
  });
}

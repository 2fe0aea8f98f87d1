/**
 * UCP names for our verbs: the reverse-domain name patterns of UCP 2026-04-08 and 2026-08-25, the
 * specification's sub-agents (sales, ar, ap, service, commissions, compliance, marketing, ops),
 * the category → sub-agent mapping, the capability name of a verb
 * (`<namespace>.<sub-agent>.<capability>`), the `extends` rule, and the schema-URL authority
 * binding check.
 *
 * Spec: spec/transports.md §ucp-names; the UCP specification's naming rules (name patterns,
 * authority binding) for a non-shopping business's own capabilities.
 */
import type { CompiledVerb } from '../../runtime/verb.ts';

/** The UCP release our business profile declares. */
export const UCP_VERSION = '2026-08-25';
/** The older release we publish a leaf profile for (`supported_versions`). */
export const UCP_LEGACY_VERSION = '2026-04-08';

/** Reverse-domain name pattern of UCP 2026-08-25 (interior hyphens, digit-leading later segments). */
export const NAME_PATTERN_2026_08_25 =
  /^[a-z](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9_-]*[a-z0-9_])?)+$/;
/** Reverse-domain name pattern of UCP 2026-04-08 (no hyphens, segments start with a letter). */
export const NAME_PATTERN_2026_04_08 = /^[a-z][a-z0-9]*(?:\.[a-z][a-z0-9_]*)+$/;
/** UCP release dates look like this. */
export const VERSION_PATTERN = /^\d{4}-\d{2}-\d{2}$/;

/** The sub-agents of the solid-verbs specification (platform → company → sub-agent). */
export const SUB_AGENTS = [
  'sales',
  'ar',
  'ap',
  'service',
  'commissions',
  'compliance',
  'marketing',
  'ops',
] as const;
export type SubAgent = (typeof SUB_AGENTS)[number];

/**
 * Verb category → sub-agent. A category not listed here goes to `ops`. Operators override per
 * tenant with `settings.ucp.sub_agents` (keys: a category or a verb name; a verb name wins).
 */
export const CATEGORY_SUB_AGENT: Readonly<Record<string, SubAgent>> = {
  // sales: the customer relationship up to the sale
  crm: 'sales',
  deals: 'sales',
  deal: 'sales',
  sales: 'sales',
  customer: 'sales',
  customers: 'sales',
  contacts: 'sales',
  leads: 'sales',
  quotes: 'sales',
  quote: 'sales',
  // ar: money owed to the business
  invoices: 'ar',
  invoice: 'ar',
  payments: 'ar',
  payment: 'ar',
  billing: 'ar',
  refunds: 'ar',
  collections: 'ar',
  ar: 'ar',
  // ap: money the business owes, parts it buys
  inventory: 'ap',
  purchasing: 'ap',
  vendors: 'ap',
  suppliers: 'ap',
  bills: 'ap',
  expenses: 'ap',
  procurement: 'ap',
  ap: 'ap',
  // service: delivering the work
  scheduling: 'service',
  appointments: 'service',
  service: 'service',
  support: 'service',
  kb: 'service',
  tickets: 'service',
  dispatch: 'service',
  // commissions
  commissions: 'commissions',
  compensation: 'commissions',
  payroll: 'commissions',
  // compliance: privacy, consent, the audit trail
  gdpr: 'compliance',
  privacy: 'compliance',
  compliance: 'compliance',
  audit: 'compliance',
  consent: 'compliance',
  legal: 'compliance',
  // marketing: outbound communication
  email: 'marketing',
  marketing: 'marketing',
  campaigns: 'marketing',
  // ops: running the business and the runtime itself
  infrastructure: 'ops',
  subscriptions: 'ops',
  team: 'ops',
  analytics: 'ops',
  system: 'ops',
  events: 'ops',
  macros: 'ops',
  agent: 'ops',
  telemetry: 'ops',
  ops: 'ops',
};

/** True when `name` is a valid UCP reverse-domain name for `version` (default 2026-08-25). */
export function isUcpName(name: string, version: string = UCP_VERSION): boolean {
  return (version === UCP_LEGACY_VERSION ? NAME_PATTERN_2026_04_08 : NAME_PATTERN_2026_08_25).test(name);
}

/**
 * Check an operator namespace (e.g. `com.example`): a valid 2026-08-25 name, not under the
 * reserved `dev.ucp`. Returns the problem in words, or undefined when it is fine.
 */
export function namespaceProblem(namespace: string): string | undefined {
  if (!NAME_PATTERN_2026_08_25.test(namespace)) {
    return `namespace ${JSON.stringify(namespace)} is not a reverse-domain name (e.g. com.example; lower-case labels separated by dots)`;
  }
  if (namespace === 'dev.ucp' || namespace.startsWith('dev.ucp.'))
    return 'the dev.ucp namespace is reserved for the UCP governing body';
  return undefined;
}

/** The sub-agent of a verb: per-verb override, per-category override, the default map, else ops. */
export function subAgentOf(
  verb: Pick<CompiledVerb, 'name' | 'category'>,
  overrides: Readonly<Record<string, SubAgent>> = {},
): SubAgent {
  return (
    overrides[verb.name] ??
    overrides[verb.category] ??
    CATEGORY_SUB_AGENT[verb.category.toLowerCase()] ??
    'ops'
  );
}

/** The capability segment of a verb name: lower-case, dots become `_` (`customer.full_context` → `customer_full_context`). */
export function capabilitySegment(verbName: string, dotAs: '_' | '__' = '_'): string {
  return verbName
    .toLowerCase()
    .replace(/\./g, dotAs)
    .replace(/[^a-z0-9_]/g, '_');
}

/** One verb projected as a UCP capability. */
export interface CapabilityEntry {
  /** `<namespace>.<sub-agent>.<segment>`, e.g. `com.example.sales.crm_contact_update`. */
  name: string;
  /** The service it belongs to: `<namespace>.<sub-agent>`. */
  service: string;
  subAgent: SubAgent;
  verb: CompiledVerb;
  /** Capability names this one builds on (UCP `extends`), sorted; empty for a root capability. */
  extends: string[];
}

/** What the catalog needs from the tenant's UCP settings. */
export interface CatalogOptions {
  namespace: string;
  subAgents?: Readonly<Record<string, SubAgent>>;
  /** Extra `extends` edges by verb name: `{ "<verb>": ["<parent verb>", …] }`. */
  extends?: Readonly<Record<string, readonly string[]>>;
}

/**
 * Project the verbs exposed on `ucp` as capabilities, sorted by name.
 *
 * Naming: `<namespace>.<sub-agent>.<segment>` where segment is the verb name lower-cased with
 * dots as `_`. When two verbs would share a name, those verbs use `__` for their dots (the tool
 * name projection, unique in the registry); a remaining clash (names differing only by case)
 * gets `_2`, `_3`… in verb-name order. Deterministic for a given verb set.
 *
 * `extends` (a capability that only makes sense with another one):
 *   - a preview verb extends every write whose definition names it as its `preview`;
 *   - `options.extends` adds edges by verb name (operator's choice).
 * Edges to verbs not exposed on ucp, self-edges and edges closing a cycle are dropped.
 */
export function buildCapabilityCatalog(
  verbs: readonly CompiledVerb[],
  options: CatalogOptions,
): CapabilityEntry[] {
  const exposed = verbs
    .filter((v) => v.surfaces.includes('ucp'))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const overrides = options.subAgents ?? {};
  const first = exposed.map((verb) => {
    const subAgent = subAgentOf(verb, overrides);
    return { verb, subAgent, base: `${options.namespace}.${subAgent}` };
  });
  const nameOf = new Map<string, string>();
  const count = (names: Map<string, string>) => {
    const n = new Map<string, number>();
    for (const v of names.values()) n.set(v, (n.get(v) ?? 0) + 1);
    return n;
  };
  for (const e of first) nameOf.set(e.verb.name, `${e.base}.${capabilitySegment(e.verb.name)}`);
  let counts = count(nameOf);
  for (const e of first) {
    if (counts.get(nameOf.get(e.verb.name)!)! > 1)
      nameOf.set(e.verb.name, `${e.base}.${capabilitySegment(e.verb.name, '__')}`);
  }
  counts = count(nameOf);
  const seen = new Map<string, number>();
  for (const e of first) {
    const name = nameOf.get(e.verb.name)!;
    if (counts.get(name)! > 1) {
      const k = (seen.get(name) ?? 0) + 1;
      seen.set(name, k);
      if (k > 1) nameOf.set(e.verb.name, `${name}_${k}`);
    }
  }
  const parents = new Map<string, Set<string>>();
  const addEdge = (child: string, parent: string) => {
    if (child === parent || !nameOf.has(child) || !nameOf.has(parent)) return;
    if (reaches(parents, parent, child)) return; // would close a cycle
    let set = parents.get(child);
    if (set === undefined) parents.set(child, (set = new Set()));
    set.add(parent);
  };
  for (const { verb } of first) {
    const preview = verb.definition.preview;
    if (preview !== undefined) addEdge(preview, verb.name);
  }
  for (const [child, list] of Object.entries(options.extends ?? {}))
    for (const parent of list) addEdge(child, parent);
  return first
    .map(({ verb, subAgent, base }) => ({
      name: nameOf.get(verb.name)!,
      service: base,
      subAgent,
      verb,
      extends: [...(parents.get(verb.name) ?? [])].map((p) => nameOf.get(p)!).sort(),
    }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Is `to` reachable from `from` following parent edges? */
function reaches(parents: ReadonlyMap<string, ReadonlySet<string>>, from: string, to: string): boolean {
  const stack = [from];
  const seen = new Set<string>();
  while (stack.length > 0) {
    const cur = stack.pop()!;
    if (cur === to) return true;
    if (seen.has(cur)) continue;
    seen.add(cur);
    for (const p of parents.get(cur) ?? []) stack.push(p);
  }
  return false;
}

/**
 * UCP 2026-08-25 authority binding of a `schema` URL to a name (2026-04-08 binds `spec` too):
 * the URL must be https without userinfo, its host a registered name of ≥ 2 labels (no IP
 * literal, no localhost); the host's labels reversed must equal the name or be a label-aligned
 * prefix of it (`com.example.pay` binds to `https://example.com/…` and `https://pay.example.com/…`,
 * not to `https://cdn.example.com/…`).
 */
export function authorityBinds(name: string, url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.protocol !== 'https:' || parsed.username !== '' || parsed.password !== '') return false;
  const host = parsed.hostname.toLowerCase().replace(/\.$/, '');
  if (
    host === '' ||
    host.startsWith('[') ||
    /^\d+(\.\d+){3}$/.test(host) ||
    host === 'localhost' ||
    host.endsWith('.localhost')
  )
    return false;
  const labels = host.split('.');
  if (labels.length < 2 || labels.some((l) => l === '')) return false;
  const prefix = labels.reverse().join('.');
  return name === prefix || name.startsWith(`${prefix}.`);
}

/**
 * A default namespace from a public base URL: the host's labels reversed (`https://api.example.com`
 * → `com.example.api`), or undefined when the host cannot name a namespace (IP, localhost, one label).
 */
export function namespaceFromUrl(url: string): string | undefined {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase().replace(/\.$/, '');
  } catch {
    return undefined;
  }
  if (
    host.startsWith('[') ||
    /^\d+(\.\d+){3}$/.test(host) ||
    host === 'localhost' ||
    host.endsWith('.localhost')
  )
    return undefined;
  const labels = host.split('.');
  if (labels.length < 2) return undefined;
  const ns = labels.reverse().join('.').replace(/_/g, '-');
  return namespaceProblem(ns) === undefined ? ns : undefined;
}

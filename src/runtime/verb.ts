/**
 * Authoring API for verbs: `defineVerb({...})` returns a definition the registry compiles.
 *
 * The public part of a definition becomes the VerbRecord (name, description, shape,
 * side_effects, input_schema, output_schema, surfaces, requires_consent, tier_floor); the
 * runtime-only part stays beside it (consent class, role floor, category, phrase builder, handler,
 * revert handler, secret fields). Spec: spec/manifest.md, spec/consent.md, spec/receipts.md.
 */
import type { GateRule } from './consent/gate-rules.ts';
import type { z, ZodType } from 'zod';
import type {
  JsonSchema,
  Principal,
  Role,
  Shape,
  SideEffect,
  Surface,
  Tier,
  VerbClass,
  WebmcpSurface,
} from '../spec/types.ts';
import type { Logger } from 'pino';
import type { Queryable } from '../store/store.ts';
import type { VerbRecord } from '../spec/types.ts';
import type { RuntimeCore, ToolsetSelection } from './core.ts';

/** A domain event a handler emits; stored with the write, in the same transaction. */
export interface EmittedEvent {
  type: string;
  entity_type: string;
  entity_id: number | string;
  payload?: Record<string, unknown>;
}

/**
 * What a verb handler receives: the contract a pack codes against (spec/manifest.md §handlers).
 * It is deliberately narrow — the call's store transaction, its principal, its clock and logger,
 * its domain events, outbox and revert data — so a pack cannot reach the runtime's ledger, keys or
 * registry. Built-in system verbs get the wider `SystemVerbContext` (src/runtime/verb.ts).
 */
export interface VerbContext {
  /** Who calls (from authentication only: company_id, user_id, role, agent, tier). */
  readonly principal: Principal;
  /**
   * The store: for a write, the ONE store transaction holding the verb's writes, its audit row,
   * events and idempotency record (all commit or none do); for a read, a committed-data view.
   */
  readonly db: Queryable;
  /** The dispatch clock: the same instant for every row this call writes (inject it in tests). */
  readonly now: Date;
  /** The runtime's logger (pino). Never log a secret field. */
  readonly logger: Logger;
  /** Aborted when the caller cancels. */
  readonly signal: AbortSignal;
  /** The verb being run. */
  readonly verb: CompiledVerb;
  /** The idempotency_key of this write (writes only). */
  readonly idempotencyKey?: string;
  /** Emit a domain event, committed with this write (reads may not emit). spec/events.md */
  emit(event: EmittedEvent): void;
  /** Queue a side effect that cannot live in a database transaction (email, webhook); delivered after commit. */
  outbox(kind: string, payload: Record<string, unknown>): void;
  /**
   * Declare how to undo this write: `handle` is the human-readable body of the rollback_handle
   * (e.g. `infra:resize:1:s-2vcpu-4gb`; the runtime authenticates it), `data` is what the revert
   * handler needs (stored privately, not in the receipt). spec/receipts.md §rollback_handle
   */
  setRollback(handle: string, data: Record<string, unknown>): void;
  /** Set the entity this action acted on (for the audit and explain). */
  setEntity(entityType: string, entityId: number | string): void;
  /**
   * The manifest this runtime serves (spec-valid VerbRecords, every surface, sorted by name), for
   * a verb that describes other verbs (e.g. which verbs a tier upgrade unlocks). spec/manifest.md
   */
  manifest(): readonly VerbRecord[];
  /**
   * Say this write changed who a principal is (a tenant's tier, a key's role): the runtime drops
   * its cached principals once the write commits (at once for a read). Tier and role floors then
   * follow the change on the next call.
   */
  principalsChanged(): void;
  /** The transport surface of the call ('internal' for runtime-internal calls); verbs that run other verbs check it. */
  readonly surface?: Surface | 'internal';
  /** WebMCP only: the page surface of the call; verbs that run other verbs pass it on, so each step must list it too. */
  readonly webmcpSurface?: WebmcpSurface;
  /**
   * The consent reply sent with this call (confirm, nonce, typed_phrase), for verbs that relay
   * consent to the verbs they run (macros.run resuming a paused step). It comes from the
   * transport's own options, never from arguments: transports decide where a typed phrase may come
   * from (MCP never passes one typed by the model). spec/consent.md §protocol
   */
  readonly consentReply?: { confirm?: boolean; nonce?: string; typed_phrase?: string };
  /** Report progress of a long verb (MCP progress notifications). */
  progress(done: number, total?: number, message?: string): void;
}

/**
 * What a built-in system verb receives (src/verbs, the ledger's revert and transaction verbs):
 * the pack contract plus the runtime itself (registry, ledger, secrets, observers). Every context
 * the pipeline builds is one; `defineSystemVerb` types a handler on it. Packs use VerbContext.
 */
export interface SystemVerbContext extends VerbContext {
  /** The runtime (system verbs use it for the registry, ledger, secrets, observers). */
  readonly runtime: RuntimeCore;
  /**
   * The transport's narrowing of this call (MCP toolsets, X-MCP-Readonly), for a delegated
   * verb's consent to refuse a target first (deny wins; spec/consent.md §api-keys). Set on the
   * pipeline's read context only.
   */
  readonly narrowing?: { toolsets?: ToolsetSelection; readOnly?: boolean };
}

/** What a verb's `activity` hook may read: its tenant's rows (SELECT only). */
export interface ActivityRead {
  readonly db: Pick<Queryable, 'get' | 'all'>;
  readonly company_id: number;
}

/** What a revert handler receives about the action it undoes. */
export interface OriginalAction {
  audit_id: number;
  verb: string;
  args: Record<string, unknown>;
  /** The data given to `setRollback`. */
  rollback: Record<string, unknown>;
  rollback_handle: string | null;
  entity_type: string | null;
  entity_id: string | null;
  created_at: string;
}

/** How a write is undone by `audit.revert`: `handler(ctx, original)` runs in the revert's own transaction with the write's `original.rollback` data (set by `ctx.setRollback`) and returns `{ revert_action }`. spec/receipts.md §revert */
export interface RevertDefinition {
  /** Undo the action inside the revert's own store transaction. Return a sentence describing the undo. */
  handler: (
    ctx: VerbContext,
    original: OriginalAction,
  ) => Promise<{ revert_action: string; [k: string]: unknown }>;
  /** Typed phrase for reverting (typed-phrase classes). Default: `REVERT <verb> #<audit_id>`. */
  phrase?: (original: OriginalAction) => string;
  /**
   * The change this action made, before → after, in the owner's words, from its revert data and
   * arguments (no store access): e.g. `Phone of Ada Lovelace: +1 555 0100 → +1 555 0199`. The
   * undo dialog (audit.revert's consent summary) shows it in place of the verb's summary; absent,
   * or answering undefined / '' / throwing, the summary is shown. Synchronous and pure: it runs
   * before consent is asked. docs/authoring.md §describe, spec/receipts.md §revert.
   */
  describe?: (original: OriginalAction) => string | undefined;
  /**
   * The action only adds something of its own to its entity (a note on a contact) and the undo
   * removes just that. Two additive actions on one entity commute: a later additive write is no
   * changed_since for this undo, and a forced revert over any other later write keeps that write
   * (the answer names it as kept, never as discarded). Default false: the undo puts the entity
   * back as it was, discarding any later write to it. spec/receipts.md §revert rule 7.
   */
  additive?: boolean;
}

/** Consent decision delegated to the target (audit.revert, transaction.append, macros.run). */
export interface DelegatedConsent {
  /** The class whose gate applies; null = no gate at this level (each step is gated itself). */
  consentClass: VerbClass | null;
  roleFloor: Role;
  tierFloor?: Tier;
  phrase?: string;
  summary: string;
  /** The verb whose daily cap this counts against, when any. */
  capClass?: VerbClass;
  /** The target's agent free text (its `agent_text` arguments, by name), shown apart from the summary. */
  agentText?: Record<string, string>;
  /** The owner's conditional-gate rules that raised the target's gate. spec/consent.md §conditional-gates */
  raisedBy?: GateRule[];
  /**
   * The verbs this call reaches (the action undone and each of its steps, a transaction step, the
   * steps of a macro): the scope step refuses the call when the credential could not call one of
   * them itself (spec/consent.md §api-keys).
   */
  targets?: readonly string[];
}

/** A verb as a pack declares it (pass it to `defineVerb`): name, description, shape, category, input schema (JSON Schema or zod 4), consent class, phrase/summary builders, preview, revert and the handler `(ctx, args) => result`. Registration checks it (RegistrationError). spec/manifest.md §registration */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a verb without declared types takes any args
export interface VerbDefinition<A = any, R = any> {
  /** `{domain}.{verb}` or snake_case; ^[a-zA-Z][a-zA-Z0-9_.]*$ */
  name: string;
  /** For an LLM: what the verb does, when to use it, what it returns. */
  description: string;
  /** Short human title (MCP `title`). */
  title?: string;
  shape: Shape;
  /** Category for the audit log and catalogue (crm, payments, system…). */
  category: string;
  /** JSON Schema (2020-12, OpenAI-compatible subset) or a zod 4 object schema. */
  input: JsonSchema | ZodType;
  /** Output schema; defaults to the shape's schema. */
  output?: JsonSchema;
  /** Consent class. Default READ. Write shapes must declare one (or delegate). */
  consent?: VerbClass;
  /** Consent decided per call from the target action (system verbs only). */
  delegateConsent?: (ctx: VerbContext, args: A) => Promise<DelegatedConsent>;
  /**
   * A delegated verb that never asks for consent (its delegateConsent always answers class null)
   * says so, with the reason in words: its VerbRecord then says `requires_consent: false` and the
   * description ends with "No consent gate: <reason>". The floors step refuses (internal error) a
   * call where such a verb answers a class. spec/manifest.md §consistency
   */
  ungated?: string;
  /** Default from the class: READ → read, others → write (mixed when a revert handler exists). */
  side_effects?: SideEffect;
  /** Default all five. */
  surfaces?: Surface[];
  /** WebMCP page surfaces (default ['dashboard']). */
  webmcp_surfaces?: WebmcpSurface[];
  tier_floor?: Tier;
  /** Default from the class: READ read_only, WRITE_REVERSIBLE employee, WRITE_FINANCIAL admin, IRREVERSIBLE owner. */
  role_floor?: Role;
  /**
   * Not counted against the tenant's daily caps: governance verbs an owner must be able to run
   * after a runaway agent used the cap up (raising a cap, blocking a verb). Still gated and audited.
   * spec/consent.md §caps
   */
  cap_exempt?: boolean;
  /**
   * Which way a WRITE_FINANCIAL verb moves the business's money, for the owner's day
   * (audit.money_moved): `in` (a charge: money received), `out` (a refund, a payout: money paid
   * back). Undeclared: counted as `other` (moved, neither charged nor refunded).
   */
  money_flow?: 'in' | 'out';
  /** Typed phrase from the args; required for WRITE_FINANCIAL and IRREVERSIBLE. */
  phrase?: (args: A) => string;
  /**
   * Plain-language description of what will happen (pending answers, approvals, dialogs): the
   * sentence a human consents to, built from typed, validated fields only — never from the
   * `agent_text` arguments (a summary quoting one is replaced by the generic one).
   */
  summary?: (args: A) => string;
  /**
   * The action in the owner's words for the Activity log and receipts (audit.trail `words`),
   * naming what it touched — the customer by name, the object, the amount: e.g. `Charge $159.00
   * by card to Ada Lovelace (invoice #314)` where the summary says `… to invoice #314`. Reads
   * only: `read.db` answers SELECTs, always filtered by `read.company_id` (the caller's tenant).
   * `args` are the audited (redacted) arguments. Undefined, '' or a throw: the summary is shown.
   * Never quote `agent_text` arguments. docs/authoring.md §activity.
   */
  activity?: (read: ActivityRead, args: A) => Promise<string | undefined>;
  /**
   * Top-level string arguments that are the agent's own free text (a refund's reason, a note):
   * shown apart from the summary in pending answers, approvals and forms, labelled as the agent's
   * words, never part of the sentence consented to. spec/consent.md §pending
   */
  agent_text?: readonly string[];
  /** Name of the preview verb for this write (its output is attached to pending answers). */
  preview?: string;
  /** Arg fields redacted in the audit log (dotted paths). */
  secret_fields?: string[];
  /**
   * Top-level result members shown once, to this caller only (a new API key): taken out of the
   * receipt before it is signed, stored, kept for idempotent replay or audited, and returned in
   * the envelope's `secret` member instead. A replay and a transaction step do not get them.
   * spec/envelope.md §secret
   */
  secret_result?: string[];
  /** The handler. Reads get a committed-data view; writes run inside the one store transaction. */
  handler: (ctx: VerbContext, args: A) => Promise<R>;
  /**
   * For a write with no revert that another verb undoes (a charge, undone by its refund): that
   * verb and its arguments taken from this action's signed receipt — `args` maps each of its
   * argument names to a top-level member of the receipt — with the button's words. The
   * dashboard's receipt view offers it as one gated action (the other verb's own consent gate:
   * for a refund, the typed phrase a human types). Data only, served in the catalogue.
   * docs/authoring.md §undone_by.
   */
  undone_by?: { verb: string; args: Readonly<Record<string, string>>; label: string };
  /** Revert handler; absent = not revertible (audit.revert refuses with not_revertible). */
  revert?: RevertDefinition;
  /** Calling twice with the same args has no further effect (MCP idempotentHint). */
  idempotent?: boolean;
  /** Touches systems outside this runtime (email, payments network) (MCP openWorldHint). */
  open_world?: boolean;
  /** Output may contain third-party text (WebMCP untrustedContentHint). */
  untrusted_content?: boolean;
  /** CLI shortcut: command words and positional argument names. */
  cli?: { command: string[]; positional?: string[] };
  /** Read verbs only: may run inside a transaction commit? (never for writes) */
  internal?: boolean;
  /**
   * Run the handler outside any store transaction or snapshot (default false): `ctx.db` reads
   * committed data statement by statement, the handler opens its own writes
   * (`ctx.runtime.store.write`) and may wait (events.poll long-poll) or dispatch other verbs
   * (macros.run) without holding the write lock or a connection. A write verb with it must
   * delegate consent with class null: every call it makes passes its own gates. Its envelope
   * carries the audit_id but no receipt fields or idempotency. spec/shapes.md §macro
   */
  detached?: boolean;
}

/** A verb after registration: the public record plus compiled runtime facts. */
export interface CompiledVerb {
  readonly definition: VerbDefinition;
  readonly name: string;
  readonly shape: Shape;
  readonly category: string;
  readonly consentClass: VerbClass;
  readonly delegated: boolean;
  readonly isWrite: boolean;
  readonly roleFloor: Role;
  readonly tierFloor: Tier;
  readonly surfaces: readonly Surface[];
  readonly webmcpSurfaces: readonly WebmcpSurface[];
  readonly inputSchema: JsonSchema;
  readonly outputSchema: JsonSchema;
  /** The spec-valid manifest entry. */
  readonly record: import('../spec/types.ts').VerbRecord;
  /** Tool name accepted by OpenAI/Claude/Gemini (dots projected). */
  readonly toolName: string;
  /** Check arguments against the input schema, compiled on the first call (checked at registration); defaults applied in place; false when invalid. */
  readonly validate: (args: unknown) => boolean;
  /** The errors of the last failed `validate` (the first one only: the envelope names one JSON Pointer). */
  readonly validateErrors: () => import('ajv').ErrorObject[] | null | undefined;
  /** The output schema, compiled at registration when the runtime's validateOutputs is on, else on first use. */
  readonly validateOutput: (result: unknown) => boolean;
  /** The errors of the last `validateOutput` call that failed. */
  readonly outputErrors: () => import('ajv').ErrorObject[] | null | undefined;
  readonly secretPaths: readonly string[][];
  readonly revertible: boolean;
}

/**
 * Define a verb (spec/manifest.md): returns the definition as given, typed; `rt.register(...)`
 * (or a pack's `verbs`) validates and compiles it, and refuses a bad one with a RegistrationError
 * naming the verb and the field (a name that is not `{domain}.{verb}`, a write without a consent
 * class, `company_id`/`user_id` in the input schema, a typed-phrase class without `phrase`, …).
 *
 * With a zod 4 object schema as `input`, the handler's `args` (and `phrase`, `summary`) are typed
 * from it: `args.idd` for a field `id` fails to compile. With a JSON Schema (2020-12) `input`,
 * give the argument type yourself: `defineVerb<{ id: number }>({...})` (default `any`).
 *
 *   const lookup = defineVerb({
 *     name: 'books.lookup', description: 'Find a book by id.', shape: 'aggregate', category: 'books',
 *     input: z.object({ book_id: z.number().int() }),
 *     handler: async (ctx, args) => ({ data: await ctx.db.get('SELECT * FROM books WHERE id = ?', [args.book_id]), sources: [] }),
 *   });
 */
export function defineVerb<S extends ZodType, R = any>( // eslint-disable-line @typescript-eslint/no-explicit-any -- see VerbDefinition
  definition: VerbDefinition<z.output<S>, R> & { input: S },
): VerbDefinition<z.output<S>, R>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see VerbDefinition
export function defineVerb<A = any, R = any>(
  definition: VerbDefinition<A, R> & { input: JsonSchema & { _zod?: never } },
): VerbDefinition<A, R>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see VerbDefinition
export function defineVerb(definition: VerbDefinition<any, any>): VerbDefinition<any, any> {
  return definition;
}

/** A system verb's definition: as VerbDefinition, with its handlers typed on SystemVerbContext. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see VerbDefinition
export type SystemVerbDefinition<A = any, R = any> = Omit<
  VerbDefinition<A, R>,
  'handler' | 'delegateConsent' | 'revert'
> & {
  handler: (ctx: SystemVerbContext, args: A) => Promise<R>;
  delegateConsent?: (ctx: SystemVerbContext, args: A) => Promise<DelegatedConsent>;
  revert?: Omit<RevertDefinition, 'handler'> & {
    handler: (
      ctx: SystemVerbContext,
      original: OriginalAction,
    ) => Promise<{ revert_action: string; [k: string]: unknown }>;
  };
};

/**
 * Identity helper that types a built-in system verb: its handlers see the runtime
 * (SystemVerbContext). Sound because every context the pipeline builds is a SystemVerbContext;
 * packs use `defineVerb`, whose handlers see only VerbContext.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see VerbDefinition
export function defineSystemVerb<A = any, R = any>(
  definition: SystemVerbDefinition<A, R>,
): VerbDefinition<A, R> {
  SYSTEM_DEFINITIONS.add(definition);
  return definition as unknown as VerbDefinition<A, R>;
}

/**
 * The definitions made by defineSystemVerb (the runtime's own verbs, shipped with it). Their input
 * schemas are checked against the meta-schema by the test suite (test/runtime/registry.test.ts),
 * so registration skips that check for them and a command that registers only them never compiles
 * the 2020-12 meta-schema at start-up; any other definition is checked when registered.
 */
const SYSTEM_DEFINITIONS = new WeakSet<object>();

/** Was `definition` made by defineSystemVerb (not copied or changed since)? */
export function isSystemDefinition(definition: object): boolean {
  return SYSTEM_DEFINITIONS.has(definition);
}

/** Default role floor of each consent class. spec/consent.md §role-floors */
export const ROLE_FLOOR_OF_CLASS: Readonly<Record<VerbClass, Role>> = {
  READ: 'read_only',
  WRITE_REVERSIBLE: 'employee',
  WRITE_FINANCIAL: 'admin',
  IRREVERSIBLE: 'owner',
  BLOCKED: 'owner',
};

export const ROLE_RANK: Readonly<Record<Role, number>> = { read_only: 0, employee: 1, admin: 2, owner: 3 };
export const TIER_RANK: Readonly<Record<Tier, number>> = { starter: 0, professional: 1, enterprise: 2 };

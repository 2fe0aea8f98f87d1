/**
 * The types the pipeline, its steps and the ledger share with the transports: who calls
 * (`Caller`), the per-call options (`DispatchOptions`) and what the observe hooks receive
 * (`DispatchOutcome`). Defined here, below dispatch.ts, so the ledger and the observers never
 * import the pipeline; the transports import them from here too.
 *
 * `RuntimeCore` is the runtime as they see it.
 *
 * Spec: spec/envelope.md, spec/consent.md §protocol, spec/transports.md.
 */
import type { Logger } from 'pino';
import type { Envelope, Principal, Role, Surface, Tier, WebmcpSurface } from '../spec/types.ts';
import type { Queryable, Store } from '../store/store.ts';
import type { CompiledVerb, VerbDefinition } from './verb.ts';
import type { Registry } from './registry.ts';
import type { Secrets } from './secrets.ts';
import type { TenantKeys } from './ledger/keys/tenant-keys.ts';
import type { TenantSettings, Tenants } from './tenants.ts';
import type { ConsentSettings } from '../identity/consent-predicate.ts';
import type { InflightKeys } from './ledger/write/idempotency.ts';
import type { ReadAuditBuffer } from './ledger/write/read-audit-buffer.ts';
import type { AuditRow } from './ledger/write/audit.ts';
import type { Observers } from './observe/observers.ts';
import type { OutboxHandlerOf } from './ledger/write/outbox.ts';

/** Who calls and how: built by the transport from its own authentication. */
export interface Caller {
  /** The authenticated principal; undefined/null → the sandbox principal (reads only). */
  principal?: Principal | null;
  /** The transport surface, or 'internal' for runtime-internal calls (macros, tests). */
  surface: Surface | 'internal';
  /** WebMCP only: the page surface the call came from; the verb must list it in webmcp_surfaces (spec/transports.md §webmcp). */
  webmcpSurface?: WebmcpSurface;
  /** MCP only: the toolsets the server was started with; a verb they do not admit is surface_denied (spec/transports.md §mcp-toolsets). */
  toolsets?: ToolsetSelection;
  /**
   * MCP over HTTP only: the session asked to be read-only (`X-MCP-Readonly`); a write verb, or a
   * delegated call reaching one, is scope_denied (spec/consent.md §api-keys). Narrows, never widens.
   */
  readOnly?: boolean;
  signal?: AbortSignal;
  /** Receives the verb's `ctx.progress` reports (MCP progress notifications). */
  onProgress?: (done: number, total?: number, message?: string) => void;
  /**
   * The client address the transport saw (HTTP: `req.ip`, which honours `trustProxy`). Only
   * used to group repeated unauthenticated failures into one audit window (spec/audit.md
   * §auth-failure-windows); never part of authentication.
   */
  address?: string;
  /**
   * The largest result (bytes of its JSON) the transport can send for this call, when it has such
   * a limit (MCP: its `limits.maxResultBytes`). A write whose result is larger is refused
   * `result_too_large` inside its transaction and rolls back, so nothing commits whose answer
   * cannot be sent. The runtime's own `maxResultBytes` applies too.
   */
  maxResultBytes?: number;
}

/** The verb categories (toolsets) an MCP server exposes; built by src/transports/mcp/toolsets.ts. */
export interface ToolsetSelection {
  /** The enabled toolset names, sorted. */
  readonly names: readonly string[];
  /** Is this verb reachable (its category is enabled, or it is a core verb)? */
  admits(verb: CompiledVerb): boolean;
  /** The request narrowed the server's selection (X-MCP-Toolsets): refusals point at the header. */
  readonly byRequest?: boolean;
}

/** Per-call options beside the args (spec/consent.md §protocol, spec/idempotency.md). */
export interface DispatchOptions {
  confirm?: boolean;
  nonce?: string;
  typed_phrase?: string;
  idempotency_key?: string;
  /**
   * Set by a transport whose caller cannot send a confirmation (an MCP tools/call with no consent
   * keys in `_meta`: agent frameworks pass none): the consent step then treats an identical call
   * by the same principal as the retry of its earlier pending answer — completed after a human
   * approved it, or (a confirmation gate under confirmation_channel `any`) as the agent's
   * confirmation while that answer's nonce lives. Never read from a request body or arguments.
   * spec/consent.md §plain-retry
   */
  plain_retry?: boolean;
}

/** What the observe hooks receive after every dispatch. */
export interface DispatchOutcome {
  verb: string;
  shape: string | null;
  consent_class: string | null;
  company_id: number;
  user_id: number | null;
  agent_type: string | null;
  ok: boolean;
  reason: string | null;
  denial: boolean;
  latency_ms: number;
  audit_id: number | null;
  surface: string;
  at: number;
}

/** The resolved runtime options the pipeline reads (RuntimeOptions with their defaults applied). */
export interface RuntimeSettings {
  validateOutputs: boolean;
  readAuditFlushMs: number;
  readAuditBatch: number;
  checkpointEvery: number;
  checkpointIntervalMs: number;
  idempotencyTtlSeconds: number;
  nonceTtlSeconds: number;
  /**
   * The server's public base URL (`http://localhost:4400`, no trailing slash) when known: pending
   * answers then carry `consent.approval_url`. `solid serve` sets it once it listens
   * (`--public-url`, else its address with host `localhost`). spec/consent.md §approval-page
   */
  publicUrl?: string;
  /** Largest write result (bytes of its JSON) that may commit; see RuntimeOptions.maxResultBytes. */
  maxResultBytes: number;
}

/**
 * What the pipeline steps, the ledger, the observers and the system verbs (`ctx.runtime`) use of
 * the runtime. `Runtime` (runtime.ts) implements it; nothing under src/runtime but runtime.ts
 * needs the class itself.
 */
export interface RuntimeCore {
  readonly store: Store;
  readonly registry: Registry;
  readonly secrets: Secrets;
  /** Tenant signing keys (receipts, checkpoints). */
  readonly keys: TenantKeys;
  readonly tenants: Tenants;
  readonly logger: Logger;
  readonly clock: () => Date;
  /** Aborted when the runtime starts shutting down (beginClose): long waits answer at once. */
  readonly closing: AbortSignal;
  readonly options: RuntimeSettings;
  /** Caller-keyed writes running on this node (idempotency_key_in_use). */
  readonly inflight: InflightKeys;
  /** Buffered audit rows of reads (spec/audit.md §read-rows). */
  readonly auditBuffer: ReadAuditBuffer;
  /** Reputation, telemetry and span hooks. */
  readonly observers: Observers;
  /** A Queryable that runs each statement against committed data. */
  readonly readView: Queryable;
  /** Dispatch one call through the whole pipeline (macros dispatch their steps so). */
  dispatch(caller: Caller, verb: string, args?: unknown, options?: DispatchOptions): Promise<Envelope>;
  /** The keyless principal (read_only on the sandbox tenant); throws auth_required when none. */
  sandboxPrincipal(): Promise<Principal>;
  /** Is this name blocked for this tenant (global list, runtime option, tenant settings)? */
  isBlocked(name: string, companyId: number): Promise<boolean>;
  /**
   * The tenant's stored settings the consent predicate reads (`phrase_channel`,
   * `confirmation_channel`), cached like every tenant setting. spec/consent.md §channels
   */
  consentSettings(companyId: number): Promise<ConsentSettings>;
  /** The preview a write verb declares, for pending answers; undefined when none. */
  previewFor(
    verb: CompiledVerb,
    principal: Principal,
    args: Record<string, unknown>,
    caller: Caller,
  ): Promise<Record<string, unknown> | undefined>;
  /** Tell the onDispatch observers of an outcome. */
  observe(o: DispatchOutcome): void;
  /** After each committed audit row: row observers and checkpoint cadence. */
  afterWrite(row: AuditRow): void;
  /** Deliver pending outbox rows soon (after commit). */
  kickOutbox(): void;
  /** Subscribe to every dispatch outcome. Returns an unsubscribe. */
  onDispatch(fn: (o: DispatchOutcome) => void): () => void;
  /** Subscribe to every committed audit row. Returns an unsubscribe. */
  onAuditRow(fn: (row: AuditRow) => void): () => void;
}

/** Delivers one outbox row after commit; `meta.runtime` lets a pack's handler record the outcome (its own store write). */
export type OutboxHandler = OutboxHandlerOf<PackRuntime>;

/**
 * The runtime a pack sees (its seed, its outbox handlers; pack.ts installs it): RuntimeCore plus
 * registration, the outbox handlers and the tenant and key creation a seed needs.
 */
export interface PackRuntime extends RuntimeCore {
  readonly outboxHandlers: Map<string, OutboxHandler>;
  /** Register verbs (validated and compiled now; last write wins). */
  register(...definitions: VerbDefinition[]): void;
  /** Create a tenant with its chain head and an active signing key. */
  createTenant(t: {
    company_id?: number;
    name: string;
    tier: Tier;
    settings?: TenantSettings;
  }): Promise<{ company_id: number; name: string; tier: Tier }>;
  /** Create an API key for a user of a tenant; the plaintext key is returned once. */
  createApiKey(k: {
    company_id: number;
    user_id: number;
    role: Role;
    agent_type?: string;
    name?: string;
  }): Promise<string>;
}

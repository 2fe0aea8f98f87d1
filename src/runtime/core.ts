/**
 * The types the pipeline, its steps and the ledger share with the transports: who calls
 * (`Caller`), the per-call options (`DispatchOptions`) and what the observe hooks receive
 * (`DispatchOutcome`). Defined here, below dispatch.ts, so the ledger and the observers never
 * import the pipeline; dispatch.ts re-exports them for the transports.
 *
 * Spec: spec/envelope.md, spec/consent.md §protocol, spec/transports.md.
 */
import type { Principal, Surface, WebmcpSurface } from '../spec/types.ts';
import type { CompiledVerb } from './verb.ts';

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
   * Where a typed phrase in this call was typed, decided by the transport's own code — never read
   * from a request's args, body or headers: `human` for a channel a human types into (MCP
   * elicitation answered by the client's user, the dashboard session, the CLI's terminal prompt,
   * the WebMCP in-page dialog); absent = `agent`. Under the tenant setting `phrase_channel:
   * human` only a `human` call may carry a typed phrase and see one in a pending answer.
   * spec/consent.md §phrase-channel
   */
  phraseChannel?: PhraseChannel;
  signal?: AbortSignal;
  onProgress?: (done: number, total?: number, message?: string) => void;
  /**
   * The client address the transport saw (HTTP: `req.ip`, which honours `trustProxy`). Only
   * used to group repeated unauthenticated failures into one audit window (spec/audit.md
   * §auth-failure-windows); never part of authentication.
   */
  address?: string;
}

/** The verb categories (toolsets) an MCP server exposes; built by src/transports/mcp/toolsets.ts. */
export interface ToolsetSelection {
  /** The enabled toolset names, sorted. */
  readonly names: readonly string[];
  /** Is this verb reachable (its category is enabled, or it is a core verb)? */
  admits(verb: CompiledVerb): boolean;
}

/** Which kind of channel a call came through (Caller.phraseChannel). */
export type PhraseChannel = 'human' | 'agent';

/** Per-call options beside the args (spec/consent.md §protocol, spec/idempotency.md). */
export interface DispatchOptions {
  confirm?: boolean;
  nonce?: string;
  typed_phrase?: string;
  idempotency_key?: string;
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

/** What the pipeline steps and the ledger use of the runtime. */
export type RuntimeCore = import('./runtime.ts').Runtime;

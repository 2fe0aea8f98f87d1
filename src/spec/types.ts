/**
 * Wire types of the solid-verbs specification, named with the specification's words and kept in
 * the spec's snake_case end to end. They match the JSON Schemas in schema/ (a test checks the
 * enumerations against the schemas).
 *
 * Spec: spec/manifest.md (VerbRecord), spec/envelope.md, spec/shapes.md, spec/consent.md.
 */

/** The 13 verb shapes (the README's 12 plus telemetry). spec/shapes.md */
export const VALID_SHAPES = [
  'aggregate',
  'explain',
  'preview',
  'suggest',
  'transaction',
  'receipt',
  'revert',
  'subscribe',
  'discovery',
  'trail',
  'reputation',
  'macro',
  'telemetry',
] as const;
/** The shape of a verb: the kind of reasoning step and the output schema its result meets. spec/shapes.md */
export type Shape = (typeof VALID_SHAPES)[number];

/** spec/manifest.md §record (side_effects) */
export const VALID_SIDE_EFFECTS = ['read', 'write', 'mixed'] as const;
/** What a verb does to state: `read`, `write`, or `mixed` (a write with a revert). spec/manifest.md §record */
export type SideEffect = (typeof VALID_SIDE_EFFECTS)[number];

/** The five transports a verb can be projected onto. spec/transports.md */
export const VALID_SURFACES = ['http', 'mcp_stdio', 'webmcp', 'ucp', 'cli'] as const;
/** A transport a verb is projected onto: `http`, `mcp_stdio`, `webmcp`, `ucp`, `cli`. spec/transports.md */
export type Surface = (typeof VALID_SURFACES)[number];

/** Consent classes (risk classes). spec/consent.md §classes */
export const VERB_CLASSES = [
  'READ',
  'WRITE_REVERSIBLE',
  'WRITE_FINANCIAL',
  'IRREVERSIBLE',
  'BLOCKED',
] as const;
/** A consent class: `READ`, `WRITE_REVERSIBLE`, `WRITE_FINANCIAL`, `IRREVERSIBLE`, `BLOCKED`. spec/consent.md §classes */
export type VerbClass = (typeof VERB_CLASSES)[number];
/** Alias using the spec's words. */
export type ConsentClass = VerbClass;

/** Subscription tiers, lowest first. spec/manifest.md §record (tier_floor) */
export const TIERS = ['starter', 'professional', 'enterprise'] as const;
/** A tenant's subscription tier, lowest first: `starter`, `professional`, `enterprise`. spec/manifest.md §record */
export type Tier = (typeof TIERS)[number];

/** Principal roles, lowest first. spec/consent.md §roles */
export const ROLES = ['read_only', 'employee', 'admin', 'owner'] as const;
/** A principal's role, lowest first: `read_only`, `employee`, `admin`, `owner`. spec/consent.md §roles */
export type Role = (typeof ROLES)[number];

/** WebMCP page surfaces a verb may be exposed on. spec/transports.md §webmcp */
export const WEBMCP_SURFACES = ['dashboard', 'portal', 'developer', 'tenant-site', 'public'] as const;
/** A WebMCP page a verb may be exposed on (`dashboard`, `portal`, …). spec/transports.md §webmcp */
export type WebmcpSurface = (typeof WEBMCP_SURFACES)[number];

/** A JSON Schema 2020-12 document, as a plain object (an input, output or shape schema). */
export type JsonSchema = Record<string, unknown>;

/** A manifest entry. No other member is allowed (additionalProperties false). spec/manifest.md */
export interface VerbRecord {
  name: string;
  description: string;
  shape: Shape;
  side_effects?: SideEffect;
  input_schema: JsonSchema;
  output_schema?: JsonSchema;
  surfaces?: Surface[];
  requires_consent?: boolean;
  tier_floor?: string;
}

/** The error member of an envelope. spec/envelope.md §error */
export interface EnvelopeError {
  /** Machine-readable, snake_case; agents branch on it (spec/reasons.md). */
  reason: string;
  /** For the human or the model; never a stack or a secret. */
  message: string;
  /** The next actionable step. */
  hint?: string;
  /** JSON Pointer of the input that failed (invalid_input). */
  path?: string;
  /** Structured extra facts (e.g. closest verb names, reset time). */
  details?: Record<string, unknown>;
}

/** What a dispatch_pending answer carries so a human can consent. spec/consent.md §pending */
export interface ConsentRequest {
  class: VerbClass;
  gate: 'confirmation' | 'typed_phrase';
  /** Single-use, signed, bound to verb + args + tenant + user + phrase + expiry. */
  nonce: string;
  expires_at: string;
  /** What will happen, in plain words. */
  summary: string;
  /** The exact phrase the human must type (typed-phrase gates). */
  typed_phrase?: string;
  /**
   * `human` when the tenant counts a typed phrase only from a channel a human types into; an
   * answer to an agent channel then omits `typed_phrase`. spec/consent.md §phrase-channel
   */
  phrase_channel?: 'human';
  /** Id to approve out of band (`approvals.approve`). */
  approval_id?: string;
  /**
   * The server's approval page for `approval_id` (`<public url>/approvals/<approval_id>`), present
   * when the runtime knows its public URL. spec/consent.md §approval-page
   */
  approval_url?: string;
  /** The verb's preview output, when it has one. */
  preview?: Record<string, unknown>;
  /**
   * The agent's own free text of the call (e.g. a refund's reason), by argument name: shown apart
   * from `summary`, labelled as the agent's words, never part of what the human consents to.
   * spec/consent.md §pending
   */
  agent_text?: Record<string, string>;
  /** The owner's conditional-gate rules that raised this call's gate. spec/consent.md §conditional-gates */
  raised_by?: Array<{ rule_id: string; description: string }>;
  /**
   * On a transport whose caller cannot send a nonce (MCP with no consent `_meta`): who acts
   * first — `user_confirms` (the agent asks the user in the conversation) or `human_approves` (a
   * signed-in human approves at `approval_url`) — then the agent calls the same tool again with
   * the same arguments. spec/consent.md §plain-retry
   */
  retry?: { after: 'user_confirms' | 'human_approves'; same_arguments: true };
}

/** The standard response envelope, on every transport. spec/envelope.md */
export interface Envelope<R extends Record<string, unknown> = Record<string, unknown>> {
  ok: boolean;
  verb: string;
  result?: R;
  error?: EnvelopeError;
  audit_id?: number;
  idempotency_key?: string;
  rollback_handle?: string;
  /** True when this is the stored answer of an earlier call with the same idempotency key. */
  replayed?: boolean;
  /** Present on dispatch_pending. */
  consent?: ConsentRequest;
  /**
   * Values shown to this caller once and kept nowhere (a new API key), outside the signed
   * receipt; never in a replay. spec/envelope.md §secret
   */
  secret?: Record<string, unknown>;
  /** Present when the call ran without an API key: the sandbox tenant answered (spec/envelope.md §tenant). */
  tenant?: EnvelopeTenant;
}

/** The tenant that answered a keyless call: always the sandbox. spec/envelope.md §tenant */
export interface EnvelopeTenant {
  /** company_id of the sandbox tenant. */
  id: number;
  sandbox: true;
}

/** Upstream-SDK name for the envelope type. */
export type VerbEnvelope = Envelope;

/** Result of a validator: same shape as the upstream SDK's. */
export interface ValidationResult {
  valid: boolean;
  errors: string[];
}

/** Attestation carried by every receipt. spec/receipts.md §attestation */
export interface ReceiptAttestation {
  kid: string;
  alg: 'ES256';
  seq: number;
  row_hash: string;
  prev_hash: string;
  /** Compact JWS with detached payload (`header..signature`) over the canonical receipt. */
  jws: string;
}

/** The receipt shape's output. spec/receipts.md */
export interface Receipt extends Record<string, unknown> {
  status: string;
  audit_id: number;
  rollback_handle?: string;
  idempotency_key?: string;
  timestamp?: string;
  replayed?: boolean;
  attestation?: ReceiptAttestation;
}

/** A principal: who is calling, from authentication only (never from args). spec/consent.md */
export interface Principal {
  company_id: number;
  user_id: number;
  role: Role;
  tier: Tier;
  /** Which agent or client acts: "claude-desktop", "cli", "ucp:<platform>"… */
  agent_type: string;
  /** True for the keyless sandbox principal (reads only). */
  sandbox?: boolean;
  /** API key id used, for the audit. */
  key_id?: string;
  /**
   * What the credential is limited to beyond its role (a least-privilege API key): absent for a
   * key with its role's whole power. Set only by authentication. spec/consent.md §api-keys
   */
  scope?: CredentialScope;
  /**
   * Who is behind the call: `human` only for a signed-in tenant user on a human channel (the
   * dashboard API routes, the approval page) or the operator at the local CLI's terminal;
   * `agent` for every API key, OAuth token, WebMCP page tool call, MCP client and script. Set
   * only by src/identity (test/docs/architecture.test.ts). spec/consent.md §channels
   */
  actor: Actor;
  /** For a human principal: the channel the human consents through (provenance). Set only by src/identity. */
  consent_channel?: ConsentChannel;
  /** For a human principal: the user's display name (provenance: "Typed by Jane Ruiz"). */
  user_name?: string;
}

/**
 * A credential's limits beyond its role (spec/consent.md §api-keys): an allow-list of verb names
 * and/or toolsets (verb categories; a verb is reachable when either list names it), read-only (no
 * write verb), and an expiry (ISO 8601; refused `key_expired` from then on). The pipeline's scope
 * step decides, for the verb and for every verb a delegated call reaches (audit.revert,
 * transaction steps, macro steps).
 */
export interface CredentialScope {
  verbs?: readonly string[];
  toolsets?: readonly string[];
  read_only?: boolean;
  expires_at?: string;
}

/** Who is behind a call (Principal.actor). spec/consent.md §channels */
export const ACTORS = ['human', 'agent'] as const;
/** Who is behind a call: a `human` or an `agent`. spec/consent.md §channels */
export type Actor = (typeof ACTORS)[number];

/**
 * Where a human consented (Principal.consent_channel, provenance on audit rows and receipts):
 * the dashboard's own API routes, the server's approval page, or the operator's terminal (the
 * local CLI's prompt on a local database). spec/consent.md §channels
 */
export const CONSENT_CHANNELS = ['dashboard', 'approval_page', 'operator_terminal'] as const;
/** Where a human gives consent: the dashboard, the approval page, or the operator terminal. spec/consent.md §channels */
export type ConsentChannel = (typeof CONSENT_CHANNELS)[number];

/** A domain event (subscribe, explain, suggest). spec/shapes.md §subscribe */
export interface DomainEvent {
  seq: number;
  type: string;
  entity_type: string;
  entity_id: number | string;
  payload: Record<string, unknown>;
  occurred_at: string;
  audit_id?: number | null;
  actor?: string | null;
}

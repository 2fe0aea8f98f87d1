/**
 * The runtime's own tables (scope "runtime"). Each migration is one template rendered for both
 * engines (./render.ts: `{bigint}`, `{json}`, `{real}`, `{id}` and `{sqlite}…{/sqlite}` /
 * `{postgres}…{/postgres}` blocks). Business packs bring their own migrations under their own scope.
 *
 * audit_log is append-only: each engine refuses UPDATE and DELETE on it (SQLite triggers;
 * PostgreSQL trigger plus a restricted role). Spec: spec/audit.md, spec/store.md.
 */
import type { Migration } from '../store.ts';
import { portableMigration } from './render.ts';

/** v1: the runtime tables. spec/store.md, spec/audit.md */
const RUNTIME_V1 = `
CREATE TABLE runtime_meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE tenants (
  company_id {bigint} PRIMARY KEY,
  name TEXT NOT NULL,
  tier TEXT NOT NULL CHECK (tier IN ('starter','professional','enterprise')),
  settings {json} NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL
);

CREATE TABLE api_keys (
  key_id TEXT PRIMARY KEY,
  company_id {bigint} NOT NULL REFERENCES tenants(company_id),
  user_id {bigint} NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('read_only','employee','admin','owner')),
  agent_type TEXT NOT NULL DEFAULT 'api',
  name TEXT NOT NULL DEFAULT '',
  secret_hash TEXT NOT NULL,
  created_at TEXT NOT NULL,
  revoked_at TEXT,
  last_used_at TEXT
);
CREATE INDEX api_keys_company ON api_keys(company_id);

CREATE TABLE tenant_heads (
  company_id {bigint} PRIMARY KEY,
  audit_seq {bigint} NOT NULL,
  audit_hash TEXT NOT NULL,
  event_seq {bigint} NOT NULL
);

{postgres}
CREATE SEQUENCE audit_log_audit_id_seq;
{/postgres}
CREATE TABLE audit_log (
  audit_id {bigint} PRIMARY KEY,
  company_id {bigint} NOT NULL,
  seq {bigint} NOT NULL,
  created_at TEXT NOT NULL,
  user_id {bigint},
  role TEXT,
  agent_type TEXT,
  key_id TEXT,
  action_type TEXT NOT NULL,
  category TEXT NOT NULL,
  shape TEXT,
  consent_class TEXT,
  status TEXT NOT NULL,
  reason TEXT,
  request_data {json} NOT NULL,
  entity_type TEXT,
  entity_id TEXT,
  is_reversible INTEGER NOT NULL DEFAULT 0,
  rollback_handle TEXT,
  idempotency_key TEXT,
  transaction_id TEXT,
  parent_id {bigint},
  requires_approval INTEGER NOT NULL DEFAULT 0,
  approved_by {bigint},
  approved_at TEXT,
  latency_ms {real},
  prev_hash TEXT NOT NULL,
  row_hash TEXT NOT NULL,
  UNIQUE (company_id, seq)
);
CREATE INDEX audit_company_time ON audit_log(company_id, created_at, audit_id);
CREATE INDEX audit_company_action ON audit_log(company_id, action_type, audit_id);
CREATE INDEX audit_company_status ON audit_log(company_id, status, audit_id);
CREATE INDEX audit_company_user ON audit_log(company_id, user_id, audit_id);
CREATE INDEX audit_company_entity ON audit_log(company_id, entity_type, entity_id, audit_id);
CREATE INDEX audit_parent ON audit_log(parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX audit_company_tx ON audit_log(company_id, transaction_id) WHERE transaction_id IS NOT NULL;

{sqlite}
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
{/sqlite}
{postgres}
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'audit_log is append-only' USING ERRCODE = 'P0001'; END $$;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log
FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
{/postgres}

CREATE TABLE audit_checkpoints (
  company_id {bigint} NOT NULL,
  seq {bigint} NOT NULL,
  head_hash TEXT NOT NULL,
  created_at TEXT NOT NULL,
  kid TEXT NOT NULL,
  signature TEXT NOT NULL,
  PRIMARY KEY (company_id, seq)
);

CREATE TABLE revert_data (
  audit_id {bigint} PRIMARY KEY,
  company_id {bigint} NOT NULL,
  data {json} NOT NULL
);

CREATE TABLE reversals (
  audit_id {bigint} PRIMARY KEY,
  company_id {bigint} NOT NULL,
  revert_audit_id {bigint} NOT NULL,
  reverted_by {bigint},
  reverted_at TEXT NOT NULL
);

CREATE TABLE idempotency (
  company_id {bigint} NOT NULL,
  principal TEXT NOT NULL,
  key TEXT NOT NULL,
  verb TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  audit_id {bigint},
  envelope {json} NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  PRIMARY KEY (company_id, principal, key)
);
CREATE INDEX idempotency_expiry ON idempotency(expires_at);

CREATE TABLE nonces (
  jti TEXT PRIMARY KEY,
  company_id {bigint} NOT NULL,
  audit_id {bigint},
  consumed_at TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
CREATE INDEX nonces_expiry ON nonces(expires_at);

CREATE TABLE approvals (
  approval_id TEXT PRIMARY KEY,
  company_id {bigint} NOT NULL,
  jti TEXT NOT NULL UNIQUE,
  verb TEXT NOT NULL,
  args {json} NOT NULL,
  consent_class TEXT NOT NULL,
  typed_phrase TEXT,
  summary TEXT NOT NULL,
  requested_by {bigint} NOT NULL,
  requested_role TEXT NOT NULL,
  agent_type TEXT,
  status TEXT NOT NULL CHECK (status IN ('pending','approved','rejected','consumed','expired')),
  decided_by {bigint},
  decided_at TEXT,
  decision_note TEXT,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
CREATE INDEX approvals_company_status ON approvals(company_id, status, created_at);

CREATE TABLE daily_counts (
  company_id {bigint} NOT NULL,
  consent_class TEXT NOT NULL,
  day TEXT NOT NULL,
  count {bigint} NOT NULL,
  PRIMARY KEY (company_id, consent_class, day)
);

CREATE TABLE events (
  company_id {bigint} NOT NULL,
  seq {bigint} NOT NULL,
  type TEXT NOT NULL,
  entity_type TEXT NOT NULL,
  entity_id TEXT NOT NULL,
  payload {json} NOT NULL,
  occurred_at TEXT NOT NULL,
  audit_id {bigint},
  actor TEXT,
  PRIMARY KEY (company_id, seq)
);
CREATE INDEX events_entity ON events(company_id, entity_type, entity_id, seq);
CREATE INDEX events_type ON events(company_id, type, seq);
CREATE INDEX events_time ON events(company_id, occurred_at);

CREATE TABLE outbox (
  outbox_id {id},
  company_id {bigint} NOT NULL,
  kind TEXT NOT NULL,
  payload {json} NOT NULL,
  audit_id {bigint},
  status TEXT NOT NULL CHECK (status IN ('pending','delivered','failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  created_at TEXT NOT NULL,
  deliver_after TEXT NOT NULL,
  delivered_at TEXT
);
CREATE INDEX outbox_pending ON outbox(status, deliver_after);

CREATE TABLE transactions (
  transaction_id TEXT PRIMARY KEY,
  company_id {bigint} NOT NULL,
  user_id {bigint} NOT NULL,
  status TEXT NOT NULL,
  steps {json} NOT NULL DEFAULT '[]',
  audit_id {bigint},
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX transactions_company ON transactions(company_id, status);

CREATE TABLE tenant_keys (
  kid TEXT PRIMARY KEY,
  company_id {bigint} NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending','active','rotating','retired')),
  public_jwk {json} NOT NULL,
  private_enc TEXT NOT NULL,
  created_at TEXT NOT NULL,
  activated_at TEXT,
  rotated_at TEXT,
  retired_at TEXT,
  grace_until TEXT
);
CREATE INDEX tenant_keys_company ON tenant_keys(company_id, state);
`;

/**
 * v2: audit trail indexes. The trail pages newest first by (created_at, audit_id); every filter
 * column gets an index (company_id, <filter>, created_at, audit_id) so a page is one index range
 * scan that stops after `limit` rows, with or without a time range, whatever the log size.
 * verb + status (e.g. the denied calls of one verb) gets its own composite index; other
 * combinations use one filter's index and test the rest on the rows it yields.
 * Same SQL on both engines. spec/audit.md §trail
 */
const AUDIT_TRAIL_INDEXES_V2 = `
DROP INDEX audit_company_action;
DROP INDEX audit_company_status;
DROP INDEX audit_company_user;
DROP INDEX audit_company_entity;
CREATE INDEX audit_company_action_time ON audit_log(company_id, action_type, created_at, audit_id);
CREATE INDEX audit_company_status_time ON audit_log(company_id, status, created_at, audit_id);
CREATE INDEX audit_company_action_status_time ON audit_log(company_id, action_type, status, created_at, audit_id);
CREATE INDEX audit_company_user_time ON audit_log(company_id, user_id, created_at, audit_id);
CREATE INDEX audit_company_entity_time ON audit_log(company_id, entity_type, entity_id, created_at, audit_id);
CREATE INDEX audit_company_entity_type_time ON audit_log(company_id, entity_type, created_at, audit_id);
CREATE INDEX audit_company_reason_time ON audit_log(company_id, reason, created_at, audit_id) WHERE reason IS NOT NULL;
`;

/**
 * v3: observe-and-learn tables (src/runtime/observe/, src/verbs/events.ts, macros.ts).
 * - subscriptions: a subscriber's filters (events.subscribe); polls never write to it.
 * - event_retention: per tenant, the highest event seq pruned (cursor_expired below it).
 * - reputation_counts / reputation_latency: additive hourly ('h') and daily ('d') buckets per
 *   verb and agent; latency as a sparse log-scale histogram (one row per non-empty bin), so a
 *   flush is a batch of commutative upserts and concurrent nodes never lose an increment.
 * - macros: saved chains of verb calls; macro_runs: runs paused at a consent gate or a failed step.
 * spec/shapes.md §subscribe §reputation §macro
 */
const OBSERVE_V3 = `
CREATE TABLE subscriptions (
  subscription_id TEXT PRIMARY KEY,
  company_id {bigint} NOT NULL,
  user_id {bigint} NOT NULL,
  filters {json} NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX subscriptions_company ON subscriptions(company_id, created_at);

CREATE TABLE event_retention (
  company_id {bigint} PRIMARY KEY,
  pruned_through_seq {bigint} NOT NULL,
  pruned_at TEXT NOT NULL
);

CREATE TABLE reputation_counts (
  company_id {bigint} NOT NULL,
  grain TEXT NOT NULL CHECK (grain IN ('h','d')),
  bucket_start TEXT NOT NULL,
  verb TEXT NOT NULL,
  agent TEXT NOT NULL,
  invocations {bigint} NOT NULL,
  successes {bigint} NOT NULL,
  failures {bigint} NOT NULL,
  denials {bigint} NOT NULL,
  pending {bigint} NOT NULL,
  PRIMARY KEY (company_id, grain, bucket_start, verb, agent)
);

CREATE TABLE reputation_latency (
  company_id {bigint} NOT NULL,
  grain TEXT NOT NULL CHECK (grain IN ('h','d')),
  bucket_start TEXT NOT NULL,
  verb TEXT NOT NULL,
  agent TEXT NOT NULL,
  bin INTEGER NOT NULL,
  count {bigint} NOT NULL,
  PRIMARY KEY (company_id, grain, bucket_start, verb, agent, bin)
);

CREATE TABLE macros (
  macro_id TEXT PRIMARY KEY,
  company_id {bigint} NOT NULL,
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  steps {json} NOT NULL,
  version INTEGER NOT NULL,
  created_by {bigint} NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (company_id, name)
);

CREATE TABLE macro_runs (
  run_id TEXT PRIMARY KEY,
  company_id {bigint} NOT NULL,
  user_id {bigint} NOT NULL,
  macro_id TEXT NOT NULL,
  version INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending','failed','completed')),
  next_step INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  outputs {json} NOT NULL,
  override_args {json} NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
CREATE INDEX macro_runs_expiry ON macro_runs(expires_at);
`;

/** Verified request signatures (RFC 9421) seen within their window, shared by every node (UCP replay guard). */
const SIGNATURE_REPLAYS_V4 = `
CREATE TABLE signature_replays (
  signature_id TEXT PRIMARY KEY,
  expires_at BIGINT NOT NULL
);
CREATE INDEX signature_replays_expiry ON signature_replays(expires_at);
`;

/**
 * The role floor of the action an approval decides, as it applied when the action was asked: a
 * verb whose consent follows its target (audit.revert) carries the target's floor, which the
 * registry cannot tell later. Null on older rows (the approver check then falls back to the verb).
 */
const APPROVAL_ROLE_FLOOR_V5 = `ALTER TABLE approvals ADD COLUMN role_floor TEXT;`;

/**
 * One user_id per UCP platform profile URL (PlatformUsers): recorded on first sight, unique both
 * ways, so two platforms never share an idempotency scope, nonces, caps or a reputation.
 */
const UCP_PLATFORM_USERS_V6 = `
CREATE TABLE ucp_platform_users (
  profile_url TEXT PRIMARY KEY,
  user_id BIGINT NOT NULL UNIQUE,
  created_at TEXT NOT NULL
);
`;

/**
 * Fixed-window rate-limit counters shared by every node (src/transports/http/rate-limit.ts):
 * epoch ms; rows of ended windows are deleted by the maintenance pass.
 */
const RATE_LIMIT_COUNTERS_V7 = `
CREATE TABLE rate_limit_counters (
  bucket TEXT NOT NULL,
  window_start BIGINT NOT NULL,
  window_end BIGINT NOT NULL,
  count BIGINT NOT NULL,
  PRIMARY KEY (bucket, window_start)
);
CREATE INDEX rate_limit_counters_end ON rate_limit_counters(window_end);
`;

/**
 * Every write's receipt, kept with its audit row (src/runtime/ledger/write/receipt-store.ts): the
 * idempotency record that also holds it expires after 24 h. spec/receipts.md §stored
 */
const RECEIPTS_V8 = `
CREATE TABLE receipts (
  audit_id {bigint} PRIMARY KEY,
  company_id {bigint} NOT NULL,
  receipt {json} NOT NULL
);
`;

/**
 * v9: the read-audit row's indexes, made cheaper to append to. Every index of audit_log costs each appended row
 * an index insert (≈ 1.7 µs of a buffered read row's CPU on SQLite), and most rows are reads
 * that completed with no entity: the two entity indexes hold only rows with an entity_type, the
 * two status indexes only rows whose status is not 'completed' (denials, failures, pending,
 * replays…). A filter on entity_type implies entity_type IS NOT NULL, so both planners use the
 * partial entity indexes as before; a status filter other than 'completed' carries the term
 * `status <> 'completed'` (src/verbs/audit-trail.ts adds it), which matches the index predicate
 * textually on SQLite and by proof on PostgreSQL; status = 'completed' is scanned on the time or
 * verb index and tested on its rows. Same SQL on both engines. spec/audit.md §trail
 */
const PARTIAL_AUDIT_INDEXES_V9 = `
DROP INDEX audit_company_status_time;
DROP INDEX audit_company_action_status_time;
DROP INDEX audit_company_entity_time;
DROP INDEX audit_company_entity_type_time;
CREATE INDEX audit_company_status_time ON audit_log(company_id, status, created_at, audit_id) WHERE status <> 'completed';
CREATE INDEX audit_company_action_status_time ON audit_log(company_id, action_type, status, created_at, audit_id) WHERE status <> 'completed';
CREATE INDEX audit_company_entity_time ON audit_log(company_id, entity_type, entity_id, created_at, audit_id) WHERE entity_type IS NOT NULL;
CREATE INDEX audit_company_entity_type_time ON audit_log(company_id, entity_type, created_at, audit_id) WHERE entity_type IS NOT NULL;
`;

/**
 * v10: fewer B-trees per confirmed write on SQLite, the same tables on PostgreSQL.
 * - nonces: one B-tree keyed (expires_at, jti) WITHOUT ROWID instead of a rowid table, its jti
 *   index and nonces_expiry (3 trees per burn). A jti is 128 random bits and its expiry is signed
 *   into the same token, so the pair is unique exactly when the jti is: a second burn of a nonce is
 *   still refused by the key; the maintenance pass's `expires_at < ?` is a range of that key, and
 *   a burn lands near its right edge (expiries grow with time).
 * - idempotency: idempotency_expiry dropped; the maintenance pass deletes by rowid (insertion
 *   order) up to the oldest record not yet expired (src/runtime/maintenance.ts). A lookup ignores
 *   expired records whatever is left.
 * - receipts.revert_data (both engines): a dispatched write's revert data rides in its receipt row
 *   (same key, audit_id) instead of a revert_data row of its own; revert_data keeps the rows of
 *   writes without a stored receipt (transaction steps) and older ones.
 * spec/consent.md §nonce, spec/idempotency.md, spec/receipts.md §stored
 */
const WRITE_TREES_V10 = `
ALTER TABLE receipts ADD COLUMN revert_data {json};
{sqlite}
CREATE TABLE nonces_v10 (
  jti TEXT NOT NULL,
  company_id INTEGER NOT NULL,
  audit_id INTEGER,
  consumed_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  PRIMARY KEY (expires_at, jti)
) WITHOUT ROWID;
INSERT INTO nonces_v10 (jti, company_id, audit_id, consumed_at, expires_at)
  SELECT jti, company_id, audit_id, consumed_at, expires_at FROM nonces;
DROP TABLE nonces;
ALTER TABLE nonces_v10 RENAME TO nonces;
DROP INDEX idempotency_expiry;
{/sqlite}
`;

/**
 * v11: a user's subscriptions in creation order, so events.subscribe keeps each user's count
 * bounded (MAX_SUBSCRIPTIONS_PER_USER: the oldest is replaced) reading at most that many index
 * entries. spec/shapes.md §subscribe
 */
const SUBSCRIPTIONS_PER_USER_V11 = `
CREATE INDEX subscriptions_user ON subscriptions(company_id, user_id, created_at, subscription_id);
`;

/**
 * v12: the tenant's human users and their sign-in credentials (src/identity/users.ts,
 * passkeys.ts, totp.ts, enrolment.ts). An API key keeps its user_id: a key acts for a user but is
 * an agent credential; only these credentials sign a human in.
 * - users: one row per person of a tenant; status invited → active (first credential) → disabled.
 * - user_passkeys: WebAuthn credentials (public key and signature counter; no secret is stored).
 * - user_totp: the TOTP fallback; the secret AES-256-GCM encrypted under the runtime's master
 *   key, the last time step a code was accepted at (a code counts once per step).
 * - enrolment_links: one-time links, SHA-256 of the token only, with expiry and use time.
 * - webauthn_challenges: server-side ceremony challenges (SHA-256), single use, with expiry.
 * spec/consent.md §human-sign-in
 */
const HUMANS_V12 = `
CREATE TABLE users (
  company_id {bigint} NOT NULL REFERENCES tenants(company_id),
  user_id {bigint} NOT NULL,
  name TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('read_only','employee','admin','owner')),
  status TEXT NOT NULL CHECK (status IN ('invited','active','disabled')),
  created_at TEXT NOT NULL,
  PRIMARY KEY (company_id, user_id)
);
CREATE TABLE user_passkeys (
  credential_id TEXT PRIMARY KEY,
  company_id {bigint} NOT NULL,
  user_id {bigint} NOT NULL,
  public_key TEXT NOT NULL,
  counter {bigint} NOT NULL,
  transports {json},
  created_at TEXT NOT NULL,
  last_used_at TEXT
);
CREATE INDEX user_passkeys_user ON user_passkeys(company_id, user_id);
CREATE TABLE user_totp (
  company_id {bigint} NOT NULL,
  user_id {bigint} NOT NULL,
  secret_sealed TEXT NOT NULL,
  confirmed_at TEXT,
  last_step {bigint},
  created_at TEXT NOT NULL,
  PRIMARY KEY (company_id, user_id)
);
CREATE TABLE enrolment_links (
  token_hash TEXT PRIMARY KEY,
  company_id {bigint} NOT NULL,
  user_id {bigint} NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at TEXT
);
CREATE INDEX enrolment_links_user ON enrolment_links(company_id, user_id);
CREATE TABLE webauthn_challenges (
  challenge_hash TEXT PRIMARY KEY,
  purpose TEXT NOT NULL CHECK (purpose IN ('registration','authentication')),
  company_id {bigint},
  user_id {bigint},
  expires_at TEXT NOT NULL
);
CREATE INDEX webauthn_challenges_expiry ON webauthn_challenges(expires_at);
`;

/**
 * v13: approvals that answer one attempt, with consent provenance (spec/consent.md §approvals
 * §provenance).
 * - approvals.status may be `superseded`: an identical action (same tenant, verb and canonical
 *   arguments hash, `args_hash`) completed by another path, or the pending call was withdrawn.
 *   SQLite cannot change a CHECK in place, so the table is rebuilt there.
 * - approvals.args_hash (the nonce's `a`), agent_text (the agent's free text, shown apart),
 *   decided_channel, decided_role and decided_name (where, as what and who decided), retry_expires_at (the window the agent's confirm
 *   has after an approval, opened at the decision).
 * - audit_log.consent: the consent provenance of a consented write, canonical JSON text, in the
 *   row hash only when present (older rows hash as before).
 */
const APPROVALS_ONE_ATTEMPT_V13 = `
{sqlite}
CREATE TABLE approvals_v12 (
  approval_id TEXT PRIMARY KEY,
  company_id INTEGER NOT NULL,
  jti TEXT NOT NULL UNIQUE,
  verb TEXT NOT NULL,
  args TEXT NOT NULL,
  consent_class TEXT NOT NULL,
  typed_phrase TEXT,
  summary TEXT NOT NULL,
  requested_by INTEGER NOT NULL,
  requested_role TEXT NOT NULL,
  agent_type TEXT,
  status TEXT NOT NULL CHECK (status IN ('pending','approved','rejected','consumed','expired','superseded')),
  decided_by INTEGER,
  decided_at TEXT,
  decision_note TEXT,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  role_floor TEXT,
  args_hash TEXT,
  agent_text TEXT,
  decided_channel TEXT,
  decided_role TEXT,
  decided_name TEXT,
  retry_expires_at TEXT
);
INSERT INTO approvals_v12 (approval_id, company_id, jti, verb, args, consent_class, typed_phrase, summary, requested_by, requested_role, agent_type, status, decided_by, decided_at, decision_note, created_at, expires_at, role_floor)
  SELECT approval_id, company_id, jti, verb, args, consent_class, typed_phrase, summary, requested_by, requested_role, agent_type, status, decided_by, decided_at, decision_note, created_at, expires_at, role_floor FROM approvals;
DROP TABLE approvals;
ALTER TABLE approvals_v12 RENAME TO approvals;
CREATE INDEX approvals_company_status ON approvals(company_id, status, created_at);
{/sqlite}
{postgres}
ALTER TABLE approvals DROP CONSTRAINT approvals_status_check;
ALTER TABLE approvals ADD CONSTRAINT approvals_status_check CHECK (status IN ('pending','approved','rejected','consumed','expired','superseded'));
ALTER TABLE approvals ADD COLUMN args_hash TEXT;
ALTER TABLE approvals ADD COLUMN agent_text JSONB;
ALTER TABLE approvals ADD COLUMN decided_channel TEXT;
ALTER TABLE approvals ADD COLUMN decided_role TEXT;
ALTER TABLE approvals ADD COLUMN decided_name TEXT;
ALTER TABLE approvals ADD COLUMN retry_expires_at TEXT;
{/postgres}
CREATE INDEX approvals_same_action ON approvals(company_id, verb, args_hash) WHERE status IN ('pending', 'approved');
ALTER TABLE audit_log ADD COLUMN consent TEXT;
`;

/**
 * v14: approvals a plain retry can complete (spec/consent.md §plain-retry).
 * - approvals.requested_key: the API key id of the requesting principal (null without one); a
 *   plain retry (same tool, same arguments, no nonce) completes an approval only for the same key.
 * - approvals.nonce_expires_at: the expiry signed into the pending answer's nonce, so a plain
 *   retry burns the same (expires_at, jti) pair a confirm with that nonce would.
 * - an index for the plain-retry lookup (tenant, verb, arguments hash, requester).
 */
const APPROVALS_PLAIN_RETRY_V14 = `
ALTER TABLE approvals ADD COLUMN requested_key TEXT;
ALTER TABLE approvals ADD COLUMN nonce_expires_at TEXT;
CREATE INDEX approvals_plain_retry ON approvals(company_id, verb, args_hash, requested_by, created_at);
`;

/**
 * v15: least-privilege API keys (spec/consent.md §api-keys).
 * - api_keys.scope: the key's allow-list and read-only flag as JSON (`{verbs?, toolsets?,
 *   read_only?}`); null for a key with its role's whole power.
 * - api_keys.expires_at: ISO 8601; null for a key that does not expire.
 */
const API_KEY_SCOPE_V15 = `
ALTER TABLE api_keys ADD COLUMN scope {json};
ALTER TABLE api_keys ADD COLUMN expires_at TEXT;
`;

/**
 * v16: the business activity index. `audit.trail { scope: 'business' }` (the dashboard's Activity
 * view and its chart, by default) keeps rows whose consent class is not READ; most rows of a busy
 * log are reads, so testing the scope on the time index's rows read up to the whole log to fill a
 * page. This index holds only the business rows (a read row costs it nothing): a business page is
 * one range scan of it, with or without a time range. The partial predicate is the trail's own
 * term `consent_class <> 'READ'` (NULL, an unknown verb, is not in it, as before). Same SQL on
 * both engines. spec/audit.md §trail
 */
const BUSINESS_TRAIL_INDEX_V16 = `
CREATE INDEX audit_company_business_time ON audit_log(company_id, created_at, audit_id) WHERE consent_class <> 'READ';
`;

/**
 * v17: one action, one Activity row (spec/audit.md §fold). A gated write leaves a `pending` row
 * (the preflight: the nonce's answer) and, when confirmed, the write's own row; nothing in the
 * hash-chained columns links them. `pending_actions` does, outside the chain: the pending row's
 * audit_id and its nonce id (jti), written with the pending row; the write's audit_id, set in the
 * write's transaction where it burns that nonce. An agent polling with the same nonce leaves
 * several pending rows of one action: all point at the one write. Same SQL on both engines.
 */
const PENDING_ACTIONS_V17 = `
CREATE TABLE pending_actions (
  company_id {bigint} NOT NULL,
  audit_id {bigint} NOT NULL,
  jti TEXT NOT NULL,
  action_audit_id {bigint},
  PRIMARY KEY (company_id, audit_id)
);
CREATE INDEX pending_actions_jti ON pending_actions(company_id, jti);
CREATE INDEX pending_actions_action ON pending_actions(company_id, action_audit_id);
`;

export const runtimeMigrations: readonly Migration[] = [
  portableMigration(1, 'runtime tables', RUNTIME_V1),
  portableMigration(2, 'audit trail indexes', AUDIT_TRAIL_INDEXES_V2),
  portableMigration(3, 'observe-and-learn tables', OBSERVE_V3),
  portableMigration(4, 'signature replay guard', SIGNATURE_REPLAYS_V4),
  portableMigration(5, 'approval role floor', APPROVAL_ROLE_FLOOR_V5),
  portableMigration(6, 'UCP platform user ids', UCP_PLATFORM_USERS_V6),
  portableMigration(7, 'rate-limit counters', RATE_LIMIT_COUNTERS_V7),
  portableMigration(8, 'stored receipts', RECEIPTS_V8),
  portableMigration(9, 'partial audit indexes', PARTIAL_AUDIT_INDEXES_V9),
  portableMigration(10, 'fewer write B-trees (SQLite)', WRITE_TREES_V10),
  portableMigration(11, 'subscriptions per user', SUBSCRIPTIONS_PER_USER_V11),
  portableMigration(12, 'human users and their credentials', HUMANS_V12),
  portableMigration(13, 'approvals answer one attempt; consent provenance', APPROVALS_ONE_ATTEMPT_V13),
  portableMigration(14, 'approvals a plain retry completes', APPROVALS_PLAIN_RETRY_V14),
  portableMigration(15, 'least-privilege API keys', API_KEY_SCOPE_V15),
  portableMigration(16, 'business activity index', BUSINESS_TRAIL_INDEX_V16),
  portableMigration(17, 'pending rows linked to their action', PENDING_ACTIONS_V17),
];

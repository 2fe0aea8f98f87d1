/**
 * The delivery tables (migration scope "delivery", applied by createRuntime after the runtime's
 * own scope): the outbox's `dead` state, message ids and lease tokens, and the tenants' webhook
 * endpoints. A scope of its own so its versions never collide with the runtime scope's.
 *
 * Spec: docs/authoring.md §8(c), docs/webhooks.md.
 */
import type { Migration } from '../../store/store.ts';
import { portableMigration } from '../../store/migrations/render.ts';

/**
 * v1: outbox status `failed` becomes `dead` (the dead-letter state), plus `message_id` (the
 * idempotency key the receiver is given; stable across retries) and `lease_token` (which claim
 * owns a leased row). SQLite rebuilds the table to change its CHECK; PostgreSQL swaps the
 * constraint.
 */
const OUTBOX_DEAD_LETTERS_V1 = `
{sqlite}
CREATE TABLE outbox_v1 (
  outbox_id INTEGER PRIMARY KEY,
  company_id INTEGER NOT NULL,
  kind TEXT NOT NULL,
  payload TEXT NOT NULL,
  audit_id INTEGER,
  status TEXT NOT NULL CHECK (status IN ('pending','delivered','dead')),
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  created_at TEXT NOT NULL,
  deliver_after TEXT NOT NULL,
  delivered_at TEXT,
  message_id TEXT,
  lease_token TEXT
);
INSERT INTO outbox_v1 (outbox_id, company_id, kind, payload, audit_id, status, attempts, last_error, created_at, deliver_after, delivered_at)
  SELECT outbox_id, company_id, kind, payload, audit_id, CASE status WHEN 'failed' THEN 'dead' ELSE status END, attempts, last_error, created_at, deliver_after, delivered_at FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_v1 RENAME TO outbox;
CREATE INDEX outbox_pending ON outbox(status, deliver_after);
{/sqlite}
{postgres}
ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_status_check;
UPDATE outbox SET status = 'dead' WHERE status = 'failed';
ALTER TABLE outbox ADD CONSTRAINT outbox_status_check CHECK (status IN ('pending','delivered','dead'));
ALTER TABLE outbox ADD COLUMN message_id TEXT;
ALTER TABLE outbox ADD COLUMN lease_token TEXT;
{/postgres}
CREATE INDEX outbox_dead ON outbox(company_id, status, outbox_id);
`;

/**
 * v2: per-tenant webhook endpoints. The signing secret is stored encrypted with the runtime's
 * master key (Secrets.encrypt, AES-256-GCM, aad = the endpoint id); `events` is a JSON array of
 * event types.
 */
const WEBHOOK_ENDPOINTS_V2 = `
CREATE TABLE webhook_endpoints (
  endpoint_id TEXT PRIMARY KEY,
  company_id {bigint} NOT NULL,
  url TEXT NOT NULL,
  description TEXT,
  events {json} NOT NULL,
  secret_enc TEXT NOT NULL,
  created_by {bigint} NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX webhook_endpoints_company ON webhook_endpoints(company_id, created_at);
`;

/**
 * v3: where each audit stream stands (ledger/stream/audit-stream.ts): one row per tenant and sink
 * (`otlp`, or `webhook:<endpoint_id>`). `through_seq` is the last audit row handed over — for
 * OTLP, acknowledged by the collector; for a webhook sink, queued in the outbox as `outbox_id`,
 * which must be delivered before the next row is queued (order per tenant).
 */
const AUDIT_STREAM_CURSORS_V3 = `
CREATE TABLE audit_stream_cursors (
  company_id {bigint} NOT NULL,
  sink TEXT NOT NULL,
  through_seq {bigint} NOT NULL,
  outbox_id {bigint},
  updated_at TEXT NOT NULL,
  PRIMARY KEY (company_id, sink)
);
`;

export const deliveryMigrations: readonly Migration[] = [
  portableMigration(1, 'outbox dead letters', OUTBOX_DEAD_LETTERS_V1),
  portableMigration(2, 'webhook endpoints', WEBHOOK_ENDPOINTS_V2),
  portableMigration(3, 'audit stream cursors', AUDIT_STREAM_CURSORS_V3),
];

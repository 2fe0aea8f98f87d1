/**
 * Migration scope `platform`: what provisioning for platforms adds (spec/platform.md).
 *
 * - tenants.external_id: the platform's own account id of a tenant it created (unique; null for
 *   tenants the operator made with `solid init` / `solid tenant`); tenants.time_zone (IANA name,
 *   default UTC); tenants.status (`active` | `suspended` | `deleted`) and when it last changed.
 * - platform_keys: platform credentials (`pk_solid_<key_id>_<secret>`), only SHA-256(secret)
 *   stored, like api_keys. They belong to no tenant.
 * - platform_audit: the platform log, one hash chain (seq, prev_hash, row_hash) of every
 *   provisioning call and refusal; append-only like audit_log. It outlives the tenants it names.
 * - platform_head: the platform log's head (one row), locked by every append.
 * - tenant_exports: the exports a platform took of a tenant (the last seq and head hash they
 *   cover, the manifest's digest): a delete needs one that covers the current head.
 */
import type { Migration } from '../store.ts';
import { portableMigration } from './render.ts';

const PLATFORM_V1 = `
ALTER TABLE tenants ADD COLUMN external_id TEXT;
ALTER TABLE tenants ADD COLUMN time_zone TEXT NOT NULL DEFAULT 'UTC';
ALTER TABLE tenants ADD COLUMN status TEXT NOT NULL DEFAULT 'active';
ALTER TABLE tenants ADD COLUMN status_changed_at TEXT;
CREATE UNIQUE INDEX tenants_external_id ON tenants(external_id);

CREATE TABLE platform_keys (
  key_id TEXT PRIMARY KEY,
  name TEXT NOT NULL DEFAULT '',
  secret_hash TEXT NOT NULL,
  created_at TEXT NOT NULL,
  revoked_at TEXT,
  last_used_at TEXT
);

CREATE TABLE platform_head (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  seq {bigint} NOT NULL,
  hash TEXT NOT NULL
);
INSERT INTO platform_head (id, seq, hash) VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

CREATE TABLE platform_audit (
  seq {bigint} PRIMARY KEY,
  created_at TEXT NOT NULL,
  key_id TEXT,
  action TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('completed','denied','failed')),
  reason TEXT,
  company_id {bigint},
  external_id TEXT,
  request_data {json} NOT NULL,
  result_data {json},
  prev_hash TEXT NOT NULL,
  row_hash TEXT NOT NULL
);
CREATE INDEX platform_audit_company ON platform_audit(company_id, seq);
{sqlite}
CREATE TRIGGER platform_audit_no_update BEFORE UPDATE ON platform_audit
BEGIN SELECT RAISE(ABORT, 'platform_audit is append-only'); END;
CREATE TRIGGER platform_audit_no_delete BEFORE DELETE ON platform_audit
BEGIN SELECT RAISE(ABORT, 'platform_audit is append-only'); END;
{/sqlite}
{postgres}
CREATE FUNCTION platform_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'platform_audit is append-only' USING ERRCODE = 'P0001'; END $$;
CREATE TRIGGER platform_audit_no_update BEFORE UPDATE OR DELETE ON platform_audit
FOR EACH ROW EXECUTE FUNCTION platform_audit_append_only();
CREATE TRIGGER platform_audit_no_truncate BEFORE TRUNCATE ON platform_audit
FOR EACH STATEMENT EXECUTE FUNCTION platform_audit_append_only();
{/postgres}

CREATE TABLE tenant_exports (
  export_id TEXT PRIMARY KEY,
  company_id {bigint} NOT NULL,
  created_at TEXT NOT NULL,
  head_seq {bigint} NOT NULL,
  head_hash TEXT NOT NULL,
  rows_sha256 TEXT NOT NULL,
  key_id TEXT
);
CREATE INDEX tenant_exports_company ON tenant_exports(company_id, head_seq);
`;

/** The `platform` migration scope, applied by createRuntime after `runtime` and `delivery`. */
export const platformMigrations: readonly Migration[] = [
  portableMigration(1, 'platform provisioning: external ids, status, platform keys and log', PLATFORM_V1),
];

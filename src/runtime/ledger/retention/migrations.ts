/**
 * The retention tables (migration scope "retention", applied by createRuntime after "delivery"):
 * the signed continuity records of archived ranges, and the append-only trigger narrowed so that
 * only rows at or below a tenant's recorded archive boundary can be deleted. A scope of its own,
 * so its versions never collide with the runtime scope's.
 *
 * Spec: spec/audit.md §retention.
 */
import type { Migration } from '../../../store/store.ts';
import { portableMigration } from '../../../store/migrations/render.ts';

/**
 * v1: `audit_archives` (one row per archived range: the boundary `through_seq` and the signed
 * continuity record as JSON text); DELETE on audit_log refused as before, except for rows with
 * seq ≤ the tenant's highest `through_seq` (UPDATE and TRUNCATE stay refused). On PostgreSQL the
 * restricted app role still has no DELETE on audit_log (app-role.ts): pruning runs as the owner.
 */
const AUDIT_ARCHIVES_V1 = `
CREATE TABLE audit_archives (
  company_id {bigint} NOT NULL,
  through_seq {bigint} NOT NULL,
  record TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (company_id, through_seq)
);
{sqlite}
DROP TRIGGER audit_log_no_delete;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
WHEN OLD.seq > COALESCE((SELECT MAX(through_seq) FROM audit_archives WHERE company_id = OLD.company_id), 0)
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
{/sqlite}
{postgres}
DROP TRIGGER audit_log_no_update ON audit_log;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE FUNCTION audit_log_prune_only_archived() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.seq <= COALESCE((SELECT MAX(through_seq) FROM audit_archives WHERE company_id = OLD.company_id), 0) THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'audit_log is append-only' USING ERRCODE = 'P0001';
END $$;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
FOR EACH ROW EXECUTE FUNCTION audit_log_prune_only_archived();
{/postgres}
`;

export const retentionMigrations: readonly Migration[] = [
  portableMigration(1, 'audit archives and pruning at a signed boundary', AUDIT_ARCHIVES_V1),
];

/**
 * What a copy of a SQLite database must prove before `solid backup` publishes it or `solid
 * restore` puts it in place (spec/audit.md §backup): SQLite's structural check passes, the audit
 * chain and the checkpoint signatures verify, every stored receipt matches its row, and — for a
 * backup — every tenant's chain head is at least where the live database's was when the copy
 * began (a copy that misses commits, like `cp` of a live WAL file, is refused here).
 */
import { sqliteQuickCheck } from '../../../store/sqlite/backup.ts';
import { openAuditDatabase, type AuditVerifyReport, type ChainHead, type VerifyOptions } from './verify.ts';
import { verifyDatabaseFile, type VerifyDatabaseOptions } from './verify-file.ts';

/** A tenant whose chain in one database lies behind the same tenant's in another. */
export interface HeadBehind {
  company_id: number;
  /** The seq the copy (or the restored database) ends at; 0 when it has no row of the tenant. */
  seq: number;
  /** The seq of the other database. */
  other_seq: number;
}

/** The outcome of checking a database copy. */
export interface CopyCheck {
  ok: boolean;
  /** SQLite's quick_check messages (empty when sound). */
  structure: string[];
  /** The audit verification (chain, checkpoints, unsigned tails, receipts). */
  report: AuditVerifyReport;
  /** Tenants whose head in the copy lies behind `expectHeads` (a copy that missed commits). */
  behind: HeadBehind[];
  /** The copy's heads, per tenant. */
  heads: ChainHead[];
}

/**
 * Every tenant's chain head (tenant_heads) of the SQLite database file `path`, read-only.
 * Throws VerbError store_unavailable when it cannot be read.
 */
export function readChainHeads(path: string): ChainHead[] {
  const db = openAuditDatabase(path);
  try {
    const rows = db
      .prepare('SELECT company_id, audit_seq, audit_hash FROM tenant_heads')
      .all() as ChainHead[];
    return rows.map((h) => ({
      company_id: Number(h.company_id),
      audit_seq: Number(h.audit_seq),
      audit_hash: String(h.audit_hash),
    }));
  } finally {
    db.close();
  }
}

/**
 * The tenants of `reference` whose head in `heads` is at a lower seq (or absent): what `heads`
 * lacks of `reference`'s history. Pure.
 */
export function headsBehind(heads: readonly ChainHead[], reference: readonly ChainHead[]): HeadBehind[] {
  const by = new Map(heads.map((h) => [Number(h.company_id), Number(h.audit_seq)]));
  const out: HeadBehind[] = [];
  for (const r of reference) {
    const seq = by.get(Number(r.company_id)) ?? 0;
    if (seq < Number(r.audit_seq))
      out.push({ company_id: Number(r.company_id), seq, other_seq: Number(r.audit_seq) });
  }
  return out.sort((a, b) => a.company_id - b.company_id);
}

/**
 * Check the SQLite database copy at `path` (a backup file, or a database just restored):
 * structure, chain, checkpoints, receipts, and, with `expectHeads`, that no tenant's head lies
 * behind them. `ok` only when all hold. Throws VerbError store_unavailable when the file is not a
 * readable solid database.
 */
export async function checkDatabaseCopy(
  path: string,
  options: { expectHeads?: readonly ChainHead[] } & Pick<
    VerifyDatabaseOptions,
    'trust' | 'maxUnsignedSeconds' | 'parallelMinRows'
  > &
    Pick<VerifyOptions, 'maxFindings'> = {},
): Promise<CopyCheck> {
  const heads = readChainHeads(path); // also proves it is a solid database
  const structure = sqliteQuickCheck(path);
  const { expectHeads, ...verify } = options;
  const report = await verifyDatabaseFile(path, verify);
  const behind = expectHeads === undefined ? [] : headsBehind(heads, expectHeads);
  return { ok: structure.length === 0 && report.ok && behind.length === 0, structure, report, behind, heads };
}

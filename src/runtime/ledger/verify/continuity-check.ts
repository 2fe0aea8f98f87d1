/**
 * The archived-and-pruned boundary of a tenant's audit chain (spec/audit.md §retention), as
 * `audit verify` sees it: the signed continuity records a database keeps in `audit_archives`
 * (`storedContinuity`), checked for a trusted signature and for continuing one another from seq 1
 * and the genesis hash (`checkContinuity`, findings `bad_signature`, `unknown_key`, `chain_break`).
 * The last record of a tenant is the base (`ChainBase`: seq and hash of the boundary row) its kept
 * chain is walked from (verify.ts `tenantWalker`, `assemble`). The archived rows themselves are
 * checked against their export files by retention/archive.ts (`audit verify --archive`).
 */
import type { KeyObject } from 'node:crypto';
import type { Queryable } from '../../../store/store.ts';
import { GENESIS_HASH } from '../write/audit.ts';
import { continuitySignatureValid, type ContinuityRecord } from '../keys/continuity.ts';
import type { AuditFinding } from './chain-walk.ts';

/** Where a tenant's kept chain starts after archived ranges: the boundary row's seq and hash. */
export interface ChainBase {
  seq: number;
  hash: string;
  /** Rows archived, over all records. */
  rows: number;
  records: number;
}

/** The continuity records checked: each tenant's base, findings, and the plain words of the cut. */
export interface CheckedContinuity {
  bases: Map<number, ChainBase>;
  findings: AuditFinding[];
  warnings: string[];
}

/** The continuity records stored in a database (`audit_archives`), or none in one older than retention. */
export async function storedContinuity(
  q: Pick<Queryable, 'all'>,
  tenant?: number,
): Promise<ContinuityRecord[]> {
  try {
    const rows = await q.all<{ record: string }>(
      `SELECT record FROM audit_archives${tenant === undefined ? '' : ' WHERE company_id = ?'} ORDER BY company_id, through_seq`,
      tenant === undefined ? [] : [tenant],
    );
    return rows.map((r) => JSON.parse(r.record) as ContinuityRecord);
  } catch (err) {
    if (/audit_archives/.test((err as Error).message)) return [];
    throw err;
  }
}

/**
 * Check the signed continuity records of archived ranges (spec/audit.md §retention): each must
 * verify with a trusted key (`bad_signature`, `unknown_key`) and continue the one before (first
 * from seq 1 and the genesis hash; `chain_break` otherwise). The last record of a tenant is the
 * base its kept chain links to. Pure.
 */
export function checkContinuity(
  records: readonly ContinuityRecord[],
  keys: ReadonlyMap<string, KeyObject>,
  only: number | undefined,
): CheckedContinuity {
  const bases = new Map<number, ChainBase>();
  const findings: AuditFinding[] = [];
  const sorted = [...records]
    .filter((r) => only === undefined || Number(r.company_id) === only)
    .sort((a, b) => a.company_id - b.company_id || a.rows.last_seq - b.rows.last_seq);
  for (const r of sorted) {
    const t = Number(r.company_id);
    const prev = bases.get(t);
    const kid = r.signature?.kid ?? '';
    const key = keys.get(kid);
    if (key === undefined)
      findings.push({
        kind: 'unknown_key',
        company_id: t,
        seq: r.rows.last_seq,
        kid,
        message: `The continuity record of the archived rows seq ${r.rows.first_seq}–${r.rows.last_seq} is signed by key ${kid}, which is not among the trusted keys.`,
      });
    else if (!continuitySignatureValid(r, key))
      findings.push({
        kind: 'bad_signature',
        company_id: t,
        seq: r.rows.last_seq,
        kid,
        message: `The continuity record of the archived rows seq ${r.rows.first_seq}–${r.rows.last_seq} does not verify with key ${kid}: it was forged or altered (rows may have been deleted under it).`,
      });
    const expectSeq = (prev?.seq ?? 0) + 1;
    const expectHash = prev?.hash ?? GENESIS_HASH;
    if (r.rows.first_seq !== expectSeq || r.chain.prev_hash !== expectHash)
      findings.push({
        kind: 'chain_break',
        company_id: t,
        seq: r.rows.first_seq,
        message: `The archived range seq ${r.rows.first_seq}–${r.rows.last_seq} does not continue the one before it (expected it to start at seq ${expectSeq}, linked to hash ${expectHash.slice(0, 12)}…).`,
      });
    bases.set(t, {
      seq: r.rows.last_seq,
      hash: r.chain.boundary_hash,
      rows: (prev?.rows ?? 0) + r.rows.count,
      records: (prev?.records ?? 0) + 1,
    });
  }
  const warnings = [...bases].map(
    ([t, b]) =>
      `Tenant ${t}: rows seq 1–${b.seq} were archived and pruned (${b.records} signed continuity record${b.records === 1 ? '' : 's'}); this database was verified from seq ${b.seq + 1} on, linked to the signed boundary. Pass the archive directory (--archive DIR) to verify the whole history.`,
  );
  return { bases, findings, warnings };
}

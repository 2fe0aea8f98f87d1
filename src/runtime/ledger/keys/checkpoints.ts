/**
 * Signed checkpoints of a tenant's chain head: ES256 (IEEE P1363 signature) with the tenant's
 * active key over 0x01 ‖ canonical({company_id, seq, head_hash, created_at}), one row in
 * audit_checkpoints. `audit verify` (ledger/verify/verify.ts) checks them with the same material.
 *
 * Spec: spec/audit.md §checkpoints.
 */
import { sign as nodeSign } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Store } from '../../../store/store.ts';
import type { TenantKeys } from './tenant-keys.ts';

/** The bytes a checkpoint signature covers. */
export function checkpointMaterial(c: {
  company_id: number;
  seq: number;
  head_hash: string;
  created_at: string;
}): Buffer {
  return Buffer.concat([
    Buffer.from([0x01]),
    Buffer.from(
      canonicalize({
        company_id: c.company_id,
        seq: c.seq,
        head_hash: c.head_hash,
        created_at: c.created_at,
      }) ?? '',
      'utf8',
    ),
  ]);
}

/**
 * Write a signed checkpoint of a tenant's chain head (locked while signing), dated `clock()`.
 * No-op (undefined) when the chain is empty or the head did not move since the last checkpoint.
 */
export async function writeCheckpoint(
  store: Store,
  keys: TenantKeys,
  clock: () => Date,
  companyId: number,
): Promise<{ seq: number; head_hash: string } | undefined> {
  const key = await keys.signingKey(companyId);
  return store.write(async (tx) => {
    const head = await tx.lockTenantHead(companyId);
    if (head.audit_seq === 0) return undefined;
    const last = await tx.get<{ seq: number }>(
      'SELECT MAX(seq) AS seq FROM audit_checkpoints WHERE company_id = ?',
      [companyId],
    );
    if (last?.seq !== null && last?.seq !== undefined && Number(last.seq) >= head.audit_seq) return undefined;
    const created_at = clock().toISOString();
    const material = checkpointMaterial({
      company_id: companyId,
      seq: head.audit_seq,
      head_hash: head.audit_hash,
      created_at,
    });
    const signature = nodeSign('sha256', material, {
      key: key.keyObject,
      dsaEncoding: 'ieee-p1363',
    }).toString('base64url');
    await tx.run(
      'INSERT INTO audit_checkpoints (company_id, seq, head_hash, created_at, kid, signature) VALUES (?, ?, ?, ?, ?, ?)',
      [companyId, head.audit_seq, head.audit_hash, created_at, key.kid, signature],
    );
    return { seq: head.audit_seq, head_hash: head.audit_hash };
  });
}

/** The tenants that have a chain head (every one a checkpoint pass considers). */
export async function checkpointedTenants(store: Store): Promise<number[]> {
  const ids = await store.read((q) => q.all<{ company_id: number }>('SELECT company_id FROM tenant_heads'));
  return ids.map((r) => Number(r.company_id));
}

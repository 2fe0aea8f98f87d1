/**
 * The signed continuity record of an archived range (spec/audit.md §retention): when a tenant's
 * rows up to a boundary are archived and pruned, this record — kept in `audit_archives` — says
 * which rows went (`first_seq`…`last_seq`, `count`), how they linked (`prev_hash` before the
 * first, `boundary_hash` = the last one's `row_hash`) and where they went (the archive's rows file
 * and manifest, with the rows file's SHA-256). Signed ES256 (IEEE P1363) with the tenant's active
 * key over `0x03 ‖ canonical(record without "signature")`, apart from rows (0x00), checkpoints
 * (0x01) and export manifests (0x02).
 */
import type { KeyObject } from 'node:crypto';
import {
  documentMaterial,
  documentSignatureValid,
  signDocument,
  type DocumentSignature,
} from './signed-document.ts';
import type { SigningKey } from './tenant-keys.ts';

/** One archived range of a tenant's chain. Every field is covered by the signature. */
export interface ContinuityRecord {
  solid_audit_continuity: 1;
  company_id: number;
  /** When the range was archived and pruned (ISO-8601, UTC). */
  archived_at: string;
  /** The cut asked for: rows created before this time (ISO-8601). */
  before: string;
  rows: { count: number; first_seq: number; last_seq: number };
  /** The chain before the range (the first row's prev_hash) and at its end (the last row's row_hash). */
  chain: { prev_hash: string; boundary_hash: string };
  /** The archive: file names (no directory) and the SHA-256 of the rows file. */
  archive: { rows_file: string; manifest_file: string; digest: { alg: 'sha-256'; hex: string } };
  signature?: DocumentSignature;
}

/** The bytes the signature covers: 0x03 ‖ RFC 8785 JSON of the record without `signature`. */
export function continuityMaterial(r: ContinuityRecord): Buffer {
  return documentMaterial(0x03, r);
}

/** Sign a continuity record with the tenant's signing key. */
export function signContinuity(r: ContinuityRecord, key: SigningKey): ContinuityRecord {
  return signDocument(0x03, r, key);
}

/** Does the record's signature verify with `key`? False for any malformed signature. */
export function continuitySignatureValid(r: ContinuityRecord, key: KeyObject): boolean {
  return documentSignatureValid(0x03, r, key);
}

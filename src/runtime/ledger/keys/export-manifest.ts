/**
 * The signed manifest of an audit export (`solid audit export`): what range of a tenant's chain a
 * rows file holds, the chain heads around it, the checkpoint signatures covering it, the public
 * keys, the row count and the SHA-256 of the rows file — signed ES256 (IEEE P1363) with the
 * tenant's active signing key over `0x02 ‖ canonical(manifest without "signature")`. The `0x02`
 * prefix keeps this material apart from row hashes (0x00) and checkpoints (0x01).
 *
 * Spec: spec/audit.md §export.
 */
import type { KeyObject } from 'node:crypto';
import {
  documentMaterial,
  documentSignatureValid,
  signDocument,
  type DocumentSignature,
} from './signed-document.ts';
import type { PublicJwk, SigningKey } from './tenant-keys.ts';
import type { CheckpointRecord } from '../verify/verify.ts';

/** Rows file formats. Only NDJSON carries every value exactly (null vs "", numbers vs text). */
export type ExportFormat = 'ndjson' | 'csv';

/** The manifest of one export. Every field is covered by the signature. */
export interface ExportManifest {
  solid_audit_export: 1;
  company_id: number;
  /** When the export was made (ISO-8601, UTC). */
  exported_at: string;
  /** The period asked for: rows with from ≤ created_at < to (ISO-8601). */
  from: string;
  to: string;
  format: ExportFormat;
  /** The rows file's name (no directory): the manifest sits next to it. */
  rows_file: string;
  /** The contiguous seq range exported; first/last are null when the period holds no row. */
  rows: {
    count: number;
    first_seq: number | null;
    last_seq: number | null;
    first_audit_id: number | null;
    last_audit_id: number | null;
  };
  /** The chain head before the range (the first row's prev_hash) and after it (the last row's row_hash). */
  chain: { prev_hash: string | null; head_hash: string | null };
  /** SHA-256 of the rows file's bytes, hex. */
  digest: { alg: 'sha-256'; hex: string };
  /** The tenant's signed checkpoints with seq in [first_seq − 1, last_seq]: signatures made when the rows were written. */
  checkpoints: CheckpointRecord[];
  /** Every public key of the tenant (any state): the checkpoints' and the manifest's. */
  keys: PublicJwk[];
  signature?: DocumentSignature;
}

/** The manifest path of a rows file: `<rows file>.manifest.json`. */
export function manifestPathOf(rowsPath: string): string {
  return `${rowsPath}.manifest.json`;
}

/** The bytes the manifest signature covers: 0x02 ‖ RFC 8785 JSON of the manifest without `signature`. */
export function manifestMaterial(m: ExportManifest): Buffer {
  return documentMaterial(0x02, m);
}

/** Sign a manifest with the tenant's signing key; returns the manifest with `signature`. */
export function signManifest(m: ExportManifest, key: SigningKey): ExportManifest {
  return signDocument(0x02, m, key);
}

/** Does the manifest's signature verify with `key`? False for any malformed signature. */
export function manifestSignatureValid(m: ExportManifest, key: KeyObject): boolean {
  return documentSignatureValid(0x02, m, key);
}

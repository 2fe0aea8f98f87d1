/**
 * Rollback handles: opaque to agents, authenticated by the runtime. A handle is the verb's
 * readable inverse (e.g. `infra:resize:1:s-2vcpu-4gb`) followed by `~` and an HMAC tag binding it
 * to the tenant and the audit_id. A forged or altered handle is refused (rollback_handle_invalid).
 *
 * Spec: spec/receipts.md §rollback_handle.
 */
import { timingSafeEqual } from 'node:crypto';
import type { Secrets } from '../../secrets.ts';
import { VerbError } from '../../errors.ts';

/** Seal a handle body for (company, audit_id). */
export function sealRollbackHandle(
  secrets: Secrets,
  body: string,
  companyId: number,
  auditId: number,
): string {
  const kid = secrets.currentKid;
  const tag = secrets.mac('rollback', `${companyId}\n${auditId}\n${body}`, kid).slice(0, 22);
  return `${body}~${auditId}.${kid}.${tag}`;
}

/** Open a sealed handle for this tenant; returns the audit_id it belongs to. Throws rollback_handle_invalid. */
export function openRollbackHandle(
  secrets: Secrets,
  handle: unknown,
  companyId: number,
): { auditId: number; body: string } {
  const invalid = () =>
    new VerbError(
      'rollback_handle_invalid',
      'The rollback_handle is not one this runtime issued to this tenant (forged, altered or foreign).',
      {
        hint: 'Pass the audit_id from the receipt to audit.revert instead, or copy the rollback_handle exactly as received.',
      },
    );
  if (typeof handle !== 'string' || handle.length > 2048) throw invalid();
  const cut = handle.lastIndexOf('~');
  if (cut < 0) throw invalid();
  const body = handle.slice(0, cut);
  const [id, kid, tag] = handle.slice(cut + 1).split('.');
  const auditId = Number(id);
  if (!Number.isSafeInteger(auditId) || auditId < 1 || kid === undefined || tag === undefined)
    throw invalid();
  let expected: string;
  try {
    expected = secrets.mac('rollback', `${companyId}\n${auditId}\n${body}`, kid).slice(0, 22);
  } catch {
    throw invalid();
  }
  const a = Buffer.from(expected);
  const b = Buffer.from(tag);
  if (a.length !== b.length || !timingSafeEqual(a, b)) throw invalid();
  return { auditId, body };
}

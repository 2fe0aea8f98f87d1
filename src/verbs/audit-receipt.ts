/**
 * The receipt of one past action, and its verification (spec/receipts.md §stored):
 *
 * - audit.receipt { audit_id }         READ (aggregate): the signed receipt of a completed write
 *   of this tenant, as it was answered (domain fields, idempotency_key, rollback_handle,
 *   attestation), signed now with the tenant's current key like a replay. `data.receipt` is the
 *   file to keep; `solid receipt verify` checks it offline.
 *   Reasons: not_found (no such write of this tenant, or no receipt kept for it: a read, a
 *   refusal, a transaction step — whose receipt is the commit's).
 * - audit.verify_receipt { receipt }   READ (aggregate): check a receipt (or an envelope, result
 *   or data holding one) against this tenant's published keys (verifyReceipt) and this tenant's audit log (the
 *   row at its seq must still carry its hashes: checkReceiptInLog). The log is looked at only for
 *   a receipt whose signature verifies with this tenant's keys (`log: null` otherwise): an edited
 *   seq or hash is the receipt's fault, never "the log was rewritten"; a receipt of another
 *   tenant is not found among this tenant's keys. Never refuses a malformed receipt (an
 *   attestation that is null, a string, …): `valid: false` with the reasons.
 */
import { defineSystemVerb } from '../runtime/verb.ts';
import { VerbError } from '../runtime/errors.ts';
import { findReceipt } from '../runtime/ledger/write/receipt-store.ts';
import { signChainedReceipt, verifyReceipt } from '../runtime/ledger/keys/receipts.ts';
import { databaseKeys } from '../runtime/ledger/verify/verify.ts';
import { checkReceiptInLog, type ReceiptLogCheck } from '../runtime/ledger/verify/receipt-check.ts';
import { attestedRow, receiptIn } from '../runtime/ledger/verify/receipt-doc.ts';
import { consentInWords } from '../runtime/consent/provenance.ts';

export const auditReceipt = defineSystemVerb<{ audit_id: number }>({
  name: 'audit.receipt',
  title: 'Signed receipt',
  description:
    'The signed receipt of one completed write (by audit_id): its result, idempotency_key, rollback_handle and the signed attestation. Keep data.receipt as proof; check it with audit.verify_receipt.',
  shape: 'aggregate',
  category: 'audit',
  input: {
    type: 'object',
    properties: { audit_id: { type: 'integer', minimum: 1, description: 'The audit row of the action.' } },
    required: ['audit_id'],
    additionalProperties: false,
  },
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    const companyId = ctx.principal.company_id;
    const stored = await findReceipt(ctx.db, companyId, args.audit_id);
    if (stored === undefined)
      throw new VerbError('not_found', `There is no signed receipt for action #${args.audit_id}.`, {
        hint: 'Only completed writes have receipts (a transaction step shares its commit’s); find the action with audit.trail.',
      });
    const receipt = await signChainedReceipt(stored, await ctx.runtime.keys.signingKey(companyId));
    return {
      entity_type: 'audit',
      entity_id: args.audit_id,
      data: { receipt },
      fetched_at: ctx.now.toISOString(),
    };
  },
});

export const auditVerifyReceipt = defineSystemVerb<{ receipt: Record<string, unknown> }>({
  name: 'audit.verify_receipt',
  title: 'Verify a receipt',
  description:
    "Check a signed receipt: its signature against this tenant's keys and that the audit log still holds the attested row unchanged. Answers data.valid, data.verb (the action the log row records) and, when false, why.",
  shape: 'aggregate',
  category: 'audit',
  input: {
    type: 'object',
    properties: {
      receipt: {
        type: 'object',
        description: 'The receipt (audit.receipt data.receipt), or the envelope, result or data holding it.',
      },
    },
    required: ['receipt'],
    additionalProperties: false,
  },
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    const companyId = ctx.principal.company_id;
    const r = receiptIn(args.receipt);
    const keys = await databaseKeys(ctx.db, companyId);
    const signature = verifyReceipt(r ?? args.receipt, keys);
    const att = attestedRow(r?.attestation);
    // Only a signed seq and hashes say anything about the log.
    const row = attestedRow(r?.attestation, signature.valid);
    const ours = row !== undefined && keys.some((k) => k.kid === row.kid);
    const log: ReceiptLogCheck | null = ours ? await checkReceiptInLog(ctx.db, row) : null;
    const valid = signature.valid && log?.status === 'present';
    return {
      entity_type: 'receipt',
      entity_id: typeof r?.audit_id === 'number' ? r.audit_id : 'unknown',
      data: {
        valid,
        signature: { valid: signature.valid, kid: signature.kid ?? null, errors: signature.errors },
        log,
        audit_id: typeof r?.audit_id === 'number' ? r.audit_id : null,
        // The action the log row records: what the receipt proves, whatever a wrapper around it says.
        verb: log?.status === 'present' ? (log.verb ?? null) : null,
        seq: att?.seq ?? null,
        timestamp: typeof r?.timestamp === 'string' ? r.timestamp : null,
        // Who consented, as signed into the receipt (spec/receipts.md §consent); null when none.
        consent: consentInWords(r?.consent),
      },
      fetched_at: ctx.now.toISOString(),
    };
  },
});

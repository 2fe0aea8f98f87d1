/**
 * audit.revert (shape revert): undo one recorded write — or a whole committed transaction — with
 * the revert handler its verb declared. Consent is delegated to the action being undone (its
 * class, role floor and typed phrase); the revert is a new audited action pointing at the
 * original (parent_id); history is never rewritten. Best effort: an action nothing can undo (no
 * revert handler, a revert row) is refused with not_revertible (`details.cause`
 * no_revert_handler) before any consent is asked.
 *
 * Reasons: not_found, rollback_handle_invalid, not_revertible, already_reverted, changed_since,
 * revert_failed,
 * plus the consent reasons of the original verb's gate.
 * Spec: spec/receipts.md §revert, spec/transactions.md §revert.
 */
import { defineSystemVerb } from '../runtime/verb.ts';
import { revertConsent, runRevert, type RevertArgs } from '../runtime/ledger/transactions/revert.ts';

export const auditRevert = defineSystemVerb<RevertArgs>({
  name: 'audit.revert',
  title: 'Revert an action',
  description:
    'Undo a completed write by its audit_id (or rollback_handle) from the receipt. The undo is a new audited action (a refund, a restore), never an erasure. It passes the consent gate of the action it undoes: a financial one needs an admin and a typed phrase such as "REVERT charge_invoice #42". A committed transaction is undone in reverse. An action that cannot be undone automatically (revertible: false) is refused not_revertible before any confirmation; an action reverts once.',
  shape: 'revert',
  category: 'audit',
  input: {
    type: 'object',
    properties: {
      audit_id: {
        type: 'integer',
        minimum: 1,
        description: 'audit_id of the write to undo (from its receipt or audit.trail).',
      },
      rollback_handle: {
        type: 'string',
        minLength: 1,
        maxLength: 2048,
        description: 'Alternatively, the rollback_handle from the receipt, exactly as received.',
      },
      force: {
        type: 'boolean',
        description:
          'Revert even though a later write changed the same entity (otherwise refused with changed_since); the later change is discarded. Consent is unchanged.',
      },
    },
    additionalProperties: false,
  },
  // Activity in the owner's words: which receipt was undone (not "Revert an action").
  activity: (_read, args) =>
    Promise.resolve(args.audit_id !== undefined ? `Undo the action of receipt #${args.audit_id}` : undefined),
  delegateConsent: (ctx, args) => revertConsent(ctx, args),
  handler: (ctx, args) => runRevert(ctx, args),
  webmcp_surfaces: ['dashboard'],
});

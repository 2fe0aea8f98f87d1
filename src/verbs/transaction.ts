/**
 * transaction.start / .append / .commit / .abort / .status (shape transaction): group writes so
 * they commit together or not at all. Steps are validated and consent-checked when appended (the
 * append call carries the step's consent gate); commit runs them all in one store transaction and
 * answers the receipt chain (parent audit_id, one child per step, rollback_handle
 * `tx:<id>:rollback_all`). audit.revert of the commit undoes the steps in reverse order.
 *
 * Reasons: transaction_not_found, transaction_not_open, transaction_expired,
 * transaction_step_refused, transaction_step_failed, plus the step verb's own input and consent
 * reasons. Spec: spec/transactions.md.
 */
import { defineSystemVerb, type VerbDefinition } from '../runtime/verb.ts';
import {
  abortTransaction,
  appendConsent,
  appendStep,
  commitTransaction,
  revertTransactionSteps,
  startTransaction,
  transactionStatus,
} from '../runtime/ledger/transactions/transactions.ts';
import { loadTransaction } from '../runtime/ledger/transactions/transaction-record.ts';

const TRANSACTION_ID = {
  type: 'string',
  minLength: 1,
  maxLength: 100,
  description: 'transaction_id from transaction.start.',
} as const;

/** No gate of its own: the steps carry theirs. Any key that may write may hold a transaction. */
const noGate = (summary: string) => async () => ({
  consentClass: null,
  roleFloor: 'employee' as const,
  summary,
});

export const transactionStart = defineSystemVerb<{ ttl_seconds?: number }>({
  name: 'transaction.start',
  title: 'Start a transaction',
  description:
    'Open a transaction: a group of writes that will commit together or not at all. Returns transaction_id and expires_at (default 15 minutes). Then add steps with transaction.append and run them all with transaction.commit.',
  shape: 'transaction',
  category: 'system',
  input: {
    type: 'object',
    properties: {
      ttl_seconds: {
        type: 'integer',
        minimum: 30,
        maximum: 3600,
        description: 'How long the transaction stays open (default 900).',
      },
    },
    additionalProperties: false,
  },
  delegateConsent: noGate('Open a transaction (nothing runs until commit).'),
  ungated:
    'opening a transaction runs nothing; each step asks for its own consent when it is appended (transaction.append), and that consent must still hold at commit.',
  handler: (ctx, args) => startTransaction(ctx, args),
});

export const transactionAppend = defineSystemVerb<{
  transaction_id: string;
  verb: string;
  args?: Record<string, unknown>;
}>({
  name: 'transaction.append',
  title: 'Add a step to a transaction',
  description:
    "Add one write (verb + args) as the next step of an open transaction. The step's arguments are validated now and the step's consent gate applies to this call (confirmation, or the typed phrase for financial and irreversible verbs); nothing runs until transaction.commit. Read verbs and nested transactions are refused; a step that cannot be reverted must be the last one.",
  shape: 'transaction',
  category: 'system',
  input: {
    type: 'object',
    properties: {
      transaction_id: TRANSACTION_ID,
      verb: {
        type: 'string',
        minLength: 1,
        maxLength: 200,
        description: 'Name of the write verb to run as this step.',
      },
      args: {
        type: 'object',
        description: "The step verb's arguments (its input_schema).",
        additionalProperties: true,
      },
    },
    required: ['transaction_id', 'verb'],
    additionalProperties: false,
  },
  delegateConsent: (ctx, args) => appendConsent(ctx, args),
  handler: (ctx, args) => appendStep(ctx, args),
});

export const transactionCommit = defineSystemVerb<{ transaction_id: string }>({
  name: 'transaction.commit',
  title: 'Commit a transaction',
  description:
    "Run every step of the transaction in one database transaction: all commit or none do. Returns the receipt chain: the parent audit_id, a rollback_handle that undoes every step in reverse order (via audit.revert), and steps[] with each step's audit_id. If a step fails, nothing is applied and the answer names the step (transaction_step_failed).",
  shape: 'transaction',
  category: 'system',
  input: {
    type: 'object',
    properties: { transaction_id: TRANSACTION_ID },
    required: ['transaction_id'],
    additionalProperties: false,
  },
  // targets: the steps' verbs — a credential commits only steps it could call itself (another key
  // of the same user may have appended them). spec/consent.md §api-keys
  delegateConsent: async (ctx, args) => ({
    ...(await noGate('Run the consented steps of the transaction, all or none.')()),
    targets: await loadTransaction(ctx.db, ctx.principal, args.transaction_id).then(
      (t) => t.steps.map((s) => s.verb),
      () => [],
    ),
  }),
  handler: (ctx, args) => commitTransaction(ctx, args),
  revert: {
    handler: (ctx, original) => revertTransactionSteps(ctx, original),
    phrase: (original) =>
      `REVERT transaction ${String(original.rollback.transaction_id)} #${original.audit_id}`,
  },
});

export const transactionAbort = defineSystemVerb<{ transaction_id: string }>({
  name: 'transaction.abort',
  title: 'Abort a transaction',
  description: 'Discard an open transaction: none of its steps run.',
  shape: 'transaction',
  category: 'system',
  input: {
    type: 'object',
    properties: { transaction_id: TRANSACTION_ID },
    required: ['transaction_id'],
    additionalProperties: false,
  },
  delegateConsent: noGate('Discard the transaction; none of its steps run.'),
  ungated: 'aborting discards steps that never ran; it only removes a way to act.',
  handler: (ctx, args) => abortTransaction(ctx, args),
});

export const transactionStatusVerb = defineSystemVerb<{ transaction_id: string }>({
  name: 'transaction.status',
  title: 'Transaction status',
  description:
    'Show one of your transactions: status (started, appended, committed, aborted, expired, failed, reverted, partially_reverted), its steps with their status and audit_id, and expires_at while open.',
  shape: 'transaction',
  category: 'system',
  consent: 'READ',
  input: {
    type: 'object',
    properties: { transaction_id: TRANSACTION_ID },
    required: ['transaction_id'],
    additionalProperties: false,
  },
  idempotent: true,
  handler: (ctx, args) => transactionStatus(ctx, args),
});

export const transactionVerbs: VerbDefinition[] = [
  transactionStart,
  transactionAppend,
  transactionCommit,
  transactionAbort,
  transactionStatusVerb,
];

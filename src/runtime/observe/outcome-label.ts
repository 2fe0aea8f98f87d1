/**
 * The one label of a dispatch's outcome that metrics, request logs and spans share, so a
 * dashboard joining them never sees two spellings. Spec: spec/transports.md §metrics, §request-log.
 */
import type { DispatchOutcome } from '../core.ts';

/** ok | pending (a consent gate is waiting) | denied (a denial reason) | failed (anything else). */
export type OutcomeLabel = 'ok' | 'pending' | 'denied' | 'failed';

/**
 * Label one dispatch outcome: `ok` when it answered ok; `pending` for `dispatch_pending`;
 * `denied` when its reason is a denial (role, tier, consent, auth…); `failed` otherwise.
 */
export function outcomeLabel(o: Pick<DispatchOutcome, 'ok' | 'reason' | 'denial'>): OutcomeLabel {
  if (o.ok) return 'ok';
  if (o.reason === 'dispatch_pending') return 'pending';
  return o.denial ? 'denied' : 'failed';
}

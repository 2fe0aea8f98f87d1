/**
 * The CLI's own refusals (its flags, its offline inputs), beside the runtime's catalogue
 * (src/runtime/refusals.ts). Spec: spec/reasons.md §catalogue.
 */
import { VerbError } from '../../runtime/errors.ts';

export const cliRefuse = {
  /** `invalid_args`: a `--tenant` flag that is not a positive integer. */
  tenantFlag(value: string): VerbError {
    return new VerbError('invalid_args', `--tenant must be a positive integer, not "${value}".`, {
      hint: 'Pass the company_id, e.g. --tenant 2.',
    });
  },

  /** `store_unavailable`: a write reached a read-only audit source (`solid audit verify` inputs). */
  readOnlyAuditSource(): VerbError {
    return new VerbError('store_unavailable', 'This audit source is read-only.');
  },
} as const;

/**
 * The failed-sign-in throttle shared by every place a person proves who they are: the sign-in
 * routes (passkey, TOTP) and the human factor at the local CLI's terminal (terminal-human.ts).
 * Failures are counted per bucket (`signin:addr:<ip>`, `signin:user:<company>:<user>`) in fixed
 * windows of {@link SIGNIN_FAILURE_WINDOW_MS}; at {@link SIGNIN_FAILURE_LIMIT} the bucket answers
 * `rate_limited` until the window ends. A CLI guessing codes and a browser guessing codes for the
 * same user count against one budget. spec/consent.md §human-sign-in
 */
import { VerbError } from '../runtime/errors.ts';
import type { Store } from '../store/store.ts';
import { countHit } from '../store/rate-limit-counters.ts';

/** Failed sign-ins allowed per address and per user in one window before `rate_limited`. */
export const SIGNIN_FAILURE_LIMIT = 10;
/** The failure-counting window: 15 minutes, in ms. */
export const SIGNIN_FAILURE_WINDOW_MS = 15 * 60_000;

/** Count failures of these buckets in the current window; refuse when one is at the limit. */
export async function assertNotThrottled(store: Store, buckets: string[], nowMs: number): Promise<void> {
  const start = Math.floor(nowMs / SIGNIN_FAILURE_WINDOW_MS) * SIGNIN_FAILURE_WINDOW_MS;
  for (const bucket of buckets) {
    const row = await store.read((q) =>
      q.get<{ count: number | string }>(
        'SELECT count FROM rate_limit_counters WHERE bucket = ? AND window_start = ?',
        [bucket, start],
      ),
    );
    if (row !== undefined && Number(row.count) >= SIGNIN_FAILURE_LIMIT) {
      const retry = Math.ceil((start + SIGNIN_FAILURE_WINDOW_MS - nowMs) / 1000);
      throw new VerbError('rate_limited', 'Too many failed sign-ins; wait before trying again.', {
        hint: `Try again in ${retry} seconds.`,
        details: { retry_after_seconds: retry },
      });
    }
  }
}

/** Count one failure against each bucket (see the header). */
export async function noteFailure(store: Store, buckets: string[], nowMs: number): Promise<void> {
  const start = Math.floor(nowMs / SIGNIN_FAILURE_WINDOW_MS) * SIGNIN_FAILURE_WINDOW_MS;
  for (const bucket of buckets) await countHit(store, bucket, start, start + SIGNIN_FAILURE_WINDOW_MS);
}

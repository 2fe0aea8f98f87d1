/**
 * Confidence bands of the demo pack's suggest verbs (documented in docs/demo.md §suggest):
 * `learning` while the sample behind a suggestion is thinner than {@link LEARNING_BELOW}
 * observations, whatever the confidence; otherwise `high` from {@link HIGH_AT}, `medium` from
 * {@link MEDIUM_AT}, `low` below. Confidence is a probability in 0..1 rounded to 4 decimals.
 *
 * Spec: spec/shapes.md §suggest.
 */

/** Fewer observations than this: band `learning`. */
export const LEARNING_BELOW = 20;
/** Confidence at or above this (with enough observations): band `high`. */
export const HIGH_AT = 0.5;
/** Confidence at or above this (and below HIGH_AT): band `medium`; below it `low`. */
export const MEDIUM_AT = 0.2;

export type ConfidenceBand = 'high' | 'medium' | 'low' | 'learning';

/** The band of `confidence` resting on `sampleSize` observations. */
export function confidenceBand(confidence: number, sampleSize: number): ConfidenceBand {
  if (sampleSize < LEARNING_BELOW) return 'learning';
  if (confidence >= HIGH_AT) return 'high';
  if (confidence >= MEDIUM_AT) return 'medium';
  return 'low';
}

/** `part / whole` as a probability rounded to 4 decimals (0 when whole is 0). */
export function ratio(part: number, whole: number): number {
  return whole <= 0 ? 0 : Math.round((part / whole) * 10_000) / 10_000;
}

/** A probability as a percentage for reasons: 0.4212 → "42%". */
export function percent(p: number): string {
  return `${Math.round(p * 100)}%`;
}

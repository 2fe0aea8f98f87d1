/**
 * Fixed log-scale latency bins, shared by reputation buckets and telemetry slots, so histograms
 * from any node, hour or slot add up bin by bin.
 *
 * Bin 0 holds [0, 0.01 ms); bin i ≥ 1 holds [0.01·r^(i-1), 0.01·r^i) ms with r = 2^(1/4) (each bin
 * about 19 % wide); the last bin (LATENCY_BINS - 1) also takes everything slower (about 10 h and up).
 * A percentile is read with the nearest-rank rule (the value of rank ⌈p·n⌉ in ascending order) and
 * reported as the geometric middle of the bin that rank falls in, so it is within one bin (±19 %)
 * of the exact value. Spec: spec/shapes.md §reputation, §telemetry.
 */

/** Lower edge of bin 1, in milliseconds. */
export const LATENCY_BASE_MS = 0.01;
/** Ratio between consecutive bin edges. */
export const LATENCY_RATIO = 2 ** 0.25;
/** Number of bins (0 … LATENCY_BINS - 1). */
export const LATENCY_BINS = 128;

const LOG_RATIO = Math.log(LATENCY_RATIO);

/** The bin of a latency in milliseconds (negative or NaN → bin 0). */
export function latencyBin(ms: number): number {
  if (!(ms >= LATENCY_BASE_MS)) return 0;
  const i = Math.floor(Math.log(ms / LATENCY_BASE_MS) / LOG_RATIO) + 1;
  return i >= LATENCY_BINS ? LATENCY_BINS - 1 : i;
}

/** Lower and upper edge of a bin, in ms (the last bin's upper edge is its nominal one). */
export function binEdges(bin: number): [number, number] {
  if (bin <= 0) return [0, LATENCY_BASE_MS];
  return [LATENCY_BASE_MS * LATENCY_RATIO ** (bin - 1), LATENCY_BASE_MS * LATENCY_RATIO ** bin];
}

/** The value reported for a bin: its geometric middle, rounded to the microsecond. */
export function binValue(bin: number): number {
  const [lo, hi] = binEdges(bin);
  const v = bin <= 0 ? hi / 2 : Math.sqrt(lo * hi);
  return Math.round(v * 1000) / 1000;
}

/** A sparse histogram: bin → count. */
export type Histogram = Map<number, number>;

/** Add `count` observations to bin `bin`. */
export function addToHistogram(h: Histogram, bin: number, count = 1): void {
  h.set(bin, (h.get(bin) ?? 0) + count);
}

/**
 * Nearest-rank percentile (p in (0, 1]) of a histogram, as the bin's value in ms; null when empty.
 */
export function histogramPercentile(h: Histogram, p: number): number | null {
  let n = 0;
  for (const c of h.values()) n += c;
  if (n === 0) return null;
  const rank = Math.max(1, Math.ceil(p * n));
  const bins = [...h.keys()].sort((a, b) => a - b);
  let seen = 0;
  for (const b of bins) {
    seen += h.get(b)!;
    if (seen >= rank) return binValue(b);
  }
  return binValue(bins[bins.length - 1]!);
}

/** Nearest-rank percentile of raw values (tests and recomputation); null when empty. */
export function exactPercentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil(p * sorted.length)) - 1]!;
}

/**
 * Telemetry collector (shape telemetry): this process's recent dispatch outcomes, in memory.
 *
 * `rt.onDispatch` feeds `record()` one outcome per dispatch (O(1): a counter and a histogram bin in
 * the current 10-second slot). A ring of 360 slots keeps the last hour, for the whole process and
 * per tenant (a tenant's ring exists once it dispatched; idle rings are dropped after an hour).
 * A snapshot sums the slots inside the window (to the slot: the window is rounded up to 10 s).
 *
 * Counting: ok → ok; dispatch_pending → pending (neither error nor denial); a reason the reason
 * table flags as a denial → denials; anything else → errors. Latency percentiles are over ok calls,
 * from the shared log-scale bins (±19 %). Figures are per node: on several nodes each answers for
 * itself. Spec: spec/shapes.md §telemetry.
 */
import type { DispatchOutcome } from '../core.ts';
import { addToHistogram, histogramPercentile, latencyBin, type Histogram } from './latency-histogram.ts';

/** Width of one slot (ms). */
export const TELEMETRY_SLOT_MS = 10_000;
/** Slots kept: one hour. */
export const TELEMETRY_SLOTS = 360;
/** Longest window a snapshot covers (seconds). */
export const TELEMETRY_MAX_WINDOW_SECONDS = (TELEMETRY_SLOT_MS * TELEMETRY_SLOTS) / 1000;

interface Slot {
  epoch: number;
  total: number;
  ok: number;
  errors: number;
  denials: number;
  pending: number;
  reasons: Map<string, number>;
  hist: Histogram;
}

class Ring {
  readonly slots: Array<Slot | undefined> = new Array(TELEMETRY_SLOTS);
  last = 0;
  slot(epoch: number): Slot {
    const i = epoch % TELEMETRY_SLOTS;
    let s = this.slots[i];
    if (s === undefined || s.epoch !== epoch) {
      s = { epoch, total: 0, ok: 0, errors: 0, denials: 0, pending: 0, reasons: new Map(), hist: new Map() };
      this.slots[i] = s;
    }
    this.last = epoch;
    return s;
  }
}

/** Dispatch figures over a window. */
export interface DispatchSnapshot {
  dispatch: {
    total: number;
    ok: number;
    errors: number;
    denials: number;
    pending: number;
    error_rate: number;
    denial_rate: number;
  };
  latency_ms: { p50: number | null; p95: number | null; p99: number | null };
  by_reason: Record<string, number>;
}

export class TelemetryCollector {
  readonly #all = new Ring();
  readonly #tenants = new Map<number, Ring>();

  /** Count one outcome (the onDispatch hook). */
  record(o: DispatchOutcome): void {
    const epoch = Math.floor(o.at / TELEMETRY_SLOT_MS);
    let ring = this.#tenants.get(o.company_id);
    if (ring === undefined) {
      ring = new Ring();
      this.#tenants.set(o.company_id, ring);
    }
    count(this.#all.slot(epoch), o);
    count(ring.slot(epoch), o);
  }

  /**
   * Figures of the last `windowSeconds` (≤ TELEMETRY_MAX_WINDOW_SECONDS) ending at `nowMs`, for one
   * tenant, or for the whole process when `companyId` is null.
   */
  snapshot(companyId: number | null, windowSeconds: number, nowMs: number): DispatchSnapshot {
    const ring = companyId === null ? this.#all : this.#tenants.get(companyId);
    const now = Math.floor(nowMs / TELEMETRY_SLOT_MS);
    const span = Math.min(TELEMETRY_SLOTS, Math.ceil((windowSeconds * 1000) / TELEMETRY_SLOT_MS));
    const acc = { total: 0, ok: 0, errors: 0, denials: 0, pending: 0 };
    const reasons: Record<string, number> = {};
    const hist: Histogram = new Map();
    if (ring !== undefined) {
      for (const s of ring.slots) {
        if (s === undefined || s.epoch > now || s.epoch <= now - span) continue;
        acc.total += s.total;
        acc.ok += s.ok;
        acc.errors += s.errors;
        acc.denials += s.denials;
        acc.pending += s.pending;
        for (const [r, c] of s.reasons) reasons[r] = (reasons[r] ?? 0) + c;
        for (const [b, c] of s.hist) addToHistogram(hist, b, c);
      }
    }
    return {
      dispatch: {
        ...acc,
        error_rate: acc.total === 0 ? 0 : acc.errors / acc.total,
        denial_rate: acc.total === 0 ? 0 : acc.denials / acc.total,
      },
      latency_ms: {
        p50: histogramPercentile(hist, 0.5),
        p95: histogramPercentile(hist, 0.95),
        p99: histogramPercentile(hist, 0.99),
      },
      by_reason: reasons,
    };
  }

  /** Drop tenant rings idle for longer than the ring covers. */
  prune(nowMs: number): void {
    const now = Math.floor(nowMs / TELEMETRY_SLOT_MS);
    for (const [id, ring] of this.#tenants) if (ring.last <= now - TELEMETRY_SLOTS) this.#tenants.delete(id);
  }
}

function count(s: Slot, o: DispatchOutcome): void {
  s.total++;
  if (o.ok) {
    s.ok++;
    addToHistogram(s.hist, latencyBin(o.latency_ms));
    return;
  }
  if (o.reason === 'dispatch_pending') {
    s.pending++;
    return;
  }
  if (o.denial) s.denials++;
  else s.errors++;
  if (o.reason !== null) s.reasons.set(o.reason, (s.reasons.get(o.reason) ?? 0) + 1);
}

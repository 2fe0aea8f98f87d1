/**
 * Building outcomes: `pass`, `fail`, `skip` return one; `Fail` and `Skip` are thrown from deep
 * inside a check (a helper that could not get what the check needs) and caught by the runner.
 * `excerpt` keeps evidence short: long strings, arrays and deep objects are cut with a note.
 * Spec: spec/conformance.md §outcomes.
 */
import type { Evidence, Outcome } from './types.ts';

/** A passed check: `message` says what held (one line). */
export function pass(message: string, ...evidence: Evidence[]): Outcome {
  return { status: 'pass', message, evidence };
}

/** A failed check: `message` says what did not hold; the evidence shows the exchange. */
export function fail(message: string, ...evidence: Evidence[]): Outcome {
  return { status: 'fail', message, evidence };
}

/** A skipped check: `message` is the reason (what the run lacks, or why it cannot be observed). */
export function skip(message: string, ...evidence: Evidence[]): Outcome {
  return { status: 'skip', message, evidence };
}

/** Thrown to fail the running check with evidence. */
export class Fail extends Error {
  override readonly name = 'Fail';
  constructor(
    message: string,
    readonly evidence: Evidence[] = [],
  ) {
    super(message);
  }
}

/** Thrown to skip the running check with its reason. */
export class Skip extends Error {
  override readonly name = 'Skip';
  constructor(
    message: string,
    readonly evidence: Evidence[] = [],
  ) {
    super(message);
  }
}

/** The run's budget (time or request count) is used up: the check is skipped and the run fails. */
export class BudgetExhausted extends Error {
  override readonly name = 'BudgetExhausted';
}

/** An exchange that produced no usable answer: the running check fails with the request as evidence. */
export class ExchangeFailed extends Error {
  constructor(
    message: string,
    readonly request: string,
  ) {
    super(message);
  }
}

/** A request got no answer in time. */
export class RequestTimeout extends ExchangeFailed {
  override readonly name = 'RequestTimeout';
}

/** An answer larger than the run's limit (counted after any decompression); it was not read further. */
export class ResponseTooLarge extends ExchangeFailed {
  override readonly name = 'ResponseTooLarge';
}

/** The connection failed before any answer (refused, no such host, a bad port, TLS); `code` is the cause. */
export class ConnectionFailed extends ExchangeFailed {
  override readonly name = 'ConnectionFailed';
  constructor(
    message: string,
    request: string,
    readonly code: string,
  ) {
    super(message, request);
  }
}

/**
 * The kit could not run against the server at all (spec/conformance.md §outcomes): the base URL
 * cannot be reached (`unreachable`) or the server refuses the run's API key (`key_refused`).
 * `runConformance` rejects with it before any check runs; `solid conformance` exits 2.
 */
export class ConformanceNotRun extends Error {
  override readonly name = 'ConformanceNotRun';
  constructor(
    readonly reason: 'unreachable' | 'key_refused',
    message: string,
    readonly hint: string,
    readonly target: string,
  ) {
    super(message);
  }
}

const MAX_STRING = 240;
const MAX_ITEMS = 6;
const MAX_DEPTH = 5;

/** A bounded copy of a JSON value for evidence. */
export function excerpt(value: unknown, depth = 0): unknown {
  if (typeof value === 'string')
    return value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}… (${value.length} characters)` : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return Array.isArray(value) ? `[… ${value.length} items]` : '{…}';
  if (Array.isArray(value)) {
    const head = value.slice(0, MAX_ITEMS).map((v) => excerpt(v, depth + 1));
    return value.length > MAX_ITEMS ? [...head, `… ${value.length - MAX_ITEMS} more`] : head;
  }
  const out: Record<string, unknown> = {};
  const entries = Object.entries(value);
  for (const [k, v] of entries.slice(0, 24)) out[k] = excerpt(v, depth + 1);
  if (entries.length > 24) out['…'] = `${entries.length - 24} more members`;
  return out;
}

/** The parts of an envelope that decide most checks (ok, verb, error, consent, ids). */
export function envelopePart(env: unknown): unknown {
  if (env === null || typeof env !== 'object' || Array.isArray(env)) return excerpt(env);
  const e = env as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of [
    'ok',
    'verb',
    'error',
    'audit_id',
    'idempotency_key',
    'rollback_handle',
    'replayed',
    'consent',
  ])
    if (k in e) out[k] = excerpt(e[k]);
  if ('result' in e) out.result = excerpt(e.result, 2);
  return out;
}

/** JSON text with object keys sorted (key order never decides a comparison). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

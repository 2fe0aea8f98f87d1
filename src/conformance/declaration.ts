/**
 * The conformance declaration: which write verbs a server declares safe for a conformance kit,
 * and how to call them. Served at `GET /.well-known/solid-verbs-conformance` (or handed to the kit
 * with `--declaration FILE|URL`); validated against schema/conformance-declaration.json. It sits
 * beside the manifest instead of inside it because VerbRecords admit no extra member
 * (`additionalProperties: false`): a flag in a record would make the manifest invalid.
 *
 * Spec: spec/conformance.md §declaration.
 */
import { CONFORMANCE_VERBS } from './pack.ts';

/** Where a server publishes its declaration. */
export const DECLARATION_PATH = '/.well-known/solid-verbs-conformance';

/** The placeholder replaced by the run id in declared arguments. */
export const RUN_PLACEHOLDER = '{run}';

/** A read that shows the effect of a test write (spec/conformance.md §declaration). */
export interface DeclaredState {
  verb: string;
  args: Record<string, unknown>;
  /** RFC 6901 pointer into the read's result. */
  pointer: string;
}

/** One test-safe write. */
export interface DeclaredTestVerb {
  verb: string;
  gate: 'confirmation' | 'typed_phrase';
  revertible: boolean;
  /** Two different valid argument objects. */
  args: [Record<string, unknown>, Record<string, unknown>];
  /** Arguments that keep the write running about a second (optional). */
  slow_args?: Record<string, unknown>;
  state?: DeclaredState;
}

/** The declaration document (schema/conformance-declaration.json). */
export interface ConformanceDeclaration {
  solid_verbs_conformance: 1;
  description?: string;
  test_verbs: DeclaredTestVerb[];
}

/**
 * The declaration of our conformance pack (src/conformance/pack.ts) for the verbs of it that are
 * registered and projected on http; undefined when none is (the pack is not enabled).
 */
export function packDeclaration(isServed: (verb: string) => boolean): ConformanceDeclaration | undefined {
  const verbs: DeclaredTestVerb[] = [];
  const state = (counter: string): DeclaredState => ({
    verb: CONFORMANCE_VERBS.get,
    args: { counter },
    pointer: '/data/value',
  });
  const canRead = isServed(CONFORMANCE_VERBS.get);
  if (isServed(CONFORMANCE_VERBS.add)) {
    verbs.push({
      verb: CONFORMANCE_VERBS.add,
      gate: 'confirmation',
      revertible: true,
      args: [
        { counter: 'kit-{run}', by: 1 },
        { counter: 'kit-{run}', by: 2 },
      ],
      slow_args: { counter: 'kit-{run}-slow', by: 1, hold_ms: 1000 },
      ...(canRead ? { state: state('kit-{run}') } : {}),
    });
  }
  if (isServed(CONFORMANCE_VERBS.set)) {
    verbs.push({
      verb: CONFORMANCE_VERBS.set,
      gate: 'typed_phrase',
      revertible: true,
      args: [
        { counter: 'kit-{run}-set', value: 7 },
        { counter: 'kit-{run}-set', value: 8 },
      ],
      ...(canRead ? { state: state('kit-{run}-set') } : {}),
    });
  }
  if (verbs.length === 0) return undefined;
  return {
    solid_verbs_conformance: 1,
    description:
      'The conformance test pack: counters in a table of their own (conformance_counters), one per run; no business data is read or written.',
    test_verbs: verbs,
  };
}

/** Replace every `{run}` in the strings of `value` (deeply) by `runId`. */
export function withRunId<T>(value: T, runId: string): T {
  if (typeof value === 'string') return value.split(RUN_PLACEHOLDER).join(runId) as T;
  if (Array.isArray(value)) return value.map((v) => withRunId(v, runId)) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = withRunId(v, runId);
    return out as T;
  }
  return value;
}

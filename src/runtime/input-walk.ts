/**
 * The one walk over untrusted arguments, shared by every transport (it runs in the pipeline's
 * input step). Iterative with an explicit stack, so hostile nesting can never overflow the call
 * stack, and bounded: it stops at the first issue. It refuses, whatever the engine:
 *
 *   too_deep        nesting deeper than MAX_ARGS_DEPTH
 *   lone_surrogate  a key or string holding half a UTF-16 pair (no UTF-8, no RFC 8785 form)
 *   nul             a key or string holding U+0000 (PostgreSQL text and JSONB refuse it)
 *   non_finite      a number that is not finite (`1e999` parses to Infinity; JSON has no form for it)
 *   unsafe_integer  a whole number beyond ±(2^53 − 1): no double holds it exactly, so the two engines
 *                   would read it differently (PostgreSQL's bigint refuses it, SQLite compares a float)
 *   prototype_key   a `__proto__` key, or `constructor` holding `prototype` (prototype poisoning)
 *
 * The walk builds no paths; issuePath() finds the JSON Pointer of the first issue on the rare
 * refusal. Spec: spec/transports.md §bad-input.
 */
import { hasLoneSurrogate } from './ledger/write/audit.ts';

/** Deepest nesting accepted in arguments: deeper JSON is refused before any recursive work. */
export const MAX_ARGS_DEPTH = 32;

export type ArgsIssue =
  'too_deep' | 'lone_surrogate' | 'nul' | 'non_finite' | 'unsafe_integer' | 'prototype_key';

function textIssue(s: string): ArgsIssue | undefined {
  if (s.includes('\u0000')) return 'nul';
  if (hasLoneSurrogate(s)) return 'lone_surrogate';
  return undefined;
}

function keyIssue(k: string, v: unknown): ArgsIssue | undefined {
  if (k === '__proto__') return 'prototype_key';
  if (k === 'constructor' && v !== null && typeof v === 'object' && Object.hasOwn(v, 'prototype'))
    return 'prototype_key';
  return textIssue(k);
}

function valueIssue(v: unknown): ArgsIssue | undefined {
  if (typeof v === 'string') return textIssue(v);
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return 'non_finite';
    if (Number.isInteger(v) && !Number.isSafeInteger(v)) return 'unsafe_integer';
  }
  return undefined;
}

/** The first issue in `value` (see the module comment), or undefined when it is clean. */
export function scanArgs(value: unknown): ArgsIssue | undefined {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') {
      const issue = valueIssue(v);
      if (issue !== undefined) return issue;
      continue;
    }
    if (d > MAX_ARGS_DEPTH) return 'too_deep';
    if (Array.isArray(v)) {
      for (const x of v) stack.push([x, d + 1]);
    } else {
      for (const k of Object.keys(v)) {
        const x = (v as Record<string, unknown>)[k];
        const issue = keyIssue(k, x);
        if (issue !== undefined) return issue;
        stack.push([x, d + 1]);
      }
    }
  }
  return undefined;
}

const pointer = (k: string) => k.replace(/~/g, '~0').replace(/\//g, '~1');

/** The JSON Pointer of the first key or value with `issue` (after scanArgs found it); '' for the root. */
export function issuePath(value: unknown, issue: ArgsIssue): string {
  if (issue === 'too_deep') return '';
  const stack: Array<[unknown, string, number]> = [[value, '', 1]];
  while (stack.length > 0) {
    const [v, path, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') {
      if (valueIssue(v) === issue) return path;
      continue;
    }
    if (d > MAX_ARGS_DEPTH) continue;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push([v[i], `${path}/${i}`, d + 1]);
    } else {
      for (const k of Object.keys(v)) {
        const x = (v as Record<string, unknown>)[k];
        const child = `${path}/${pointer(k)}`;
        if (keyIssue(k, x) === issue) return child;
        stack.push([x, child, d + 1]);
      }
    }
  }
  return '';
}

/** Message and hint of the invalid_input refusal for `issue` at `path`. */
export function describeIssue(issue: ArgsIssue, path: string): { message: string; hint: string } {
  const at = path || 'arguments';
  switch (issue) {
    case 'too_deep':
      return {
        message: `The arguments are nested deeper than ${MAX_ARGS_DEPTH} levels.`,
        hint: 'Send flat arguments that match the input_schema of the verb.',
      };
    case 'lone_surrogate':
      return {
        message: `${at} holds a lone UTF-16 surrogate, which is not valid Unicode text.`,
        hint: 'Send well-formed Unicode: a surrogate only as half of a pair (an emoji, for instance), never alone.',
      };
    case 'nul':
      return {
        message: `${at} holds the NUL character (U+0000), which is never accepted in text.`,
        hint: 'Remove U+0000 from the keys and strings of the arguments.',
      };
    case 'non_finite':
      return {
        message: `${at} is not a finite number (a literal such as 1e999 overflows to Infinity).`,
        hint: 'Send numbers within the IEEE 754 double range; amounts are integers in cents.',
      };
    case 'unsafe_integer':
      return {
        message: `${at} is a whole number beyond ±9007199254740991 (2^53 − 1), which cannot be held exactly.`,
        hint: 'Send identifiers and amounts within that range (amounts are integers in cents); a larger identifier is not one this business issued.',
      };
    case 'prototype_key':
      return {
        message: `${at} is a forbidden key (__proto__ or constructor.prototype).`,
        hint: 'Remove __proto__ / constructor.prototype keys from the arguments.',
      };
  }
}

/**
 * Strict JSON: the one reading of a JSON text every transport applies to what a caller sends (the
 * HTTP body, UCP bodies, the CLI's --args and JSON flags), so that a consent dialog, a log and the
 * server never read the same bytes differently.
 *
 *   - a key repeated in one object → refused (parsers disagree on which value wins);
 *   - `__proto__` / `constructor.prototype` keys, in any spelling → refused (prototype poisoning);
 *   - nesting deeper than MAX_JSON_DEPTH (64) → refused (the args inside are bounded at 32 by the
 *     pipeline's input walk, which answers invalid_input);
 *   - more than MAX_JSON_KEYS (1,000) keys in one object, or more than MAX_JSON_NODES (10,000)
 *     values in the whole text → refused BEFORE JSON.parse runs (checkJsonBounds), so a refused
 *     body costs one linear scan of its bytes, never a parse, a validation and an audit of 50,000
 *     keys (parsed, a 540 KB body of 50,000 keys held the event loop for about 1 s).
 *
 * Pure: a problem comes back as data (kind, message, hint, details); each transport answers it
 * with its reason (HTTP and UCP `invalid_request`, the CLI `invalid_args`).
 *
 * Spec: spec/transports.md §http-body, §bad-input.
 */

/** Deepest nesting accepted in a JSON text a caller sends. */
export const MAX_JSON_DEPTH = 64;

/** Most keys accepted in one object of a JSON text a caller sends. */
export const MAX_JSON_KEYS = 1000;

/** Most values (objects, arrays, scalars, at every depth) accepted in one JSON text a caller sends. */
export const MAX_JSON_NODES = 10_000;

/** The work bounds of one JSON text (depth, keys per object, values in all). */
export interface JsonBounds {
  /** Deepest nesting of objects and arrays (default MAX_JSON_DEPTH). */
  maxDepth?: number;
  /** Most keys in one object (default MAX_JSON_KEYS). */
  maxKeys?: number;
  /** Most values in the whole text, containers and scalars alike (default MAX_JSON_NODES). */
  maxNodes?: number;
}

/** Why a JSON text is refused; message and hint name `subject`. */
export interface JsonStructureProblem {
  kind: 'duplicate_key' | 'prototype_key' | 'too_deep' | 'too_many_keys' | 'too_many_nodes';
  message: string;
  hint: string;
  details: Record<string, unknown>;
}

/** A JSON text refused by parseStrictJson: `problem` is undefined for malformed JSON (`cause` is the SyntaxError). */
export class StrictJsonError extends Error {
  override readonly name = 'StrictJsonError';
  constructor(
    message: string,
    readonly problem: JsonStructureProblem | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * checkJsonBounds (before any parse), JSON.parse, then checkJsonStructure on objects and arrays.
 * @throws StrictJsonError — malformed JSON (problem undefined, cause the SyntaxError), or the
 *   problem (too deep, too many keys in one object, too many values, duplicate key, prototype key).
 */
export function parseStrictJson(text: string, subject: string, bounds: JsonBounds = {}): unknown {
  const over = checkJsonBounds(text, subject, bounds);
  if (over !== undefined) throw new StrictJsonError(over.message, over);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new StrictJsonError((err as Error).message, undefined, { cause: err });
  }
  if (typeof value === 'object' && value !== null) {
    const problem = checkJsonStructure(text, subject);
    if (problem !== undefined) throw new StrictJsonError(problem.message, problem);
  }
  return value;
}

/** One open object (`keys` ≥ 0: its keys so far) or array (`keys` -1) of checkJsonBounds. */
interface BoundsFrame {
  keys: number;
}

function isWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * The work bound of a JSON text, checked in one linear scan BEFORE it is parsed: nesting deeper
 * than `maxDepth`, an object with more than `maxKeys` keys, or more than `maxNodes` values in all
 * (every object, array and scalar at any depth) → the problem (`too_deep`, `too_many_keys`,
 * `too_many_nodes`, with the limit in `details`). Cost: O(bytes), no allocation per key, and it
 * stops at the first bound crossed, so the worst refused body costs a few milliseconds (bench/
 * body-bounds.ts). Malformed text never loops or throws here: the scan answers undefined and the
 * parser that runs next names the syntax error. Spec: spec/transports.md §http-body.
 */
export function checkJsonBounds(
  text: string,
  subject: string,
  bounds: JsonBounds = {},
): JsonStructureProblem | undefined {
  const maxDepth = bounds.maxDepth ?? MAX_JSON_DEPTH;
  const maxKeys = bounds.maxKeys ?? MAX_JSON_KEYS;
  const maxNodes = bounds.maxNodes ?? MAX_JSON_NODES;
  const stack: BoundsFrame[] = [];
  let nodes = 0;
  let expectKey = false;
  const tooMany = (): JsonStructureProblem => ({
    kind: 'too_many_nodes',
    message: `${subject} holds more than ${maxNodes} values.`,
    hint: 'Send fewer values in one call: split a large input over several calls.',
    details: { max_nodes: maxNodes },
  });
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (isWhitespace(c)) continue;
    const top = stack[stack.length - 1];
    // A value starts here (not a key, not punctuation): count it.
    const punct = c === 0x2c || c === 0x3a || c === 0x7d || c === 0x5d;
    if (!punct && !(c === 0x22 && expectKey) && ++nodes > maxNodes) return tooMany();
    if (c === 0x22 /* " */) {
      let j = i + 1;
      for (;;) {
        j = text.indexOf('"', j);
        if (j < 0) return undefined; // unterminated string: JSON.parse names it
        let b = 0;
        while (text.charCodeAt(j - 1 - b) === 0x5c) b++;
        if (b % 2 === 0) break;
        j++;
      }
      if (expectKey && top !== undefined && top.keys >= 0) {
        if (++top.keys > maxKeys) {
          return {
            kind: 'too_many_keys',
            message: `${subject} has an object with more than ${maxKeys} keys.`,
            hint: "Send at most that many keys per object; match the verb's input_schema.",
            details: { max_keys: maxKeys },
          };
        }
        expectKey = false;
      }
      i = j;
      continue;
    }
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      stack.push({ keys: c === 0x7b ? 0 : -1 });
      if (stack.length > maxDepth) {
        return {
          kind: 'too_deep',
          message: `${subject} is nested deeper than ${maxDepth} levels.`,
          hint: "Send flat arguments that match the verb's input_schema.",
          details: { max_depth: maxDepth },
        };
      }
      expectKey = c === 0x7b;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
      expectKey = false;
    } else if (c === 0x2c /* , */) {
      expectKey = top !== undefined && top.keys >= 0;
    } else if (c !== 0x3a /* : */) {
      // a bare scalar (number, true, false, null): skip to its end
      while (i + 1 < text.length) {
        const d = text.charCodeAt(i + 1);
        if (isWhitespace(d) || d === 0x2c || d === 0x7d || d === 0x5d || d === 0x3a) break;
        i++;
      }
    }
  }
  return undefined;
}

interface Frame {
  /** Keys seen so far; null for an array. */
  keys: Set<string> | null;
  /** The key this object is the value of (for constructor.prototype). */
  under: string | undefined;
  /** The last key read in this object. */
  last: string | undefined;
}

/**
 * One iterative pass over JSON text already known to be valid: duplicate keys, prototype keys and
 * depth. Keys are compared decoded, so `"\u005f_proto__"` is `__proto__` and `"a"`/`"\u0061"` are
 * the same key. No recursion, so no depth of input can overflow the stack.
 */
export function checkJsonStructure(
  text: string,
  subject: string,
  maxDepth = MAX_JSON_DEPTH,
): JsonStructureProblem | undefined {
  const stack: Frame[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let j = i + 1;
      for (;;) {
        j = text.indexOf('"', j);
        let b = 0;
        while (text.charCodeAt(j - 1 - b) === 0x5c) b++;
        if (b % 2 === 0) break;
        j++;
      }
      if (expectKey) {
        const raw = text.slice(i + 1, j);
        const key = raw.includes('\\') ? (JSON.parse(text.slice(i, j + 1)) as string) : raw;
        const top = stack[stack.length - 1]!;
        if (key === '__proto__' || (key === 'prototype' && top.under === 'constructor')) {
          const name = key === '__proto__' ? '__proto__' : 'constructor.prototype';
          return {
            kind: 'prototype_key',
            message: `${subject} contains the forbidden key "${name}".`,
            hint: 'Remove __proto__ / constructor.prototype keys from the JSON.',
            details: { key: name },
          };
        }
        if (top.keys!.has(key)) {
          return {
            kind: 'duplicate_key',
            message: `${subject} repeats the key "${key.slice(0, 100)}" in one object.`,
            hint: 'Send each key once per object: a repeated key is read differently by different parsers.',
            details: { key: key.slice(0, 100) },
          };
        }
        top.keys!.add(key);
        top.last = key;
        expectKey = false;
      }
      i = j;
      continue;
    }
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      const top = stack[stack.length - 1];
      stack.push({
        keys: c === 0x7b ? new Set() : null,
        under: top !== undefined && top.keys !== null ? top.last : undefined,
        last: undefined,
      });
      if (stack.length > maxDepth) {
        return {
          kind: 'too_deep',
          message: `${subject} is nested deeper than ${maxDepth} levels.`,
          hint: "Send flat arguments that match the verb's input_schema.",
          details: { max_depth: maxDepth },
        };
      }
      expectKey = c === 0x7b;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
      expectKey = false;
    } else if (c === 0x2c /* , */) {
      expectKey = stack[stack.length - 1]?.keys != null;
    }
  }
  return undefined;
}

/**
 * Strict JSON: the one reading of a JSON text every transport applies to what a caller sends (the
 * HTTP body, UCP bodies, the CLI's --args and JSON flags), so that a consent dialog, a log and the
 * server never read the same bytes differently.
 *
 *   - a key repeated in one object → refused (parsers disagree on which value wins);
 *   - `__proto__` / `constructor.prototype` keys, in any spelling → refused (prototype poisoning);
 *   - nesting deeper than MAX_JSON_DEPTH (64) → refused (the args inside are bounded at 32 by the
 *     pipeline's input walk, which answers invalid_input).
 *
 * Pure: a problem comes back as data (kind, message, hint, details); each transport answers it
 * with its reason (HTTP and UCP `invalid_request`, the CLI `invalid_args`).
 *
 * Spec: spec/transports.md §http-body, §bad-input.
 */

/** Deepest nesting accepted in a JSON text a caller sends. */
export const MAX_JSON_DEPTH = 64;

/** Why a syntactically valid JSON text is refused; message and hint name `subject`. */
export interface JsonStructureProblem {
  kind: 'duplicate_key' | 'prototype_key' | 'too_deep';
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
 * JSON.parse, then checkJsonStructure on objects and arrays.
 * @throws StrictJsonError — malformed JSON (problem undefined, cause the SyntaxError), or the
 *   structure problem (duplicate key, prototype key, too deep).
 */
export function parseStrictJson(text: string, subject: string): unknown {
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

/**
 * The HTTP transport accepts JSON bodies only. installJsonBodyParser(app) replaces Fastify's
 * parsers with one for `application/json` (and `application/*+json`):
 *   - an empty body is "no body" (`request.body` undefined), not an error;
 *   - invalid UTF-8 bytes → VerbError invalid_request (never decoded to U+FFFD);
 *   - malformed JSON → VerbError invalid_request naming the parse problem and its position;
 *   - a key repeated in one object → invalid_request (no parser differential: a consent dialog
 *     and the server must read the same body);
 *   - `__proto__` / `constructor.prototype` keys, in any spelling → invalid_request (prototype poisoning);
 *   - nesting deeper than MAX_BODY_DEPTH → invalid_request;
 *   - any other content type with a body → Fastify's 415, mapped to unsupported_media_type;
 *   - a body over the limit → Fastify's 413, mapped to payload_too_large (error-handler.ts).
 * A mounted plugin that needs another media type (a login form) adds a parser in its own scope.
 *
 * Spec: spec/transports.md §http-body.
 */
import type { FastifyInstance } from 'fastify';
import { VerbError } from '../../runtime/errors.ts';

/** Deepest nesting accepted in a request body (the args inside are bounded at 32 by the pipeline). */
export const MAX_BODY_DEPTH = 64;

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

function refuse(message: string, hint: string, details?: Record<string, unknown>): never {
  throw new VerbError('invalid_request', message, { hint, ...(details ? { details } : {}) });
}

/**
 * Parse one JSON request body (bytes are decoded as strict UTF-8); throws VerbError
 * invalid_request for invalid UTF-8, malformed JSON, a duplicate key in one object, a prototype
 * key (`__proto__`, `constructor.prototype`, in any spelling: escapes are decoded first), or
 * nesting deeper than MAX_BODY_DEPTH. Exported for tests.
 */
export function parseJsonBody(body: string | Buffer): unknown {
  let text: string;
  if (typeof body === 'string') text = body;
  else {
    try {
      text = UTF8.decode(body);
    } catch {
      refuse('The request body is not valid UTF-8.', 'Encode the JSON body as UTF-8 (RFC 8259 §8.1).');
    }
  }
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const msg = (err as Error).message;
    const m = /position (\d+)/.exec(msg);
    const position = m ? Number(m[1]) : /end of JSON input/.test(msg) ? text.length : undefined;
    refuse(
      `The request body is not valid JSON${position !== undefined ? ` (at position ${position})` : ''}: ${msg}`,
      'Send a JSON object, e.g. {"args": {"customer_id": 42}}, with Content-Type: application/json.',
      position !== undefined ? { position } : undefined,
    );
  }
  if (typeof value === 'object' && value !== null) checkStructure(text);
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
function checkStructure(text: string): void {
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
          refuse(
            `The request body contains the forbidden key "${key === '__proto__' ? '__proto__' : 'constructor.prototype'}".`,
            'Remove __proto__ / constructor.prototype keys from the JSON.',
          );
        }
        if (top.keys!.has(key)) {
          refuse(
            `The request body repeats the key "${key.slice(0, 100)}" in one object.`,
            'Send each key once per object: a repeated key is read differently by different parsers.',
            { key: key.slice(0, 100) },
          );
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
      if (stack.length > MAX_BODY_DEPTH) {
        refuse(
          `The request body is nested deeper than ${MAX_BODY_DEPTH} levels.`,
          "Send flat arguments that match the verb's input_schema.",
        );
      }
      expectKey = c === 0x7b;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
      expectKey = false;
    } else if (c === 0x2c /* , */) {
      expectKey = stack[stack.length - 1]?.keys != null;
    }
  }
}

/** Install the JSON-only body parser on `app` (and, by inheritance, every plugin). */
export function installJsonBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  const parser = (
    _req: unknown,
    body: string | Buffer,
    done: (err: Error | null, body?: unknown) => void,
  ) => {
    try {
      done(null, parseJsonBody(body));
    } catch (err) {
      done(err as Error, undefined);
    }
  };
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parser);
  app.addContentTypeParser(/^application\/[a-z0-9.+-]*\+json$/i, { parseAs: 'buffer' }, parser);
}

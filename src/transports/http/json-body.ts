/**
 * The HTTP transport accepts JSON bodies only. installJsonBodyParser(app) replaces Fastify's
 * parsers with one for `application/json` (and `application/*+json`):
 *   - an empty body is "no body" (`request.body` undefined), not an error;
 *   - invalid UTF-8 bytes → VerbError invalid_request (never decoded to U+FFFD);
 *   - malformed JSON → VerbError invalid_request naming the parse problem and its position;
 *   - a key repeated in one object → invalid_request (no parser differential: a consent dialog
 *     and the server must read the same body);
 *   - `__proto__` / `constructor.prototype` keys, in any spelling → invalid_request (prototype poisoning);
 *   - nesting deeper than MAX_BODY_DEPTH, more than MAX_JSON_KEYS keys in one object or more than
 *     MAX_JSON_NODES values → invalid_request, found by a linear scan BEFORE the body is parsed
 *     (a refused body costs a few milliseconds whatever its shape);
 *   - any other content type with a body → Fastify's 415, mapped to unsupported_media_type;
 *   - a body over the limit → Fastify's 413, mapped to payload_too_large (error-handler.ts).
 * A mounted plugin that needs another media type (a login form) adds a parser in its own scope.
 *
 * Spec: spec/transports.md §http-body.
 */
import type { FastifyInstance } from 'fastify';
import { VerbError } from '../../runtime/errors.ts';
import {
  MAX_JSON_DEPTH,
  checkJsonBounds,
  checkJsonStructure,
  type JsonBounds,
  type JsonStructureProblem,
} from '../../spec/strict-json.ts';

/** Deepest nesting accepted in a request body (the args inside are bounded at 32 by the pipeline). */
export const MAX_BODY_DEPTH = MAX_JSON_DEPTH;

/** The details a body refusal carried before the check moved to src/spec/strict-json.ts. */
function problemDetails(problem: JsonStructureProblem): Record<string, unknown> | undefined {
  return problem.kind === 'duplicate_key' ||
    problem.kind === 'too_many_keys' ||
    problem.kind === 'too_many_nodes'
    ? problem.details
    : undefined;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

function refuse(message: string, hint: string, details?: Record<string, unknown>): never {
  throw new VerbError('invalid_request', message, { hint, ...(details ? { details } : {}) });
}

/**
 * Parse one JSON request body (bytes are decoded as strict UTF-8); throws VerbError
 * invalid_request for invalid UTF-8, malformed JSON, or what checkJsonStructure refuses (a
 * duplicate key in one object, a prototype key in any spelling, nesting deeper than
 * MAX_BODY_DEPTH, more than `bounds.maxKeys` keys in one object or `bounds.maxNodes` values —
 * those three checked before the parse; src/spec/strict-json.ts). Exported for tests and UCP.
 */
export function parseJsonBody(body: string | Buffer, bounds: JsonBounds = {}): unknown {
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
  const over = checkJsonBounds(text, 'The request body', { maxDepth: MAX_BODY_DEPTH, ...bounds });
  if (over !== undefined) refuse(over.message, over.hint, problemDetails(over));
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
  if (typeof value === 'object' && value !== null) {
    const problem = checkJsonStructure(text, 'The request body', MAX_BODY_DEPTH);
    if (problem !== undefined) refuse(problem.message, problem.hint, problemDetails(problem));
  }
  return value;
}

/** Install the JSON-only body parser on `app` (and, by inheritance, every plugin); `bounds` as parseJsonBody. */
export function installJsonBodyParser(app: FastifyInstance, bounds: JsonBounds = {}): void {
  app.removeAllContentTypeParsers();
  const parser = (
    _req: unknown,
    body: string | Buffer,
    done: (err: Error | null, body?: unknown) => void,
  ) => {
    try {
      done(null, parseJsonBody(body, bounds));
    } catch (err) {
      done(err as Error, undefined);
    }
  };
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parser);
  app.addContentTypeParser(/^application\/[a-z0-9.+-]*\+json$/i, { parseAs: 'buffer' }, parser);
}

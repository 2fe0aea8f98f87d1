/**
 * The HTTP transport accepts JSON bodies only. installJsonBodyParser(app) replaces Fastify's
 * parsers with one for `application/json` (and `application/*+json`):
 *   - an empty body is "no body" (`request.body` undefined), not an error;
 *   - malformed JSON → VerbError invalid_request naming the parse problem and its position;
 *   - `__proto__` / `constructor.prototype` keys → invalid_request (prototype poisoning);
 *   - any other content type with a body → Fastify's 415, mapped to unsupported_media_type;
 *   - a body over the limit → Fastify's 413, mapped to payload_too_large (error-handler.ts).
 * A mounted plugin that needs another media type (a login form) adds a parser in its own scope.
 *
 * Spec: spec/transports.md §http-body.
 */
import type { FastifyInstance } from 'fastify';
import { VerbError } from '../../runtime/errors.ts';

/** Parse one JSON request body; throws VerbError invalid_request. Exported for tests. */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const msg = (err as Error).message;
    const m = /position (\d+)/.exec(msg);
    const position = m ? Number(m[1]) : /end of JSON input/.test(msg) ? text.length : undefined;
    throw new VerbError(
      'invalid_request',
      `The request body is not valid JSON${position !== undefined ? ` (at position ${position})` : ''}: ${msg}`,
      {
        hint: 'Send a JSON object, e.g. {"args": {"customer_id": 42}}, with Content-Type: application/json.',
        ...(position !== undefined ? { details: { position } } : {}),
      },
    );
  }
  if (text.includes('__proto__') || (text.includes('constructor') && text.includes('prototype')))
    assertNoPoison(value);
  return value;
}

function assertNoPoison(node: unknown): void {
  if (typeof node !== 'object' || node === null) return;
  if (Array.isArray(node)) {
    for (const v of node) assertNoPoison(v);
    return;
  }
  const obj = node as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    const bad =
      key === '__proto__' ||
      (key === 'constructor' &&
        typeof obj[key] === 'object' &&
        obj[key] !== null &&
        Object.hasOwn(obj[key] as object, 'prototype'));
    if (bad) {
      throw new VerbError('invalid_request', `The request body contains the forbidden key "${key}".`, {
        hint: 'Remove __proto__ / constructor.prototype keys from the JSON.',
      });
    }
    assertNoPoison(obj[key]);
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
      done(null, parseJsonBody(typeof body === 'string' ? body : body.toString('utf8')));
    } catch (err) {
      done(err as Error, undefined);
    }
  };
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parser);
  app.addContentTypeParser(/^application\/[a-z0-9.+-]*\+json$/i, { parseAs: 'string' }, parser);
}

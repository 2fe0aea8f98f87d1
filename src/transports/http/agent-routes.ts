/**
 * The agent API: the manifest and the one dispatch route. Glue only: decode the request, call the
 * registry or `rt.dispatch` once, answer through envelopeToHttp.
 *
 *   GET  /api/v1/agent/verbs?surface=&shape=   { verbs: VerbRecord[], total } (surface default http);
 *                                              Cache-Control private, max-age=300; ETag; 304
 *   GET  /api/v1/agent/verbs/{name}            one VerbRecord (by verb or tool name); 404 unknown_verb
 *   POST /api/v1/agent/dispatch/{verb}         body { args?, confirm?, typed_phrase?, nonce? },
 *                                              headers Authorization: Bearer sk_solid_…, Idempotency-Key;
 *                                              answers the envelope (status table: envelope-map.ts)
 *
 * Spec: spec/transports.md §http-routes.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { HttpPluginOptions } from './server.ts';
import type { DispatchOptions } from '../../runtime/core.ts';
import { VALID_SHAPES, VALID_SURFACES } from '../../spec/types.ts';
import { VerbError, isVerbError } from '../../runtime/errors.ts';
import { refuse } from '../../runtime/refusals.ts';
import { sendEnvelope } from './error-handler.ts';
import { transportEnvelope } from './envelope-map.ts';
import { idempotencyKeyOfRequest } from './request-headers.ts';
import { apiKeyOf } from '../../identity/api-key-auth.ts';
import { CLIENT_SURFACE_HEADER, clientSurfaceOf } from './client-surface.ts';
import { limiterPrincipal } from './rate-limit.ts';
import { dispatchWithKey, refuseWithKey } from '../../identity/api-key-auth.ts';

export const MANIFEST_CACHE_CONTROL = 'private, max-age=300';

const BODY_MEMBERS = new Set(['args', 'confirm', 'typed_phrase', 'nonce', 'plain_retry']);

/** The dispatch body, checked for its own shape only (args are the runtime's to validate). */
export function readDispatchBody(body: unknown): { args: unknown; options: DispatchOptions } {
  if (body === undefined || body === null) return { args: undefined, options: {} };
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new VerbError(
      'invalid_request',
      'The request body must be a JSON object { args?, confirm?, typed_phrase?, nonce? }.',
      {
        hint: 'Put the verb arguments under "args", e.g. {"args": {"customer_id": 42}}.',
      },
    );
  }
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).filter((k) => !BODY_MEMBERS.has(k));
  if (unknown.length > 0) {
    throw new VerbError(
      'invalid_request',
      `The request body has unknown member${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k)).join(', ')}.`,
      {
        hint: 'The body is { args?, confirm?, typed_phrase?, nonce? }; verb arguments go under "args", the idempotency key in the Idempotency-Key header.',
        details: { unknown_members: unknown },
      },
    );
  }
  const options: DispatchOptions = {};
  if (b.confirm !== undefined) {
    if (typeof b.confirm !== 'boolean') throw bodyType('confirm', 'a boolean');
    options.confirm = b.confirm;
  }
  for (const k of ['typed_phrase', 'nonce'] as const) {
    if (b[k] === undefined || b[k] === null) continue;
    if (typeof b[k] !== 'string') throw bodyType(k, 'a string');
    options[k] = b[k];
  }
  // An MCP bridge (`solid mcp --remote`) relaying a tools/call that carried no consent _meta: the
  // consent step decides what the repeat means (spec/consent.md §plain-retry). It grants nothing
  // confirm + nonce would not: a typed phrase still needs a human's approval.
  if (b.plain_retry !== undefined) {
    if (typeof b.plain_retry !== 'boolean') throw bodyType('plain_retry', 'a boolean');
    if (b.plain_retry) options.plain_retry = true;
  }
  return { args: b.args, options };
}

function bodyType(member: string, what: string): VerbError {
  return new VerbError('invalid_request', `The body member "${member}" must be ${what}.`, {
    hint: 'See the dispatch request body in /openapi.json.',
  });
}

/** Does an If-None-Match header match this ETag (weak comparison, RFC 9110 §13.1.2)? */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  if (ifNoneMatch.trim() === '*') return true;
  const strip = (t: string) => t.trim().replace(/^W\//, '');
  return ifNoneMatch.split(',').some((t) => strip(t) === strip(etag));
}

function refuseFilter(
  reply: FastifyReply,
  name: 'surface' | 'shape',
  value: string,
  allowed: readonly string[],
): FastifyReply {
  return sendEnvelope(
    reply,
    transportEnvelope(
      'verbs.list',
      'invalid_request',
      `Unknown ${name} "${value.slice(0, 50)}".`,
      `Use one of: ${allowed.join(', ')}.`,
      { [name]: value.slice(0, 50), allowed },
    ),
  );
}

export const agentRoutes: FastifyPluginAsync<HttpPluginOptions> = async (app, { rt }) => {
  app.get(
    '/api/v1/agent/verbs',
    { config: { openapi: manifestDoc } },
    async function listVerbs(
      req: FastifyRequest<{ Querystring: { surface?: string | string[]; shape?: string | string[] } }>,
      reply,
    ) {
      const q = req.query ?? {};
      const surface = Array.isArray(q.surface) ? q.surface[0] : q.surface;
      const shape = Array.isArray(q.shape) ? q.shape[0] : q.shape;
      const s = surface === undefined || surface === '' ? 'http' : surface;
      if (!(VALID_SURFACES as readonly string[]).includes(s))
        return refuseFilter(reply, 'surface', s, VALID_SURFACES);
      if (shape !== undefined && shape !== '' && !(VALID_SHAPES as readonly string[]).includes(shape))
        return refuseFilter(reply, 'shape', shape, VALID_SHAPES);
      const etag = `"${rt.registry.etag().slice(1, -1)}.${s}.${shape || 'all'}"`;
      reply
        .header('cache-control', MANIFEST_CACHE_CONTROL)
        .header('etag', etag)
        .header('vary', 'Accept-Encoding');
      if (etagMatches(req.headers['if-none-match'], etag)) return reply.code(304).send();
      const verbs = rt.registry.list({ surface: s, ...(shape ? { shape } : {}) });
      return reply.send({ verbs, total: verbs.length });
    },
  );

  app.get(
    '/api/v1/agent/verbs/:name',
    { config: { openapi: verbDoc } },
    async function showVerb(req: FastifyRequest<{ Params: { name: string } }>, reply) {
      const verb = rt.registry.get(req.params.name);
      if (verb === undefined) {
        const closest = rt.registry.closest(req.params.name);
        const name = req.params.name.slice(0, 200);
        return sendEnvelope(reply, {
          ok: false,
          verb: name,
          error: refuse
            .unknownVerb(name, closest, {
              withClosest: 'List verbs with GET /api/v1/agent/verbs.',
              alone: 'List the available verbs with GET /api/v1/agent/verbs.',
            })
            .toEnvelopeError(),
        });
      }
      const etag = `"${rt.registry.etag().slice(1, -1)}.${verb.name}"`;
      reply.header('cache-control', MANIFEST_CACHE_CONTROL).header('etag', etag);
      if (etagMatches(req.headers['if-none-match'], etag)) return reply.code(304).send();
      return reply.send(verb.record);
    },
  );

  app.post(
    '/api/v1/agent/dispatch/:verb',
    { config: { openapi: dispatchDoc } },
    async function dispatchVerb(req: FastifyRequest<{ Params: { verb: string } }>, reply) {
      // A thin client (remote CLI, MCP bridge) may declare the surface it projects: Solid-Surface (spec/transports.md §remote).
      const surface = clientSurfaceOf(headerOf(req, CLIENT_SURFACE_HEADER));
      const apiKey = apiKeyOf(headerOf(req, 'authorization'));
      let body: ReturnType<typeof readDispatchBody>;
      try {
        body = readDispatchBody(req.body);
      } catch (err) {
        if (!isVerbError(err)) throw err;
        // A malformed dispatch body is still an attempt at this verb: audited in the caller's
        // tenant (a bad key is the audited auth_invalid instead).
        return sendEnvelope(
          reply,
          await refuseWithKey(rt, { surface, address: req.ip }, apiKey, req.params.verb, err),
          rt.clock().getTime(),
        );
      }
      const { args, options } = body;
      const idem = idempotencyKeyOfRequest(req.raw.rawHeaders);
      if (idem !== undefined) options.idempotency_key = idem;
      // The rate limiter already authenticated this key for this request: no second key check.
      const principal = limiterPrincipal(req, apiKey);
      const envelope = await dispatchWithKey(
        rt,
        { surface, address: req.ip, ...(principal !== undefined ? { principal } : {}) },
        apiKey,
        req.params.verb,
        args,
        options,
      );
      return sendEnvelope(reply, envelope, rt.clock().getTime(), rt.registry.reasons);
    },
  );
};

function headerOf(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

// ---- OpenAPI documentation of these routes (read by openapi.ts) -------------------------------

const envelopeRef = { $ref: '#/components/schemas/Envelope' };
const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: envelopeRef } },
});

const manifestDoc = {
  operationId: 'listVerbs',
  summary: 'The verb manifest (VerbRecords) for a surface',
  description:
    'Spec-valid VerbRecords, sorted by name. Without `surface`, the verbs exposed on http. Cache for 5 minutes; revalidate with If-None-Match.',
  tags: ['agent'],
  parameters: [
    {
      name: 'surface',
      in: 'query',
      required: false,
      schema: { type: 'string', enum: [...VALID_SURFACES], default: 'http' },
    },
    { name: 'shape', in: 'query', required: false, schema: { type: 'string', enum: [...VALID_SHAPES] } },
    { name: 'If-None-Match', in: 'header', required: false, schema: { type: 'string' } },
  ],
  responses: {
    200: {
      description: 'The manifest',
      headers: {
        ETag: { schema: { type: 'string' } },
        'Cache-Control': { schema: { type: 'string', const: MANIFEST_CACHE_CONTROL } },
      },
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: ['verbs', 'total'],
            properties: {
              verbs: { type: 'array', items: { $ref: '#/components/schemas/VerbRecord' } },
              total: { type: 'integer' },
            },
          },
        },
      },
    },
    304: { description: 'Not modified (ETag matched)' },
    400: errorResponse('invalid_request: unknown surface or shape'),
  },
};

const verbDoc = {
  operationId: 'getVerb',
  summary: 'One VerbRecord, by verb name or tool name',
  tags: ['agent'],
  parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
  responses: {
    200: {
      description: 'The VerbRecord',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/VerbRecord' } } },
    },
    304: { description: 'Not modified (ETag matched)' },
    404: errorResponse('unknown_verb, with the closest names in error.details.closest'),
  },
};

const dispatchDoc = {
  operationId: 'dispatchVerb',
  summary: 'Dispatch a verb; answers the envelope',
  description:
    'Runs the verb through the pipeline (auth, surface, input, floors, consent, idempotency, execute). Without a bearer key, read verbs run on the sandbox tenant and writes answer 401 auth_required. Consent-gated verbs first answer 202 dispatch_pending with `consent.nonce` (and `consent.typed_phrase`); repeat the call with `confirm: true`, the nonce and, for typed-phrase gates, the phrase. The status of every reason is listed in `x-reason-status`.',
  tags: ['agent'],
  security: [{}, { bearerApiKey: [] }],
  parameters: [
    {
      name: 'verb',
      in: 'path',
      required: true,
      schema: { type: 'string', pattern: '^[a-zA-Z][a-zA-Z0-9_.]*$' },
    },
    {
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description:
        'RFC 8941 sf-string (or a bare token such as a UUID), at most 255 printable ASCII characters. Replays answer the stored receipt with Idempotent-Replayed: true.',
      schema: { type: 'string' },
    },
  ],
  requestBody: {
    required: false,
    content: { 'application/json': { schema: { $ref: '#/components/schemas/DispatchRequest' } } },
  },
};

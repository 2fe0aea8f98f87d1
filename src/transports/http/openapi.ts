/**
 * GET /openapi.json: an OpenAPI 3.1 document generated from the routes registered on the server
 * (core routes and every mounted plugin) and from the registry.
 *
 *   - every route appears under its path (`:param` → `{param}`); a route documents itself with
 *     `config.openapi` (an Operation object, or a function returning one, so it can read tables
 *     filled at runtime) or, failing that, with its Fastify `schema` (summary, description, tags,
 *     params, querystring, body); `config.openapi: false` hides it;
 *   - the dispatch route carries the envelope schema, the responses grouped by HTTP status and
 *     `x-reason-status`: every reason (core and declared domain reasons) → status, retryable;
 *   - one operation per verb exposed on http, `POST /api/v1/agent/dispatch/<verb>`, whose `args`
 *     schema is the verb's input_schema (operationId = the tool name).
 * The document is rebuilt when the registry changes (cached by the registry ETag).
 *
 * Spec: spec/transports.md §http-openapi.
 */
import type { FastifyPluginAsync, RouteOptions } from 'fastify';
import type { HttpPluginOptions } from './server.ts';
import { REASONS, domainReasonTable, type ReasonInfo } from '../../spec/reasons.ts';
import { envelopeSchema, verbRecordSchema } from '../../spec/validators.ts';
import type { JsonSchema } from '../../spec/types.ts';

export type OpenApiOperation = Record<string, unknown>;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** OpenAPI Operation for /openapi.json, a function building it, or false to hide the route. */
    openapi?: OpenApiOperation | (() => OpenApiOperation) | false;
  }
}

/** The routes seen by the server's onRoute hook. */
export interface OpenApiCollector {
  routes: RouteOptions[];
}

const DISPATCH_PATH = '/api/v1/agent/dispatch/{verb}';

/** Every reason with its HTTP status: the dispatch route's status table. */
export function reasonStatusTable(): Record<string, { status: number; retryable: boolean; summary: string }> {
  const out: Record<string, { status: number; retryable: boolean; summary: string }> = {};
  const add = (name: string, info: ReasonInfo) => {
    out[name] = { status: info.status, retryable: info.retryable, summary: info.summary };
  };
  for (const [name, info] of Object.entries(REASONS)) add(name, info);
  for (const [name, info] of domainReasonTable()) add(name, info);
  return out;
}

/** Responses of the dispatch route grouped by status, each listing its reasons. */
export function dispatchResponses(): Record<string, unknown> {
  const envelope = { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } };
  const byStatus = new Map<number, string[]>();
  for (const [name, info] of Object.entries(reasonStatusTable())) {
    if (name === 'dispatch_pending') continue;
    byStatus.set(info.status, [...(byStatus.get(info.status) ?? []), name]);
  }
  const responses: Record<string, unknown> = {
    200: {
      description:
        'ok: true; `result` is the verb output (a signed receipt for writes). Replays carry Idempotent-Replayed: true.',
      content: envelope,
    },
    202: {
      description:
        'dispatch_pending: human consent needed; `consent` carries the nonce, summary and typed phrase.',
      content: envelope,
    },
  };
  for (const status of [...byStatus.keys()].sort((a, b) => a - b)) {
    const headers: Record<string, unknown> = {};
    if (status === 401) headers['WWW-Authenticate'] = { schema: { type: 'string' }, description: 'Bearer' };
    if (status === 429)
      headers['Retry-After'] = {
        schema: { type: 'integer' },
        description: 'Seconds until the daily cap resets (daily_cap_exceeded).',
      };
    responses[String(status)] = {
      description: `ok: false with error.reason one of: ${byStatus.get(status)!.sort().join(', ')}`,
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      content: envelope,
    };
  }
  return responses;
}

/** Drop $schema/$id and lift $defs into components named `<name><Def>`. */
function toComponents(name: string, schema: JsonSchema, into: Record<string, unknown>): void {
  const defs = (schema.$defs ?? {}) as Record<string, JsonSchema>;
  const refName = (d: string) => `${name}${d.charAt(0).toUpperCase()}${d.slice(1)}`;
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (node === null || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
      if (k === '$schema' || k === '$id' || k === '$defs') continue;
      if (k === '$ref' && typeof v === 'string' && v.startsWith('#/$defs/'))
        out[k] = `#/components/schemas/${refName(v.slice(8).split('/')[0]!)}`;
      else out[k] = walk(v);
    }
    return out;
  };
  into[name] = walk(schema);
  for (const [d, s] of Object.entries(defs)) into[refName(d)] = walk(s);
}

const DISPATCH_REQUEST: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    args: {
      type: 'object',
      description:
        "The verb's arguments (its input_schema). company_id and user_id are never accepted: they come from the API key.",
    },
    confirm: {
      type: 'boolean',
      description: 'Confirm a consent-gated call (with the nonce of the pending answer).',
    },
    nonce: { type: 'string', description: 'consent.nonce from the 202 dispatch_pending answer.' },
    typed_phrase: {
      type: 'string',
      description: 'The exact phrase shown in consent.typed_phrase (WRITE_FINANCIAL, IRREVERSIBLE).',
    },
  },
};

function operationOf(route: RouteOptions): OpenApiOperation | undefined {
  const doc = route.config?.openapi;
  if (doc === false) return undefined;
  const schema = (route.schema ?? {}) as Record<string, unknown>;
  if ((schema as { hide?: boolean }).hide === true) return undefined;
  if (doc !== undefined) return typeof doc === 'function' ? doc() : doc;
  const op: OpenApiOperation = {};
  for (const k of ['summary', 'description', 'tags', 'operationId'] as const)
    if (schema[k] !== undefined) op[k] = schema[k];
  op.summary ??= `${String(route.method)} ${route.url}`;
  const parameters: unknown[] = [];
  for (const [where, key] of [
    ['path', 'params'],
    ['query', 'querystring'],
  ] as const) {
    const s = schema[key] as { properties?: Record<string, unknown>; required?: string[] } | undefined;
    for (const [name, p] of Object.entries(s?.properties ?? {}))
      parameters.push({
        name,
        in: where,
        required: where === 'path' || (s?.required ?? []).includes(name),
        schema: p,
      });
  }
  if (parameters.length > 0) op.parameters = parameters;
  if (schema.body !== undefined)
    op.requestBody = { content: { 'application/json': { schema: schema.body } } };
  op.responses = {
    default: {
      description: 'JSON answer; errors are envelopes',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } },
    },
  };
  return op;
}

/** Build the OpenAPI 3.1 document. Pure over the routes and the registry. */
export function buildOpenApi(
  routes: readonly RouteOptions[],
  rt: HttpPluginOptions['rt'],
  version: string,
): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).map((m) =>
      String(m).toLowerCase(),
    );
    const path = route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, '{wildcard}');
    for (const m of methods) {
      if (m === 'head' || m === 'options') continue;
      const op = operationOf(route);
      if (op === undefined) continue;
      (paths[path] ??= {})[m] =
        path === DISPATCH_PATH && m === 'post'
          ? { ...op, responses: dispatchResponses(), 'x-reason-status': reasonStatusTable() }
          : op;
    }
  }
  for (const verb of rt.registry.all()) {
    if (!verb.surfaces.includes('http')) continue;
    const record = verb.record;
    paths[`/api/v1/agent/dispatch/${verb.name}`] = {
      post: {
        operationId: verb.toolName,
        summary: verb.definition.title ?? verb.name,
        description: record.description,
        tags: [`verbs:${verb.definition.category}`],
        'x-shape': record.shape,
        'x-consent-class': verb.consentClass,
        security: verb.isWrite ? [{ bearerApiKey: [] }] : [{}, { bearerApiKey: [] }],
        requestBody: {
          required: record.input_schema.required !== undefined,
          content: {
            'application/json': {
              schema: {
                ...DISPATCH_REQUEST,
                properties: { ...(DISPATCH_REQUEST.properties as object), args: record.input_schema },
              },
            },
          },
        },
        responses: {
          200: {
            description: 'Envelope with the verb output',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } },
          },
          default: {
            description: `Envelope; see POST ${DISPATCH_PATH} for the status of each reason`,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } },
          },
        },
      },
    };
  }
  const schemas: Record<string, unknown> = {};
  toComponents('Envelope', envelopeSchema, schemas);
  toComponents('VerbRecord', verbRecordSchema, schemas);
  schemas.DispatchRequest = DISPATCH_REQUEST;
  return {
    openapi: '3.1.0',
    info: {
      title: 'solid-verbs HTTP API',
      version,
      description:
        'Typed verbs for AI agents. Every answer is an envelope { ok, verb, result?, error?: { reason, message, hint } }; agents branch on error.reason.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearerApiKey: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'sk_solid_<key_id>_<secret>',
          description: 'API key from `solid init` / `solid api-keys create`.',
        },
      },
    },
  };
}

export const openapiRoute: FastifyPluginAsync<
  HttpPluginOptions & { collector: OpenApiCollector; version?: string }
> = async (app, { rt, collector, version }) => {
  let cached: { etag: string; routes: number; text: string } | undefined;
  app.get(
    '/openapi.json',
    {
      config: {
        openapi: {
          operationId: 'openapi',
          summary: 'This OpenAPI 3.1 document',
          tags: ['meta'],
          responses: { 200: { description: 'OpenAPI 3.1' } },
        },
      },
    },
    async (_req, reply) => {
      const etag = `${rt.registry.etag()}.${domainReasonTable().size}`;
      if (cached === undefined || cached.etag !== etag || cached.routes !== collector.routes.length) {
        cached = {
          etag,
          routes: collector.routes.length,
          text: JSON.stringify(buildOpenApi(collector.routes, rt, version ?? '0.1.0')),
        };
      }
      return reply
        .header('cache-control', 'no-cache')
        .type('application/json; charset=utf-8')
        .send(cached.text);
    },
  );
};

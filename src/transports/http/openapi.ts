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
 *     schema is the verb's input_schema (operationId = the tool name), 200 typed by its
 *     output_schema (`<ToolName>Result`), 202 pending, shared error responses, Idempotency-Key;
 *   - declared path parameters, an operationId on every operation, `servers` (the request's
 *     origin and the allowed origins), security schemes (bearer key, session cookie).
 * Code-generator grade: `npm run lint:openapi` (Redocly, 0 errors) and
 * test/transports/http/openapi-codegen.test.ts (openapi-typescript) hold it there.
 * The document is rebuilt when the registry, the routes or the servers change.
 *
 * Spec: spec/transports.md §http-openapi.
 */
import type { FastifyPluginAsync, FastifyRequest, RouteOptions } from 'fastify';
import type { HttpPluginOptions } from './server.ts';
import { REASONS, domainReasonTable, type ReasonInfo, type ReasonTable } from '../../spec/reasons.ts';
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

/**
 * Every reason with its HTTP status: the dispatch route's status table. `reasons`: the runtime's
 * table (its packs' reasons); without it the process-global legacy declarations.
 */
export function reasonStatusTable(
  reasons?: ReasonTable,
): Record<string, { status: number; retryable: boolean; summary: string }> {
  const out: Record<string, { status: number; retryable: boolean; summary: string }> = {};
  const add = (name: string, info: ReasonInfo) => {
    out[name] = { status: info.status, retryable: info.retryable, summary: info.summary };
  };
  for (const [name, info] of Object.entries(REASONS)) add(name, info);
  for (const [name, info] of reasons?.domain() ?? domainReasonTable()) add(name, info);
  return out;
}

/** Responses of the dispatch route grouped by status, each listing its reasons. */
export function dispatchResponses(reasons?: ReasonTable): Record<string, unknown> {
  const responses: Record<string, unknown> = {
    200: {
      description:
        'ok: true; `result` is the verb output (a signed receipt for writes). Replays carry Idempotent-Replayed: true.',
      content: json(ref('Envelope')),
    },
    202: PENDING_RESPONSE,
    ...errorResponses(reasons),
  };
  return responses;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: unknown) => ({ 'application/json': { schema } });

/** The 202 dispatch_pending answer (spec/consent.md): `consent` says how to confirm. */
const PENDING_RESPONSE = {
  description:
    'dispatch_pending: human consent needed; `consent` carries the nonce, summary and typed phrase. Call again with confirm: true, the nonce and (typed-phrase gates) the phrase.',
  content: json(ref('PendingEnvelope')),
};

/** Error statuses of a dispatch → their reasons (dispatch_pending excluded: it is the 202). */
function errorStatuses(reasons?: ReasonTable): Map<number, string[]> {
  const byStatus = new Map<number, string[]>();
  for (const [name, info] of Object.entries(reasonStatusTable(reasons))) {
    if (name === 'dispatch_pending' || info.status < 400) continue;
    byStatus.set(info.status, [...(byStatus.get(info.status) ?? []), name]);
  }
  return new Map([...byStatus.entries()].sort((a, b) => a[0] - b[0]));
}

/** One Response object per error status, each listing its reasons, on the ErrorEnvelope schema. */
function errorResponses(reasons?: ReasonTable): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [status, names] of errorStatuses(reasons)) {
    const headers: Record<string, unknown> = {};
    if (status === 401) headers['WWW-Authenticate'] = { schema: { type: 'string' }, description: 'Bearer' };
    if (status === 429)
      headers['Retry-After'] = {
        schema: { type: 'integer' },
        description: 'Seconds until the call may be retried (daily_cap_exceeded, rate_limited).',
      };
    out[String(status)] = {
      description: `ok: false with error.reason one of: ${names.sort().join(', ')}`,
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      content: json(ref('ErrorEnvelope')),
    };
  }
  return out;
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
    plain_retry: {
      type: 'boolean',
      description:
        'Set by MCP bridges relaying a call that had no consent _meta: the repeat of an identical pending call completes it when consent.retry allows (spec/consent.md §plain-retry).',
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

/** Component names code generators accept as identifiers: `charge_invoice` → `ChargeInvoice`. */
export function componentNameOf(toolName: string): string {
  return toolName
    .split(/[^A-Za-z0-9]+/)
    .filter((w) => w !== '')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}

/** Path parameters a templated path needs (`/t/{tenant}/x/{file}` → tenant, file). */
function templateNames(path: string): string[] {
  return [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
}

/** Declare every `{name}` of the path the operation does not declare (a string, required). */
function withPathParameters(path: string, op: OpenApiOperation): OpenApiOperation {
  const names = templateNames(path);
  if (names.length === 0) return op;
  const declared = (op.parameters ?? []) as { name?: string; in?: string }[];
  const missing = names.filter((n) => !declared.some((p) => p.in === 'path' && p.name === n));
  if (missing.length === 0) return op;
  return {
    ...op,
    parameters: [
      ...declared,
      ...missing.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
    ],
  };
}

/** `GET /t/{tenant}/ucp/v1/spec` → `getTUcpV1SpecByTenant`-like: unique, identifier-safe. */
function operationIdOf(method: string, path: string, taken: Set<string>): string {
  const words = path
    .split('/')
    .filter((w) => w !== '')
    .map((w) => (w.startsWith('{') ? `by_${w.slice(1, -1)}` : w));
  const base = `${method}${componentNameOf(words.join('_'))}` || method;
  let id = base;
  for (let i = 2; taken.has(id); i++) id = `${base}${i}`;
  return id;
}

/**
 * The operation of one http verb: its args, its typed result, 202 pending, its errors. The
 * output schema goes to `schemas` as `<ToolName>Result` (its $defs beside it), so its local
 * `$ref`s resolve and generated clients get a named type.
 */
function verbOperation(
  verb: ReturnType<HttpPluginOptions['rt']['registry']['all']>[number],
  schemas: Record<string, unknown>,
): OpenApiOperation {
  const record = verb.record;
  let resultName = `${componentNameOf(verb.toolName)}Result`;
  for (let i = 2; resultName in schemas; i++) resultName = `${componentNameOf(verb.toolName)}${i}Result`;
  toComponents(resultName, record.output_schema ?? { type: 'object' }, schemas);
  const success = {
    allOf: [ref('Envelope')],
    type: 'object',
    required: ['ok', 'verb', 'result'],
    properties: {
      ok: { const: true },
      verb: { type: 'string' },
      result: ref(resultName),
    },
  };
  const gated = record.requires_consent;
  return {
    operationId: verb.toolName,
    summary: verb.definition.title ?? verb.name,
    description: record.description,
    tags: [`verbs:${verb.definition.category}`],
    'x-shape': record.shape,
    'x-consent-class': verb.consentClass,
    security: verb.isWrite ? [{ bearerApiKey: [] }] : [{}, { bearerApiKey: [] }],
    ...(verb.isWrite ? { parameters: [{ $ref: '#/components/parameters/IdempotencyKey' }] } : {}),
    requestBody: {
      required: record.input_schema.required !== undefined,
      content: json({
        ...DISPATCH_REQUEST,
        properties: { ...(DISPATCH_REQUEST.properties as object), args: record.input_schema },
      }),
    },
    responses: {
      200: {
        description: `ok: true; \`result\` is the ${record.shape} output of ${verb.name}.`,
        content: json(success),
      },
      ...(gated ? { 202: { $ref: '#/components/responses/Pending' } } : {}),
      ...Object.fromEntries(
        [...errorStatuses().keys()].map((s) => [String(s), { $ref: `#/components/responses/Error${s}` }]),
      ),
    },
  };
}

/**
 * Build the OpenAPI 3.1 document. Pure over the routes, the registry and `servers` (the URLs
 * the API is reached at: the request's origin and the configured public origins).
 *
 *   - every templated path declares its path parameters (undeclared ones as required strings);
 *   - every operation has an operationId (the route's, or METHOD + path, unique);
 *   - one operation per http verb: 200 typed by the verb's output_schema, 202 pending
 *     (consent-gated verbs), one shared response per error status (ErrorEnvelope), the
 *     Idempotency-Key header on writes;
 *   - security: bearer API key (optional on reads), the session cookie on WebMCP routes;
 *     operations that declare nothing take the root `security` (anonymous or bearer).
 *
 * Spec: spec/transports.md §http-openapi.
 */
export function buildOpenApi(
  routes: readonly RouteOptions[],
  rt: HttpPluginOptions['rt'],
  version: string,
  servers: readonly string[] = [],
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
      (paths[path] ??= {})[m] = withPathParameters(
        path,
        path === DISPATCH_PATH && m === 'post'
          ? {
              ...op,
              responses: dispatchResponses(rt.registry.reasons),
              'x-reason-status': reasonStatusTable(rt.registry.reasons),
            }
          : op,
      );
    }
  }
  const schemas: Record<string, unknown> = {};
  toComponents('Envelope', envelopeSchema, schemas);
  toComponents('VerbRecord', verbRecordSchema, schemas);
  for (const verb of rt.registry.all()) {
    if (!verb.surfaces.includes('http')) continue;
    paths[`/api/v1/agent/dispatch/${verb.name}`] = { post: verbOperation(verb, schemas) };
  }
  const taken = new Set<string>();
  for (const p of Object.values(paths))
    for (const op of Object.values(p) as OpenApiOperation[])
      if (typeof op.operationId === 'string') taken.add(op.operationId);
  for (const [path, p] of Object.entries(paths))
    for (const [m, op] of Object.entries(p) as [string, OpenApiOperation][])
      if (typeof op.operationId !== 'string') {
        op.operationId = operationIdOf(m, path, taken);
        taken.add(op.operationId as string);
      }
  schemas.DispatchRequest = DISPATCH_REQUEST;
  schemas.ErrorEnvelope = {
    description: 'A refused or failed call: ok is false and error.reason is the code to branch on.',
    allOf: [ref('Envelope')],
    type: 'object',
    required: ['ok', 'verb', 'error'],
    properties: {
      ok: { const: false },
      error: {
        type: 'object',
        required: ['reason', 'message'],
        properties: {
          reason: { type: 'string', enum: Object.keys(reasonStatusTable(rt.registry.reasons)).sort() },
          message: { type: 'string' },
          hint: { type: 'string' },
        },
      },
    },
  };
  schemas.PendingEnvelope = {
    description:
      'The 202 answer of a consent-gated call (spec/consent.md): show consent.summary (and consent.typed_phrase) to a person, then call again with confirm, nonce and the phrase.',
    allOf: [ref('Envelope')],
    type: 'object',
    required: ['ok', 'verb', 'error', 'consent'],
    properties: {
      ok: { const: false },
      error: {
        type: 'object',
        required: ['reason'],
        properties: { reason: { const: 'dispatch_pending' } },
      },
      consent: ref('EnvelopeConsent'),
    },
  };
  const responses: Record<string, unknown> = { Pending: PENDING_RESPONSE };
  for (const [status, response] of Object.entries(errorResponses(rt.registry.reasons)))
    responses[`Error${status}`] = response;
  return {
    openapi: '3.1.0',
    info: {
      title: 'solid-verbs HTTP API',
      version,
      description:
        'Typed verbs for AI agents. Every answer is an envelope { ok, verb, result?, error?: { reason, message, hint } }; agents branch on error.reason.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    servers: (servers.length > 0 ? servers : ['/']).map((url) => ({ url })),
    security: [{}, { bearerApiKey: [] }],
    paths,
    components: {
      schemas,
      responses,
      parameters: {
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'RFC 8941 sf-string (or a bare token such as a UUID), at most 255 printable ASCII characters. A repeat with the same key answers the stored receipt with Idempotent-Replayed: true.',
          schema: { type: 'string', maxLength: 255 },
        },
      },
      securitySchemes: {
        bearerApiKey: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'sk_solid_<key_id>_<secret>',
          description: 'API key from `solid init` / `solid api-keys create`.',
        },
        sessionCookie: {
          type: 'apiKey',
          in: 'cookie',
          name: 'solid_session',
          description:
            'Dashboard / WebMCP session from POST /api/v1/session; state-changing calls also send X-CSRF-Token.',
        },
      },
    },
  };
}

/** `scheme://host` of a request (X-Forwarded-* only when the server trusts the proxy). */
function originOf(req: FastifyRequest): string {
  return `${req.protocol}://${req.host}`;
}

export const openapiRoute: FastifyPluginAsync<
  HttpPluginOptions & { collector: OpenApiCollector; version?: string }
> = async (app, { rt, collector, version, allowedOrigins }) => {
  // The document is built once per registry/route state with a placeholder `servers`, which each
  // answer fills with its own origin: a Host header can change the answer, never the cost.
  const placeholder = JSON.stringify([{ url: 'urn:solid-verbs:servers' }]);
  let cached: { etag: string; routes: number; before: string; after: string } | undefined;
  app.get(
    '/openapi.json',
    {
      config: {
        openapi: {
          operationId: 'openapi',
          summary: 'This OpenAPI 3.1 document',
          tags: ['meta'],
          security: [],
          responses: { 200: { description: 'OpenAPI 3.1' } },
        },
      },
    },
    async (req, reply) => {
      const etag = `${rt.registry.etag()}.${rt.registry.reasons.size}`;
      // servers: the origin this request reached, then the configured public origins.
      const servers = [...new Set([originOf(req), ...(allowedOrigins ?? [])])];
      if (cached === undefined || cached.etag !== etag || cached.routes !== collector.routes.length) {
        const text = JSON.stringify(
          buildOpenApi(collector.routes, rt, version ?? '0.1.0', ['urn:solid-verbs:servers']),
        );
        const at = text.indexOf(placeholder);
        cached = {
          etag,
          routes: collector.routes.length,
          before: text.slice(0, at),
          after: text.slice(at + placeholder.length),
        };
      }
      return reply
        .header('cache-control', 'no-cache')
        .type('application/json; charset=utf-8')
        .send(`${cached.before}${JSON.stringify(servers.map((url) => ({ url })))}${cached.after}`);
    },
  );
};

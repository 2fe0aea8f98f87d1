/**
 * The OpenAPI operations of the WebMCP plugin's JSON routes (they appear in /openapi.json through
 * the HTTP transport's `config.openapi`, spec/transports.md §http-openapi). Static browser files
 * (`/`, `/dashboard.js`, `/dashboard.css`, `/webmcp.js`) are hidden with `config.openapi: false`.
 *
 * Spec: spec/transports.md §webmcp.
 */

const envelope = { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } };

const sessionCookie =
  'Session cookie `solid_session` from POST /api/v1/session; state-changing calls also need `X-CSRF-Token` and a same-origin `Origin` (spec/transports.md §webmcp-csrf).';

function op(
  operationId: string,
  tag: string,
  summary: string,
  description: string,
  extra: Record<string, unknown> = {},
): { openapi: Record<string, unknown> } {
  return {
    openapi: {
      operationId,
      tags: [tag],
      summary,
      description,
      responses: {
        default: {
          description:
            'Envelope (errors: session_invalid 401, csrf_failed / origin_denied 403, invalid_request 400, …)',
          content: envelope,
        },
      },
      // The session cookie, unless the route says otherwise (login takes the key in its body).
      security: [{ sessionCookie: [] }],
      ...extra,
    },
  };
}

const surfaceParam = {
  name: 'surface',
  in: 'query',
  required: true,
  schema: { type: 'string', enum: ['dashboard', 'portal', 'developer', 'tenant-site', 'public'] },
};

const callBody = (withSurface: boolean) => ({
  required: true,
  content: {
    'application/json': {
      schema: {
        type: 'object',
        additionalProperties: false,
        ...(withSurface ? { required: ['surface'] } : {}),
        properties: {
          input: { type: 'object', description: "The verb's arguments (its input schema)." },
          // The dashboard route also takes the agent API's word for the arguments (call-body.ts).
          ...(withSurface
            ? { surface: surfaceParam.schema }
            : {
                args: {
                  type: 'object',
                  description: "The same as `input` (the agent API's name); not both.",
                },
              }),
          confirm: { type: 'boolean' },
          nonce: { type: 'string' },
          typed_phrase: { type: 'string' },
          idempotency_key: { type: 'string' },
        },
      },
    },
  },
});

/** `config` of each JSON route, by "METHOD path". */
export const ROUTE_DOCS = {
  'GET /api/v1/webmcp/manifest': op(
    'webmcp_manifest',
    'webmcp',
    'WebMCP tools of a page surface',
    'The verbs on that page surface as WebMCP tools (name, description, inputSchema, annotations, consent_class, shape). Strong ETag; 304 on If-None-Match. `toolsets` trims it to those verb categories plus verbs.list and audit.revert.',
    {
      parameters: [
        surfaceParam,
        {
          name: 'toolsets',
          in: 'query',
          required: false,
          description:
            'Comma-separated verb categories (default all); an unknown one answers 400 invalid_request.',
          schema: { type: 'string' },
        },
      ],
    },
  ),
  'POST /api/v1/webmcp/execute/:tool_name': op(
    'webmcp_execute',
    'webmcp',
    'Execute a WebMCP tool',
    `Dispatches the tool on surface webmcp and the given page surface. ${sessionCookie} Without a session only the public surface runs (sandbox reads).`,
    {
      parameters: [{ name: 'tool_name', in: 'path', required: true, schema: { type: 'string' } }],
      requestBody: callBody(true),
    },
  ),
  'GET /api/v1/dashboard/catalog': op(
    'dashboard_catalog',
    'dashboard',
    'The verb catalogue',
    'Every registered verb with category, shape, consent class, floors and surfaces.',
  ),
  'POST /api/v1/dashboard/dispatch/:verb': op(
    'dashboard_dispatch',
    'dashboard',
    'Dispatch a verb as the signed-in human',
    `Dispatches on surface http with agent_type dashboard; every gate applies. ${sessionCookie}`,
    {
      parameters: [{ name: 'verb', in: 'path', required: true, schema: { type: 'string' } }],
      requestBody: callBody(false),
    },
  ),
} as const;

/** `config` hiding a static file from /openapi.json. */
export const HIDDEN = { openapi: false } as const;

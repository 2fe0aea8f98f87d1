/**
 * A small third-party-style server for the conformance kit's own tests, with ONE planted break of
 * the kinds a third-party implementation got past the kit before (issue 33 item 4): the demo
 * runtime served by the real HTTP mounts, a stateless MCP endpoint of its own at /mcp, and a pack
 * of its own ("acme") where a break needs a verb.
 *
 *   no_ok            success envelopes answer without `ok`          → envelope.success, envelope.error_fields
 *   off_shape        acme.widgets_list declares shape aggregate and an output_schema of its own,
 *                    and answers `{ widgets, total }` (valid against that, not the shape)
 *                                                                    → shapes.aggregate
 *   preview_writes   acme.price_preview commits the change it previews → shapes.preview_read_only
 *   mcp_schema       the MCP projection of verbs.list leaves out an argument the HTTP manifest has
 *                                                                    → parity.mcp_schemas
 *   mcp_annotations  every MCP tool is annotated readOnlyHint: true, writes too
 *                                                                    → parity.mcp_annotations
 */
import type { TestContext } from 'node:test';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createHttpServer, type HttpPlugin } from '../../src/transports/http/server.ts';
import { HTTP_MOUNTS } from '../../src/transports/server/http-mounts.ts';
import { createMcpServer } from '../../src/transports/mcp/mcp-server.ts';
import { ToolCatalog } from '../../src/transports/mcp/tool-catalog.ts';
import { defineVerb } from '../../src/runtime/verb.ts';
import type { Pack } from '../../src/runtime/pack.ts';
import type { Runtime } from '../../src/runtime/runtime.ts';
import { installPack, openDemoRuntime } from '../support/demo.ts';

export type Plant = 'no_ok' | 'off_shape' | 'preview_writes' | 'mcp_schema' | 'mcp_annotations';

/** The check each plant must fail. */
export const CAUGHT_BY: Readonly<Record<Plant, string[]>> = {
  no_ok: ['envelope.success', 'envelope.error_fields'],
  off_shape: ['shapes.aggregate'],
  preview_writes: ['shapes.preview_read_only'],
  mcp_schema: ['parity.mcp_schemas'],
  mcp_annotations: ['parity.mcp_annotations'],
};

/** The acme pack: the verb a plant needs, written as a third party would. */
function acmePack(plant: Plant): Pack {
  let price = 100;
  const verbs = [];
  if (plant === 'off_shape')
    verbs.push(
      defineVerb({
        name: 'acme.widgets_list',
        description: 'List the widgets of the shop.',
        shape: 'aggregate',
        category: 'acme',
        input: { type: 'object', properties: {}, additionalProperties: false },
        output: {
          type: 'object',
          properties: { widgets: { type: 'array' }, total: { type: 'integer' } },
          required: ['widgets', 'total'],
        },
        async handler() {
          return { widgets: [{ id: 1, name: 'sprocket' }], total: 1 };
        },
      }),
    );
  if (plant === 'preview_writes')
    verbs.push(
      defineVerb({
        name: 'acme.price_preview',
        description: 'Preview raising the list price by 10.',
        shape: 'preview',
        category: 'acme',
        input: { type: 'object', properties: {}, additionalProperties: false },
        async handler() {
          const current = { price };
          price += 10; // the break: the preview commits what it previews
          return { current, projected: { price }, reversible: true };
        },
      }),
    );
  return { name: 'acme', description: 'A third-party pack (test).', migrations: [], verbs };
}

/** The projection with a tampered tool list (the verbs stay callable). */
class TamperedCatalog extends ToolCatalog {
  constructor(
    rt: Runtime,
    readonly tamper: (tool: Tool) => Tool,
  ) {
    super(rt);
  }
  override page(cursor: string | undefined): ReturnType<ToolCatalog['page']> {
    const p = super.page(cursor);
    return { ...p, tools: p.tools.map((tool) => this.tamper(structuredClone(tool))) };
  }
}

function tamperOf(plant: Plant): (tool: Tool) => Tool {
  if (plant === 'mcp_schema')
    return (tool) => {
      if (tool.name === 'verbs__list') {
        const props = tool.inputSchema.properties as Record<string, unknown>;
        delete props[Object.keys(props)[0]!];
      }
      return tool;
    };
  if (plant === 'mcp_annotations')
    return (tool) => ({ ...tool, annotations: { ...tool.annotations, readOnlyHint: true } });
  return (tool) => tool;
}

/** Stateless Streamable HTTP MCP at /mcp over the (tampered) projection. */
function statelessMcp(rt: Runtime, tamper: (tool: Tool) => Tool): HttpPlugin {
  return async (app: FastifyInstance) => {
    const catalog = new TamperedCatalog(rt, tamper);
    app.addHook('onClose', async () => catalog.dispose());
    app.post('/mcp', { config: { openapi: false } }, async (req: FastifyRequest, reply: FastifyReply) => {
      const auth = req.headers.authorization;
      const apiKey = typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice(7) : null;
      const server = createMcpServer(rt, { catalog, credentials: () => ({ apiKey }), listChanged: false });
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      reply.hijack();
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req.raw, reply.raw, req.body);
    });
    app.get('/mcp', { config: { openapi: false } }, async (_req, reply) =>
      reply.code(405).header('allow', 'POST').send(),
    );
  };
}

/** Start the server with `plant`; its base URL and an owner key. */
export async function startPlantedServer(
  t: TestContext,
  plant: Plant,
): Promise<{ base: string; ownerKey: string }> {
  const demo = await openDemoRuntime(t);
  await installPack(demo.rt, acmePack(plant));
  const plugins: HttpPlugin[] = [];
  for (const [name, load] of Object.entries(HTTP_MOUNTS)) if (name !== 'mcp') plugins.push(await load());
  plugins.push(statelessMcp(demo.rt, tamperOf(plant)));
  const app = createHttpServer(demo.rt, { logger: false, plugins });
  if (plant === 'no_ok')
    app.addHook('onSend', async (req, _reply, payload) => {
      if (!req.url.startsWith('/api/v1/agent/dispatch/') || typeof payload !== 'string') return payload;
      const env = JSON.parse(payload) as { ok?: unknown };
      if (env.ok !== true) return payload;
      delete env.ok;
      return JSON.stringify(env);
    });
  t.after(() => app.close());
  await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    ownerKey: demo.keys.owner,
  };
}

/**
 * A deliberately broken solid-verbs server for the conformance kit's own tests: the demo runtime
 * with the conformance pack, served on an ephemeral port by the real HTTP server and mounts, with
 * four planted breaks, each the kind of mistake an implementation makes:
 *
 * - an invalid manifest record: `audit.trail` carries an extra member (`x-test-safe`), which
 *   VerbRecord's `additionalProperties: false` forbids           → manifest.records
 * - a receipt without `audit_id`: conformance.counter_add's answers drop `result.audit_id`
 *                                                                 → receipts.fields
 * - a replayable nonce: a nonce that already confirmed a write is swapped for a fresh one before
 *   dispatch, so it confirms again                                 → consent.replayed_nonce
 * - a verb missing from MCP: /mcp (stateless Streamable HTTP) leaves audit.trail out of
 *   tools/list although its record lists mcp_stdio                → parity.mcp_tools
 */
import type { TestContext } from 'node:test';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createHttpServer, type HttpPlugin } from '../../src/transports/http/server.ts';
import { HTTP_MOUNTS } from '../../src/transports/server/http-mounts.ts';
import { createMcpServer } from '../../src/transports/mcp/mcp-server.ts';
import { ToolCatalog } from '../../src/transports/mcp/tool-catalog.ts';
import { conformancePack } from '../../src/conformance/index.ts';
import type { Runtime } from '../../src/runtime/runtime.ts';
import { installPack, openDemoRuntime, type DemoRuntime } from '../support/demo.ts';
import { dispatchAs } from '../support/keyed.ts';

/** Which planted break each failed check must report. */
export const PLANTED = {
  'manifest.records': 'audit.trail has an extra member x-test-safe',
  'receipts.fields': 'conformance.counter_add answers no result.audit_id',
  'consent.replayed_nonce': 'a spent nonce confirms again',
  'parity.mcp_tools': 'audit.trail is missing from tools/list',
} as const;

/** A catalog that leaves one tool out of tools/list (the verb stays callable). */
class DroppingCatalog extends ToolCatalog {
  constructor(
    rt: Runtime,
    readonly dropped: string,
  ) {
    super(rt);
  }
  override page(cursor: string | undefined): ReturnType<ToolCatalog['page']> {
    const p = super.page(cursor);
    return { ...p, tools: p.tools.filter((tool) => tool.name !== this.dropped) };
  }
}

/** Stateless Streamable HTTP MCP at /mcp over the dropping catalog (one Server per request). */
function brokenMcp(rt: Runtime): HttpPlugin {
  return async (app: FastifyInstance) => {
    const catalog = new DroppingCatalog(rt, 'audit__trail');
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

function bearer(req: FastifyRequest): string | null {
  const auth = req.headers.authorization;
  return typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice(7) : null;
}

export interface BrokenServer {
  demo: DemoRuntime;
  base: string;
  ownerKey: string;
}

export async function startBrokenServer(t: TestContext): Promise<BrokenServer> {
  const demo = await openDemoRuntime(t);
  await installPack(demo.rt, conformancePack);
  const plugins: HttpPlugin[] = [];
  for (const [name, load] of Object.entries(HTTP_MOUNTS)) if (name !== 'mcp') plugins.push(await load());
  plugins.push(brokenMcp(demo.rt));
  const app = createHttpServer(demo.rt, { logger: false, plugins });

  // Break 1: an extra member in one record of every manifest listing.
  app.addHook('onSend', async (req, _reply, payload) => {
    if (!req.url.startsWith('/api/v1/agent/verbs') || typeof payload !== 'string') return payload;
    const doc = JSON.parse(payload) as { verbs?: Array<Record<string, unknown>> };
    if (!Array.isArray(doc.verbs)) return payload;
    for (const r of doc.verbs) if (r.name === 'audit.trail') r['x-test-safe'] = true;
    return JSON.stringify(doc);
  });
  // Break 2: receipts of the test write without their audit_id.
  app.addHook('onSend', async (req, _reply, payload) => {
    if (!req.url.startsWith('/api/v1/agent/dispatch/conformance.counter_add') || typeof payload !== 'string')
      return payload;
    const env = JSON.parse(payload) as { result?: Record<string, unknown> };
    if (env.result !== undefined && 'audit_id' in env.result) delete env.result.audit_id;
    return JSON.stringify(env);
  });
  // Break 3: a nonce that already confirmed a write is replaced by a fresh one, so it works again.
  const spent = new Set<string>();
  app.addHook('preHandler', async (req) => {
    if (req.method !== 'POST' || !req.url.startsWith('/api/v1/agent/dispatch/')) return;
    const body = req.body as { args?: Record<string, unknown>; nonce?: unknown } | undefined;
    if (typeof body?.nonce !== 'string') return;
    (req as { plantedNonce?: string }).plantedNonce = body.nonce;
    if (!spent.has(body.nonce)) return;
    const verb = decodeURIComponent(req.url.slice('/api/v1/agent/dispatch/'.length).split('?')[0]!);
    const fresh = await dispatchAs(demo.rt, { surface: 'http', apiKey: bearer(req) }, verb, body.args ?? {});
    if (fresh.consent?.nonce !== undefined) body.nonce = fresh.consent.nonce;
  });
  app.addHook('onResponse', async (req, reply) => {
    const nonce = (req as { plantedNonce?: string }).plantedNonce;
    if (nonce !== undefined && reply.statusCode === 200) spent.add(nonce);
  });

  t.after(() => app.close());
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return { demo, base, ownerKey: demo.keys.owner };
}

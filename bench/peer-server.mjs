/**
 * "What users pick instead" (bench/peers.ts, bench/mcp.ts, bench/serve-rss.ts): the MCP server a
 * SaaS team writes today without solid-verbs, as a separate plain-node process (no tsx, as a
 * deployed server runs), on the same SQLite file `solid serve` uses.
 *
 *   node bench/peer-server.mjs   with env SOLID_PEER = JSON { kind, db, token, port }
 *
 * kind:
 *   sdk-node     the official SDK's McpServer + StreamableHTTPServerTransport on bare node:http
 *   sdk-express  the same on Express (express.json() body parser)
 *   sdk-fastify  the same on Fastify (its JSON parser, reply.hijack())
 *   fastmcp      fastmcp's FastMCP with its own httpStream transport
 *   fastify-bare a bare Fastify answering POST /api/v1/agent/dispatch/:verb with one SELECT on
 *                the audit log (the RSS baseline of serve.rss_vs_fastify; no MCP)
 *
 * Each MCP kind serves two tools under the names our server gives the verbs of
 * bench/peer-pack.mjs (SQL in bench/peer-sql.mjs): `bench__search` (the same SQL as bench.search) and `bench__set_phone` —
 * the careful transaction (the SELECT + UPDATE of bench.set_phone, a SHA-256-chained audit
 * INSERT, an idempotency INSERT holding the receipt, an ES256 signature of the receipt, in one
 * better-sqlite3 transaction; WAL, synchronous=FULL like `solid serve --durability full`). A
 * request without `Authorization: Bearer <token>` is answered 401 (the token compared by its
 * SHA-256, constant time): a careful team checks a key too. Stateful sessions, one McpServer per
 * session, as the SDK's examples do. Prints `ready <url>` on stdout.
 */
import { createHash, generateKeyPairSync, randomUUID, sign, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import Database from 'better-sqlite3';

const cfg = JSON.parse(process.env.SOLID_PEER ?? '{}');
const isMcp = cfg.kind !== 'fastify-bare';
// The bare Fastify baseline loads nothing of MCP, zod or solid-verbs (its RSS is the point).
const { z } = isMcp ? await import('zod') : {};
const { McpServer } = isMcp ? await import('@modelcontextprotocol/sdk/server/mcp.js') : {};
const { StreamableHTTPServerTransport } = isMcp
  ? await import('@modelcontextprotocol/sdk/server/streamableHttp.js')
  : {};
const { COMPANY_ID, GET_SQL, SEARCH_SQL, UPDATE_SQL } = isMcp ? await import('./peer-sql.mjs') : {};
const db = new Database(cfg.db);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.pragma('busy_timeout = 5000');
if (isMcp)
  db.exec(`
CREATE TABLE IF NOT EXISTS careful_audit (id INTEGER PRIMARY KEY, company_id INTEGER NOT NULL, created_at TEXT NOT NULL, action TEXT NOT NULL, data TEXT NOT NULL, prev_hash TEXT NOT NULL, row_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS careful_idempotency (key TEXT PRIMARY KEY, company_id INTEGER NOT NULL, receipt TEXT NOT NULL, created_at TEXT NOT NULL);`);

const tokenHash = createHash('sha256').update(String(cfg.token)).digest();
/** Whether an Authorization header carries the token. */
function authorised(header) {
  if (typeof header !== 'string' || !header.startsWith('Bearer ')) return false;
  return timingSafeEqual(createHash('sha256').update(header.slice(7)).digest(), tokenHash);
}

const st = isMcp
  ? {
      search: db.prepare(SEARCH_SQL),
      get: db.prepare(GET_SQL),
      update: db.prepare(UPDATE_SQL),
      last: db.prepare('SELECT row_hash FROM careful_audit ORDER BY id DESC LIMIT 1'),
      audit: db.prepare(
        'INSERT INTO careful_audit (company_id, created_at, action, data, prev_hash, row_hash) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      idem: db.prepare(
        'INSERT INTO careful_idempotency (key, company_id, receipt, created_at) VALUES (?, ?, ?, ?)',
      ),
    }
  : undefined;
const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });

function search(q) {
  const rows = st.search.all(COMPANY_ID, `%${q}%`);
  return { entity_id: COMPANY_ID, data: { matches: rows.length, contacts: rows } };
}

const careful = isMcp
  ? db.transaction((id, phone) => {
      const before = st.get.get(COMPANY_ID, id);
      st.update.run(phone, COMPANY_ID, id);
      const result = { contact_id: id, previous_phone: before?.phone ?? null, phone };
      const prev = st.last.get()?.row_hash ?? '0'.repeat(64);
      const now = new Date().toISOString();
      const data = JSON.stringify({ args: { id, phone }, result });
      const rowHash = createHash('sha256')
        .update(prev)
        .update(`${now}|bench.set_phone|${data}`)
        .digest('hex');
      st.audit.run(COMPANY_ID, now, 'bench.set_phone', data, prev, rowHash);
      const receipt = JSON.stringify({ verb: 'bench.set_phone', result, audit_hash: rowHash, at: now });
      const signature = sign('sha256', Buffer.from(receipt), { key: privateKey, dsaEncoding: 'ieee-p1363' });
      st.idem.run(
        randomUUID(),
        COMPANY_ID,
        JSON.stringify({ receipt, signature: signature.toString('base64url') }),
        now,
      );
      return { ...result, receipt, signature: signature.toString('base64url') };
    })
  : undefined;

const asResult = (value) => ({
  content: [{ type: 'text', text: JSON.stringify(value) }],
  structuredContent: value,
});

/** One SDK McpServer with the two tools (one per session, as the SDK's examples do). */
function sdkServer() {
  const s = new McpServer({ name: 'peer', version: '1.0.0' });
  s.registerTool(
    'bench__search',
    { description: 'Search contacts by name.', inputSchema: { q: z.string() } },
    async ({ q }) => asResult(search(q)),
  );
  s.registerTool(
    'bench__set_phone',
    {
      description: "Set a contact's phone number.",
      inputSchema: { id: z.number().int().min(1), phone: z.string().max(40) },
    },
    async ({ id, phone }) => asResult(careful(id, phone)),
  );
  return s;
}

/** The SDK's session bookkeeping: the transport of a session id, or a new one on initialize. */
function sessions() {
  const map = new Map();
  return async (req, res, body) => {
    const sid = req.headers['mcp-session-id'];
    let transport = typeof sid === 'string' ? map.get(sid) : undefined;
    if (transport === undefined) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void map.set(id, transport),
      });
      transport.onclose = () => transport.sessionId && map.delete(transport.sessionId);
      await sdkServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  };
}

const unauthorised = (res) => {
  res.statusCode = 401;
  res.setHeader('content-type', 'application/json');
  res.end('{"error":"unauthorized"}');
};

async function main() {
  const host = '127.0.0.1';
  const port = Number(cfg.port ?? 0);
  let url;
  switch (cfg.kind) {
    case 'sdk-node': {
      const handle = sessions();
      const server = createServer((req, res) => {
        if (!authorised(req.headers.authorization)) return unauthorised(res);
        handle(req, res).catch(() => {
          if (!res.headersSent) res.statusCode = 500;
          res.end();
        });
      });
      await new Promise((r) => server.listen(port, host, r));
      url = `http://${host}:${server.address().port}/mcp`;
      break;
    }
    case 'sdk-express': {
      const { default: express } = await import('express');
      const handle = sessions();
      const app = express();
      app.use(express.json({ limit: '1mb' }));
      app.all('/mcp', (req, res) => {
        if (!authorised(req.headers.authorization)) return unauthorised(res);
        handle(req, res, req.body).catch(() => {
          if (!res.headersSent) res.status(500);
          res.end();
        });
      });
      const server = await new Promise((r) => {
        const s = app.listen(port, host, () => r(s));
      });
      url = `http://${host}:${server.address().port}/mcp`;
      break;
    }
    case 'sdk-fastify':
    case 'fastify-bare': {
      const { default: Fastify } = await import('fastify');
      const app = Fastify({ logger: false });
      if (cfg.kind === 'sdk-fastify') {
        const handle = sessions();
        app.route({
          method: ['GET', 'POST', 'DELETE'],
          url: '/mcp',
          handler: async (req, reply) => {
            if (!authorised(req.headers.authorization))
              return reply.code(401).send({ error: 'unauthorized' });
            reply.hijack();
            await handle(req.raw, reply.raw, req.body);
          },
        });
      } else {
        const trail = db.prepare(
          'SELECT * FROM audit_log WHERE company_id = ? ORDER BY audit_id DESC LIMIT 50',
        );
        app.post('/api/v1/agent/dispatch/:verb', async (req, reply) => {
          if (!authorised(req.headers.authorization)) return reply.code(401).send({ error: 'unauthorized' });
          return { ok: true, verb: req.params.verb, result: { rows: trail.all(Number(cfg.company ?? 1)) } };
        });
      }
      await app.listen({ port, host });
      url = `http://${host}:${app.server.address().port}${cfg.kind === 'fastify-bare' ? '' : '/mcp'}`;
      break;
    }
    case 'fastmcp': {
      const { FastMCP } = await import('fastmcp');
      const server = new FastMCP({
        name: 'peer',
        version: '1.0.0',
        authenticate: async (req) => {
          if (!authorised(req.headers.authorization))
            throw new Response(null, { status: 401, statusText: 'Unauthorized' });
          return { ok: true };
        },
      });
      server.addTool({
        name: 'bench__search',
        description: 'Search contacts by name.',
        parameters: z.object({ q: z.string() }),
        execute: async ({ q }) => JSON.stringify(search(q)),
      });
      server.addTool({
        name: 'bench__set_phone',
        description: "Set a contact's phone number.",
        parameters: z.object({ id: z.number().int().min(1), phone: z.string().max(40) }),
        execute: async ({ id, phone }) => JSON.stringify(careful(id, phone)),
      });
      await server.start({ transportType: 'httpStream', httpStream: { port, host, endpoint: '/mcp' } });
      url = `http://${host}:${port}/mcp`;
      break;
    }
    default:
      throw new Error(`unknown peer kind ${cfg.kind}`);
  }
  process.stdout.write(`ready ${url}\n`);
}

process.on('SIGTERM', () => {
  db.close();
  process.exit(0);
});
await main();

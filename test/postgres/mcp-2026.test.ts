/**
 * Two `solid serve --database-url` nodes on one PostgreSQL database behind alternating routing,
 * and one MCP 2026-07-28 client (the SDK v2 client, pinned): every request goes to the other
 * node, with no session and no sticky routing: tools/list, a read, a write on one node whose replay
 * (same idempotency key) on the other returns the stored receipt, and the write listed back.
 * Spec: spec/transports.md §mcp-2026, spec/store.md §multi-node.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client as ModernClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { PG_SKIP_REASON, TEST_DATABASE_URL, freshSchemaName, dropSchema } from '../support/postgres.ts';
import { deploy, inspect, startServes } from './harness.ts';
import { resultOf } from '../support/mcp.ts';

describe(
  'MCP 2026-07-28 on two nodes',
  { skip: TEST_DATABASE_URL === undefined ? PG_SKIP_REASON : false, timeout: 240_000 },
  () => {
    it('alternating requests of one client are answered by both nodes, no session needed', async (t) => {
      const schema = freshSchemaName();
      t.after(() => dropSchema(schema));
      const d = await deploy(TEST_DATABASE_URL!, schema);
      const [a, b] = await startServes(t, d, 2);
      const origins = [a!.url, b!.url].map((u) => new URL(u));
      let n = 0;
      const answeredBy: string[] = [];
      const alternating: typeof fetch = (input, init) => {
        const target = new URL(input instanceof Request ? input.url : String(input));
        const node = origins[n++ % 2]!;
        target.host = node.host;
        answeredBy.push(node.host);
        return fetch(target, init);
      };
      const client = new ModernClient(
        { name: 'two-nodes', version: '1.0.0' },
        { versionNegotiation: { mode: { pin: '2026-07-28' } } },
      );
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${a!.url}/mcp`), {
          requestInit: { headers: { Authorization: `Bearer ${d.ownerKey}` } },
          fetch: alternating,
        }),
      );
      t.after(() => client.close().catch(() => {}));
      assert.equal(client.getProtocolEra(), 'modern');

      const names: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor === undefined ? {} : { cursor });
        names.push(...page.tools.map((x) => x.name));
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      assert.ok(names.includes('macros__save'), names.join(', '));
      const read = await client.callTool({ name: 'tenant__settings', arguments: {} });
      assert.notEqual(read.isError, true, JSON.stringify(read));

      // A write on one node, its replay (same idempotency key) on the other, then a read of it.
      const args = { name: 'two-nodes', steps: [{ verb: 'verbs.list', args: {} }] };
      const _meta = { 'dev.solid-verbs/idempotency_key': randomUUID() };
      const saved = await client.callTool({ name: 'macros__save', arguments: args, _meta });
      assert.notEqual(saved.isError, true, JSON.stringify(saved));
      const again = await client.callTool({ name: 'macros__save', arguments: args, _meta });
      const first = resultOf(saved) as { audit_id: number; macro_id: string };
      const replay = resultOf(again) as { audit_id: number; replayed?: boolean };
      assert.equal(replay.replayed, true, JSON.stringify(again));
      assert.equal(replay.audit_id, first.audit_id);
      const listed = await client.callTool({ name: 'macros__list', arguments: {} });
      assert.ok(JSON.stringify(resultOf(listed)).includes(first.macro_id));
      assert.deepEqual(new Set(answeredBy), new Set(origins.map((o) => o.host)), 'both nodes answered');
      await inspect(d, async (c) => {
        const rows = await c.query(
          `SELECT count(*)::int AS n FROM audit_log WHERE company_id = 2 AND action_type = 'macros.save' AND status <> 'replayed'`,
        );
        assert.equal(rows.rows[0].n, 1, 'the write ran once');
      });
    });
  },
);

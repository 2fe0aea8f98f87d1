/**
 * The MCP tool budget (spec/transports.md §mcp-tool-budget): every tools/list page a client
 * receives for `solid serve --demo`'s catalogue fits in 110,000 bytes of JSON-RPC, because MCP
 * clients put every definition into the model's context on each request. A verb added with a
 * long description or a big schema fails here, not in an agent's context window.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openLocal } from '../../../src/transports/cli/local.ts';
import type { Runtime } from '../../../src/runtime/runtime.ts';
// The same measurement `npm run bench -- tools-list` reports (mcp.tools_list_bytes*).
import { answerBytes, toolsListBytes, toolsListBytes2026 } from '../../../bench/tools-list.ts';

const BUDGET_BYTES = 110_000;

/** `solid serve --demo`'s catalogue: the system verbs, the demo, conformance and integrations packs. */
async function demoRuntime(t: TestContext, seeded = false): Promise<Runtime> {
  const dir = mkdtempSync(join(tmpdir(), 'solid-tool-budget-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const local = await openLocal({
    db: join(dir, 'demo.db'),
    create: true,
    packs: ['demo', 'conformance', 'integrations'],
  });
  t.after(() => local.close());
  if (seeded) await local.packs.find((p) => p.name === 'demo')!.seed!(local.rt, {});
  return local.rt;
}

function assertWithinBudget({ bytes, tools }: { bytes: number; tools: number }): void {
  assert.ok(tools > 100, `the demo catalogue is listed (${tools} tools)`);
  assert.ok(
    bytes <= BUDGET_BYTES,
    `tools/list is ${bytes} bytes for ${tools} tools (budget ${BUDGET_BYTES})`,
  );
}

test('tools/list of the demo catalogue stays within the 110,000-byte budget (issue 36)', async (t) => {
  assertWithinBudget(await toolsListBytes(await demoRuntime(t)));
});

// 2026-07-28 results carry resultType, ttlMs, cacheScope and _meta serverInfo: ~167 bytes more per
// page than 2025-11-25; the catalogue pays for them (the served date-time schemas dropped the
// pattern that repeated their format, which the server still checks).
test('tools/list over MCP 2026-07-28 stays within the same budget', async (t) => {
  assertWithinBudget(await toolsListBytes2026(await demoRuntime(t)));
});

// One copy of the result (a JSON text block, no structuredContent): an answer costs the model
// about what the HTTP envelope costs a program (spec/transports.md §mcp-results).
test('a tools/call answer is at most 1.3× the HTTP envelope of the same read', async (t) => {
  const answers = await answerBytes(await demoRuntime(t, true));
  assert.ok(answers.length > 0);
  for (const a of answers) {
    assert.ok(a.ok, `${a.verb} answers ok over both transports`);
    assert.ok(a.mcp <= 1.3 * a.http, `${a.verb}: MCP ${a.mcp} B vs HTTP ${a.http} B`);
  }
});

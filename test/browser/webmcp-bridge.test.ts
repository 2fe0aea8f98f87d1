/**
 * The MCP-B bridge page, GET /webmcp-bridge (spec/transports.md §webmcp-bridge), in headless
 * Chromium: the page loads under its own CSP, @mcp-b/global is the provider in charge (and is
 * reported as `mcp-b`), an MCP-B client in the page (@mcp-b/transports' TabClientTransport with
 * the official MCP client) lists the surface's tools and calls a read, a gated write comes back
 * pending with no dialog on the page, and the dashboard's CSP is unchanged.
 *
 * Run: node --import tsx --test test/browser/webmcp-bridge.test.ts
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, it, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import type { WebmcpManifest } from '../../src/transports/webmcp/index.ts';
import { BRIDGE_CSP } from '../../src/transports/webmcp/dashboard-routes.ts';
import { launchChromium, skipUnlessChromium } from '../support/browser.ts';
import { listenLoopback, webmcpFixture, type WebmcpFixture } from '../transports/webmcp/fixture.ts';
import { STEP_TIMEOUT_MS, TEST_TIMEOUT_MS, logIn, moduleMode, openToolPage } from './webmcp-pages.ts';

/** The dashboard's policy exactly as spec/transports.md §webmcp-dashboard states it. */
const DASHBOARD_CSP_TEXT =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

const require = createRequire(import.meta.url);

async function clientBundle(): Promise<string> {
  const result = await build({
    entryPoints: [new URL('./mcpb-client.ts', import.meta.url).pathname],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: ['chrome120'],
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

/** Test-only pages: the MCP-B client, and a plain page where @mcp-b/global loads before /webmcp.js. */
async function testPages(): Promise<Record<string, string>> {
  return {
    '/test/mcpb-client.js': await clientBundle(),
    '/test/mcpb-options.js': `window.__webModelContextOptions = { transport: { tabServer: { allowedOrigins: [location.origin] }, iframeServer: false } };`,
    '/test/mcpb-global.js': readFileSync(require.resolve('@mcp-b/global/iife'), 'utf8'),
    '/test/mcpb-page.html': `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>MCP-B page</title>
<script src="/test/mcpb-options.js"></script><script src="/test/mcpb-global.js"></script>
<script type="module" src="/webmcp.js" data-surface="dashboard"></script></head><body><h1>MCP-B</h1></body></html>`,
  };
}

async function setup(
  t: TestContext,
  webmcp: boolean,
): Promise<{ f: WebmcpFixture; origin: string; browser: Browser }> {
  const f = await webmcpFixture(t, {}, await testPages());
  const origin = await listenLoopback(f.app);
  const browser = await launchChromium({ webmcp });
  t.after(() => browser.close());
  return { f, origin, browser };
}

async function manifestNames(f: WebmcpFixture, surface: string): Promise<string[]> {
  const res = await f.app.inject({ method: 'GET', url: `/api/v1/webmcp/manifest?surface=${surface}` });
  return (res.json() as WebmcpManifest).tools.map((tool) => tool.name).sort();
}

/** Open the bridge page, recording every CSP violation, and wait until it has settled. */
async function openBridge(page: Page, url: string): Promise<{ state: string; violations: string[] }> {
  await page.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { cspViolations: string[] }).cspViolations = seen;
    document.addEventListener('securitypolicyviolation', (event) => {
      seen.push(
        `${event.effectiveDirective} ${event.blockedURI} ${event.sourceFile}:${event.lineNumber}:${event.columnNumber}`,
      );
    });
  });
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.state !== 'loading');
  await page.addScriptTag({ url: '/test/mcpb-client.js' });
  return page.evaluate(() => ({
    state: document.body.dataset.state ?? '',
    violations: (window as unknown as { cspViolations: string[] }).cspViolations,
  }));
}

interface McpTool {
  name: string;
  annotations?: Record<string, unknown>;
}
interface McpResult {
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  content: Array<{ type: string; text?: string }>;
}

function listTools(page: Page): Promise<McpTool[]> {
  return page.evaluate(() =>
    (window as unknown as { mcpbClient: { listTools(): Promise<McpTool[]> } }).mcpbClient.listTools(),
  );
}

function callTool(page: Page, name: string, args: Record<string, unknown>): Promise<McpResult> {
  return page.evaluate(
    ({ name: tool, args: input }) =>
      (
        window as unknown as {
          mcpbClient: { callTool(n: string, a: Record<string, unknown>): Promise<McpResult> };
        }
      ).mcpbClient.callTool(tool, input),
    { name, args },
  );
}

describe('MCP-B bridge page routes', () => {
  it('serves the bridge under its own CSP and leaves the dashboard policy as it was', async (t) => {
    const f = await webmcpFixture(t);
    const bridge = await f.app.inject({ method: 'GET', url: '/webmcp-bridge' });
    assert.equal(bridge.statusCode, 200);
    assert.equal(bridge.headers['content-security-policy'], BRIDGE_CSP);
    assert.doesNotMatch(BRIDGE_CSP, /unsafe-(eval|inline)|wasm-unsafe-eval/);
    assert.equal(bridge.headers['x-frame-options'], 'DENY');
    // The page loads the bridge script and nothing of the dashboard.
    assert.match(bridge.body, /src="\/webmcp-bridge\.js"/);
    assert.doesNotMatch(bridge.body, /dashboard\.js|dashboard\.css|solid-consent/);
    const script = await f.app.inject({ method: 'GET', url: '/webmcp-bridge.js' });
    assert.equal(script.statusCode, 200);
    assert.match(String(script.headers['content-type']), /^text\/javascript/);
    assert.ok(script.body.includes('__isBrowserMcpServer'), 'the bundle carries @mcp-b/global');
    assert.ok(!script.body.includes('solid-consent'), 'the bundle has no consent dialog');
    const spec = readFileSync(fileURLToPath(new URL('../../spec/transports.md', import.meta.url)), 'utf8');
    assert.ok(spec.includes(`Content-Security-Policy: ${BRIDGE_CSP}`), '§webmcp-bridge states the policy');
    for (const path of ['/', '/approvals/apr_x', '/enrol/tok']) {
      const dashboard = await f.app.inject({ method: 'GET', url: path });
      assert.equal(dashboard.headers['content-security-policy'], DASHBOARD_CSP_TEXT, path);
    }
  });
});

describe('MCP-B bridge page (@mcp-b/global) in Chromium', { skip: skipUnlessChromium() }, () => {
  it(
    'an MCP-B client lists the tools and calls a read; a gated write stays pending, with no dialog',
    { timeout: TEST_TIMEOUT_MS },
    async (t) => {
      const { f, origin, browser } = await setup(t, false);
      const context = await browser.newContext();
      await logIn(context, origin, f.keys.owner);
      const page = await context.newPage();
      page.setDefaultTimeout(STEP_TIMEOUT_MS);
      const { state, violations } = await openBridge(page, `${origin}/webmcp-bridge`);
      assert.equal(state, 'ready');
      assert.deepEqual(violations, [], 'nothing the bridge needs is blocked by its CSP');
      assert.equal(await page.evaluate(() => document.body.dataset.webmcp), 'mcp-b');
      assert.equal(await moduleMode(page), 'mcp-b');

      const tools = await listTools(page);
      assert.deepEqual(tools.map((tool) => tool.name).sort(), await manifestNames(f, 'dashboard'));
      assert.equal(tools.find((tool) => tool.name === 'webtest__quote')!.annotations?.readOnlyHint, true);

      const quote = await callTool(page, 'webtest__quote', { sku: 'mug', quantity: 2 });
      assert.equal(quote.isError, undefined);
      assert.deepEqual(quote.structuredContent?.data, { quantity: 2, total_cents: 2500 });

      // A typed-phrase write: the pending answer goes back to the agent; the page asks no one.
      const charge = await callTool(page, 'webtest__charge', { invoice_id: 7, amount_cents: 1999 });
      assert.equal(charge.isError, true);
      const envelope = charge.structuredContent as { error?: { reason?: string } };
      assert.equal(envelope.error?.reason, 'dispatch_pending');
      assert.equal(await page.locator('dialog').count(), 0);
      assert.deepEqual(await f.effects(), []);

      // The call went through the WebMCP execute route as the signed-in user's agent.
      const rows = await f.rt.store.read((q) =>
        q.all<Record<string, unknown>>(
          `SELECT status, reason, agent_type FROM audit_log WHERE action_type = 'webtest.charge'`,
        ),
      );
      assert.deepEqual(rows, [
        { status: 'pending', reason: 'dispatch_pending', agent_type: 'webmcp:dashboard' },
      ]);
    },
  );

  it(
    'without a session registers no tools and says where to sign in',
    { timeout: TEST_TIMEOUT_MS },
    async (t) => {
      const { origin, browser } = await setup(t, false);
      const page = await (await browser.newContext()).newPage();
      page.setDefaultTimeout(STEP_TIMEOUT_MS);
      const { state } = await openBridge(page, `${origin}/webmcp-bridge`);
      assert.equal(state, 'signed-out');
      assert.match((await page.locator('#bridge-status').textContent()) ?? '', /sign in on the dashboard/);
      assert.deepEqual(await listTools(page), []);
    },
  );

  it(
    'reports mcp-b, not native, when @mcp-b/global is in charge of a page with native WebMCP',
    { timeout: TEST_TIMEOUT_MS },
    async (t) => {
      const { f, origin, browser } = await setup(t, true);
      const context = await browser.newContext();
      await logIn(context, origin, f.keys.owner);
      // A page of the site's own that loads the bridge before /webmcp.js.
      const { page, registered } = await openToolPage(context, `${origin}/test/mcpb-page.html`);
      assert.deepEqual([...registered].sort(), await manifestNames(f, 'dashboard'));
      assert.equal(await moduleMode(page), 'mcp-b');
      // The bridge page on the same browser: its client reaches the tools over native WebMCP too.
      const bridge = await context.newPage();
      bridge.setDefaultTimeout(STEP_TIMEOUT_MS);
      assert.equal((await openBridge(bridge, `${origin}/webmcp-bridge`)).state, 'ready');
      assert.equal(await moduleMode(bridge), 'mcp-b');
      const quote = await callTool(bridge, 'webtest__quote', { sku: 'tee', quantity: 1 });
      assert.deepEqual(quote.structuredContent?.data, { quantity: 1, total_cents: 2000 });
    },
  );
});

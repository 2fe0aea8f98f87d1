/**
 * Spike: prove the headless-Chromium WebMCP harness (test/support/browser.ts) end to end, against a
 * tiny static page served from this test (test/spike/webmcp-fixture/tools.js registers the tools).
 *
 * Playwright's WebMCP API, as installed (playwright-core 1.65.1, `types/types.d.ts` `interface WebMCP`,
 * implementation `lib/coreBundle.js` "packages/injected/src/webMCP.ts"):
 *
 *   page.webmcp / frame.webmcp : WebMCP           (page.webmcp = main frame only)
 *   webmcp.tools({ timeout? }) : Promise<Array<{
 *       name: string; description: string; inputSchema?: Serializable;
 *       annotations?: { readOnly?: true; untrustedContent?: true; consequential?: true } }>>
 *     (annotations keep only the `true` hints, renamed from readOnlyHint / untrustedContentHint /
 *      consequentialHint; `title` is dropped; the object is absent when no hint is true)
 *   webmcp.callTool(name, input = {}, { timeout? }) : Promise<Serializable>
 *     (the JSON-parsed value `execute` returned; `{ isError: true }` results come back as is;
 *      throws `No WebMCP tool named "x". Available tools: …` for an unknown name, and rethrows the
 *      page's rejection when `execute` throws)
 *   timeout defaults to 0 (none) unless page.setDefaultTimeout / context.setDefaultTimeout is set.
 *   Both throw `WebMCP is not enabled. Launch the browser with the "--enable-features=WebMCP"
 *   argument.` unless a launch arg literally lists WebMCP in `--enable-features=`.
 *   Both run in Playwright's isolated "utility" world on Chromium: they reach the native
 *   `document.modelContext` but never a JavaScript polyfill (use the main-world helpers for that).
 *
 * Run: node --import tsx --test test/spike/webmcp-harness.test.ts
 */
import assert from 'node:assert/strict';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import {
  callToolInMainWorld,
  launchChromium,
  listToolsInMainWorld,
  serveStatic,
  skipUnlessChromium,
  type StaticServer,
} from '../support/browser.ts';

const FIXTURE_DIR = fileURLToPath(new URL('./webmcp-fixture/', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ARTIFACT_DIR = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));
const STEP_TIMEOUT_MS = 10_000;
const TEST_TIMEOUT_MS = 30_000;

const NATIVE_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>WebMCP spike (native)</title></head>
<body><h1>WebMCP spike</h1><script type="module" src="/tools.js"></script></body></html>`;

const POLYFILL_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>WebMCP spike (polyfill)</title>
<script src="/polyfill.js"></script></head>
<body><h1>WebMCP spike (polyfill)</h1><script type="module" src="/tools.js"></script></body></html>`;

const PLAIN_PAGE =
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>plain</title></head><body>plain</body></html>';

/**
 * Bundle `@mcp-b/webmcp-polyfill` for a classic <script>. The package ships ESM `dist/index.js`
 * (imports only its sibling `./schema.js`, no side effects) and a self-initialising IIFE
 * `dist/index.iife.js` (global `WebMCPPolyfill`); bundling the ESM entry the way project page code
 * would be bundled keeps the initialisation explicit.
 */
async function bundlePolyfill(): Promise<string> {
  const result = await build({
    stdin: {
      contents:
        "import { initializeWebMCPPolyfill } from '@mcp-b/webmcp-polyfill';\ninitializeWebMCPPolyfill();\n",
      resolveDir: REPO_ROOT,
      loader: 'js',
      sourcefile: 'webmcp-polyfill-entry.js',
    },
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'chrome120',
    write: false,
    logLevel: 'silent',
  });
  const [output] = result.outputFiles;
  assert.ok(output, 'esbuild produced no output');
  return output.text;
}

/** Open the fixture page and wait until every `registerTool()` promise resolved. */
async function openFixture(context: BrowserContext, url: string): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  await page.goto(url);
  const registered = await page.evaluate(
    () => (window as unknown as { __webmcpSpike: { ready: Promise<string[]> } }).__webmcpSpike.ready,
  );
  assert.deepEqual([...registered].sort(), ['always_fails', 'delete_draft', 'quote_price']);
  return page;
}

function unregisterInPage(page: Page, name: string): Promise<boolean> {
  return page.evaluate(
    (toolName) =>
      (window as unknown as { __webmcpSpike: { unregister(n: string): boolean } }).__webmcpSpike.unregister(
        toolName,
      ),
    name,
  );
}

function executeArgsInPage(
  page: Page,
): Promise<Array<{ tool: string; argCount: number; hasSignal: boolean }>> {
  return page.evaluate(
    () =>
      (
        window as unknown as {
          __webmcpSpike: { executeArgs: Array<{ tool: string; argCount: number; hasSignal: boolean }> };
        }
      ).__webmcpSpike.executeArgs,
  );
}

function toolchangeEventsInPage(page: Page): Promise<number> {
  return page.evaluate(
    () =>
      (window as unknown as { __webmcpSpike: { toolchangeEvents: number } }).__webmcpSpike.toolchangeEvents,
  );
}

/** Wait until the page saw more `toolchange` events than `before`. */
async function waitForToolchange(page: Page, before: number): Promise<void> {
  await page.waitForFunction(
    (count) =>
      (window as unknown as { __webmcpSpike: { toolchangeEvents: number } }).__webmcpSpike.toolchangeEvents >
      count,
    before,
  );
}

const skip = skipUnlessChromium();

describe('WebMCP harness: native document.modelContext (--enable-features=WebMCP)', { skip }, () => {
  let server: StaticServer;
  let browser: Browser;
  let context: BrowserContext;

  before(
    async () => {
      server = await serveStatic({ dir: FIXTURE_DIR, routes: { '/index.html': NATIVE_PAGE } });
      browser = await launchChromium({ webmcp: true });
      context = await browser.newContext();
    },
    { timeout: TEST_TIMEOUT_MS },
  );

  after(
    async () => {
      await browser?.close();
      await server?.close();
    },
    { timeout: TEST_TIMEOUT_MS },
  );

  it(
    'lists tools with schema and annotations, calls one, and forwards input to execute',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const page = await openFixture(context, server.url('/index.html'));
      const tools = await page.webmcp.tools({ timeout: STEP_TIMEOUT_MS });
      assert.deepEqual(
        tools.map((tool) => tool.name),
        ['always_fails', 'delete_draft', 'quote_price'],
      );

      const quote = tools.find((tool) => tool.name === 'quote_price');
      assert.equal(quote?.description, 'Price in cents for a quantity of one catalogue item.');
      assert.deepEqual(quote?.annotations, { readOnly: true });
      assert.deepEqual((quote?.inputSchema as { required?: string[] }).required, ['sku', 'quantity']);
      assert.deepEqual(tools.find((tool) => tool.name === 'delete_draft')?.annotations, {
        consequential: true,
      });
      assert.equal(tools.find((tool) => tool.name === 'always_fails')?.annotations, undefined);

      const result = await page.webmcp.callTool(
        'quote_price',
        { sku: 'tee', quantity: 3 },
        { timeout: STEP_TIMEOUT_MS },
      );
      assert.deepEqual(result, {
        content: [{ type: 'text', text: '3 x tee = 6000 cents' }],
        structuredContent: { sku: 'tee', quantity: 3, totalCents: 6000 },
      });

      // The native browser calls execute(input, { signal }).
      const [call] = await executeArgsInPage(page);
      assert.deepEqual(call, { tool: 'quote_price', argCount: 2, hasSignal: true });

      // No schema validation in the browser: the tool's own isError result comes back unchanged.
      const invalid = await page.webmcp.callTool(
        'quote_price',
        { sku: 'hat', quantity: 1 },
        { timeout: STEP_TIMEOUT_MS },
      );
      assert.deepEqual(invalid, { isError: true, content: [{ type: 'text', text: 'unknown sku: hat' }] });

      // The main-world helper (used for polyfill runs) sees the same native tools and results.
      const mainWorld = await listToolsInMainWorld(page);
      assert.equal(mainWorld.find((tool) => tool.name === 'quote_price')?.title, 'Quote a price');
      assert.deepEqual(await callToolInMainWorld(page, 'quote_price', { sku: 'mug', quantity: 2 }), {
        content: [{ type: 'text', text: '2 x mug = 2500 cents' }],
        structuredContent: { sku: 'mug', quantity: 2, totalCents: 2500 },
      });
      await page.close();
    },
  );

  it(
    'rejects a call whose execute throws, and an unknown tool name',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const page = await openFixture(context, server.url('/index.html'));
      // The page's own message is lost: the browser rejects with a generic UnknownError.
      await assert.rejects(
        page.webmcp.callTool('always_fails', {}, { timeout: STEP_TIMEOUT_MS }),
        /Tool was executed but the invocation failed/,
      );
      await assert.rejects(
        page.webmcp.callTool('no_such_tool', {}, { timeout: STEP_TIMEOUT_MS }),
        /No WebMCP tool named "no_such_tool"/,
      );
      await page.close();
    },
  );

  it('removes a tool when its registration signal is aborted', { timeout: TEST_TIMEOUT_MS }, async () => {
    const page = await openFixture(context, server.url('/index.html'));
    const eventsBefore = await toolchangeEventsInPage(page);
    assert.equal(await unregisterInPage(page, 'quote_price'), true);
    await waitForToolchange(page, eventsBefore);
    assert.deepEqual(
      (await page.webmcp.tools()).map((tool) => tool.name),
      ['always_fails', 'delete_draft'],
    );
    await assert.rejects(
      page.webmcp.callTool('quote_price', { sku: 'tee', quantity: 1 }),
      /No WebMCP tool named "quote_price"/,
    );
    await page.close();
  });

  it(
    'lets the human confirm or cancel an in-page dialog while the tool call is pending',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const page = await openFixture(context, server.url('/index.html'));

      const confirmed = page.webmcp.callTool(
        'delete_draft',
        { draftId: 'D-17' },
        { timeout: STEP_TIMEOUT_MS },
      );
      const dialog = page.locator('dialog#consent[open]');
      await dialog.waitFor();
      assert.equal(
        await page.locator('#consent-prompt').textContent(),
        'Type "delete D-17" to delete draft D-17.',
      );
      await page.locator('#consent-phrase').fill('delete D-17');

      await mkdir(ARTIFACT_DIR, { recursive: true });
      const screenshotPath = `${ARTIFACT_DIR}webmcp-consent-dialog.png`;
      await rm(screenshotPath, { force: true });
      await page.screenshot({ path: screenshotPath });
      const png = await readFile(screenshotPath);
      assert.deepEqual(
        [...png.subarray(0, 8)],
        [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
        'screenshot is a PNG',
      );

      await page.locator('#consent-confirm').click();
      assert.deepEqual(await confirmed, {
        content: [{ type: 'text', text: 'confirmed with: delete D-17' }],
        structuredContent: { draftId: 'D-17', phrase: 'delete D-17' },
      });
      await dialog.waitFor({ state: 'hidden' });

      const cancelled = page.webmcp.callTool(
        'delete_draft',
        { draftId: 'D-18' },
        { timeout: STEP_TIMEOUT_MS },
      );
      await dialog.waitFor();
      await page.locator('#consent-phrase').fill('delete D-18');
      await page.locator('#consent-cancel').click();
      assert.deepEqual(await cancelled, {
        isError: true,
        content: [{ type: 'text', text: 'declined by the user' }],
      });
      await page.close();
    },
  );
});

describe('WebMCP harness: @mcp-b/webmcp-polyfill with native WebMCP disabled', { skip }, () => {
  let server: StaticServer;
  let browser: Browser;
  let context: BrowserContext;

  before(
    async () => {
      const polyfill = await bundlePolyfill();
      server = await serveStatic({
        dir: FIXTURE_DIR,
        routes: { '/index.html': POLYFILL_PAGE, '/polyfill.js': polyfill, '/plain.html': PLAIN_PAGE },
      });
      browser = await launchChromium({ webmcp: false });
      context = await browser.newContext();
    },
    { timeout: TEST_TIMEOUT_MS },
  );

  after(
    async () => {
      await browser?.close();
      await server?.close();
    },
    { timeout: TEST_TIMEOUT_MS },
  );

  it('has no native modelContext without the polyfill', { timeout: TEST_TIMEOUT_MS }, async () => {
    const page = await context.newPage();
    await page.goto(server.url('/plain.html'));
    assert.equal(await page.evaluate(() => 'modelContext' in document), false);
    await page.close();
  });

  it('lists and calls the polyfilled tools from the main world', { timeout: TEST_TIMEOUT_MS }, async () => {
    const page = await openFixture(context, server.url('/index.html'));
    assert.equal(
      await page.evaluate(
        () =>
          (document as unknown as { modelContext: { __isWebMCPPolyfill?: boolean } }).modelContext
            .__isWebMCPPolyfill,
      ),
      true,
    );

    const tools = await listToolsInMainWorld(page);
    assert.deepEqual(
      tools.map((tool) => tool.name),
      ['always_fails', 'delete_draft', 'quote_price'],
    );
    const quote = tools.find((tool) => tool.name === 'quote_price');
    assert.equal(quote?.origin, server.origin);
    assert.equal(quote?.annotations?.readOnlyHint, true);
    assert.deepEqual((quote?.inputSchema as { required?: string[] }).required, ['sku', 'quantity']);

    // The polyfill's executeTool takes a JSON string (native takes an object); the helper retries.
    assert.deepEqual(await callToolInMainWorld(page, 'quote_price', { sku: 'tee', quantity: 2 }), {
      content: [{ type: 'text', text: '2 x tee = 4000 cents' }],
      structuredContent: { sku: 'tee', quantity: 2, totalCents: 4000 },
    });
    // The polyfill calls execute(input) with no second argument (no per-call signal).
    assert.deepEqual(await executeArgsInPage(page), [{ tool: 'quote_price', argCount: 1, hasSignal: false }]);
    await assert.rejects(callToolInMainWorld(page, 'always_fails'), /invocation failed/);

    // Playwright's page.webmcp cannot be used here: it refuses without the launch flag.
    await assert.rejects(page.webmcp.tools(), /WebMCP is not enabled/);
    await page.close();
  });

  it('drives the consent dialog through the polyfill too', { timeout: TEST_TIMEOUT_MS }, async () => {
    const page = await openFixture(context, server.url('/index.html'));
    const confirmed = callToolInMainWorld(page, 'delete_draft', { draftId: 'P-1' });
    await page.locator('dialog#consent[open] #consent-phrase').fill('delete P-1');
    await page.locator('#consent-confirm').click();
    assert.deepEqual(await confirmed, {
      content: [{ type: 'text', text: 'confirmed with: delete P-1' }],
      structuredContent: { draftId: 'P-1', phrase: 'delete P-1' },
    });

    const cancelled = callToolInMainWorld(page, 'delete_draft', { draftId: 'P-2' });
    await page.locator('dialog#consent[open] #consent-cancel').click();
    assert.deepEqual(await cancelled, {
      isError: true,
      content: [{ type: 'text', text: 'declined by the user' }],
    });
    await page.close();
  });

  it(
    'removes a polyfilled tool when its registration signal is aborted',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const page = await openFixture(context, server.url('/index.html'));
      const eventsBefore = await toolchangeEventsInPage(page);
      assert.equal(await unregisterInPage(page, 'delete_draft'), true);
      await waitForToolchange(page, eventsBefore);
      assert.deepEqual(
        (await listToolsInMainWorld(page)).map((tool) => tool.name),
        ['always_fails', 'quote_price'],
      );
      await assert.rejects(
        callToolInMainWorld(page, 'delete_draft', { draftId: 'P-3' }),
        /No WebMCP tool named "delete_draft"/,
      );
      await page.close();
    },
  );
});

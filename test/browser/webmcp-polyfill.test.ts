/**
 * /webmcp.js in headless Chromium with native WebMCP switched off: the module installs the bundled
 * @mcp-b/webmcp-polyfill and registers and executes the same verbs through it. Playwright's
 * `page.webmcp` cannot see a polyfill, so the test lists and calls tools from the page's main
 * world (test/support/browser.ts).
 *
 * Run: node --import tsx --test test/browser/webmcp-polyfill.test.ts
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { Browser } from 'playwright-core';
import type { WebmcpManifest } from '../../src/transports/webmcp/index.ts';
import {
  callToolInMainWorld,
  launchChromium,
  listToolsInMainWorld,
  skipUnlessChromium,
} from '../support/browser.ts';
import { listenLoopback, webmcpFixture, type WebmcpFixture } from '../transports/webmcp/fixture.ts';
import {
  SURFACE_PAGES,
  TEST_TIMEOUT_MS,
  logIn,
  moduleMode,
  openToolPage,
  refreshTools,
} from './webmcp-pages.ts';

async function manifestNames(f: WebmcpFixture, surface: string): Promise<string[]> {
  const res = await f.app.inject({ method: 'GET', url: `/api/v1/webmcp/manifest?surface=${surface}` });
  return (res.json() as WebmcpManifest).tools.map((tool) => tool.name).sort();
}

async function setup(t: TestContext): Promise<{ f: WebmcpFixture; origin: string; browser: Browser }> {
  const f = await webmcpFixture(t, {}, SURFACE_PAGES);
  const origin = await listenLoopback(f.app);
  const browser = await launchChromium({ webmcp: false });
  t.after(() => browser.close());
  return { f, origin, browser };
}

describe(
  'WebMCP module through @mcp-b/webmcp-polyfill (native WebMCP off)',
  { skip: skipUnlessChromium() },
  () => {
    it(
      'installs the polyfill and registers exactly the surface verbs with their hints',
      { timeout: TEST_TIMEOUT_MS },
      async (t) => {
        const { f, origin, browser } = await setup(t);
        const context = await browser.newContext();
        await logIn(context, origin, f.keys.owner);
        const { page, registered } = await openToolPage(context, `${origin}/test/dashboard.html`);
        assert.equal(await moduleMode(page), 'polyfill');
        assert.equal(
          await page.evaluate(
            () =>
              (document as unknown as { modelContext: { __isWebMCPPolyfill?: boolean } }).modelContext
                .__isWebMCPPolyfill,
          ),
          true,
        );
        const expected = await manifestNames(f, 'dashboard');
        assert.deepEqual([...registered].sort(), expected);
        const tools = await listToolsInMainWorld(page);
        assert.deepEqual(
          tools.map((tool) => tool.name),
          expected,
        );
        const quote = tools.find((tool) => tool.name === 'webtest__quote')!;
        assert.equal(quote.title, 'Quote a price');
        assert.equal(quote.origin, origin);
        assert.equal(quote.annotations?.readOnlyHint, true);
        // The polyfill drops consequentialHint (WebMCP-org/npm-packages#341); readOnlyHint stays false.
        assert.equal(
          tools.find((tool) => tool.name === 'webtest__charge')!.annotations?.readOnlyHint ?? false,
          false,
        );
      },
    );

    it(
      'executes a read verb and a typed-phrase verb with the human typing the phrase',
      { timeout: TEST_TIMEOUT_MS },
      async (t) => {
        const { f, origin, browser } = await setup(t);
        const context = await browser.newContext();
        await logIn(context, origin, f.keys.admin);
        const { page } = await openToolPage(context, `${origin}/test/dashboard.html`);

        assert.deepEqual(await callToolInMainWorld(page, 'webtest__quote', { sku: 'mug', quantity: 4 }), {
          content: [
            {
              type: 'text',
              text: JSON.stringify({
                entity_id: 'mug',
                entity_type: 'sku',
                data: { quantity: 4, total_cents: 5000 },
              }),
            },
          ],
          structuredContent: {
            entity_id: 'mug',
            entity_type: 'sku',
            data: { quantity: 4, total_cents: 5000 },
          },
        });

        const charge = callToolInMainWorld(page, 'webtest__charge', { invoice_id: 12, amount_cents: 250 });
        await page.locator('dialog#solid-consent[open]').waitFor();
        assert.equal(
          await page.locator('#solid-consent-phrase').textContent(),
          'CHARGE $2.50 to invoice #12',
        );
        await page.getByLabel('Confirmation phrase').fill('CHARGE $2.50 to invoice #12');
        await page.getByRole('button', { name: 'Confirm with phrase' }).click();
        const result = (await charge) as { structuredContent: Record<string, unknown> };
        assert.equal(result.structuredContent.charged_cents, 250);
        assert.deepEqual(
          (await f.effects()).map((e) => e.detail),
          ['12:250'],
        );

        const declined = callToolInMainWorld(page, 'webtest__charge', { invoice_id: 13, amount_cents: 100 });
        await page.locator('dialog#solid-consent[open]').waitFor();
        await page.getByRole('button', { name: 'Cancel' }).click();
        assert.deepEqual(
          ((await declined) as { isError: boolean; structuredContent: { error: { reason: string } } })
            .structuredContent.error.reason,
          'declined',
        );
        assert.equal((await f.effects()).length, 1);
      },
    );

    it(
      'withdraws a tool from the polyfill when it leaves the surface',
      { timeout: TEST_TIMEOUT_MS },
      async (t) => {
        const { f, origin, browser } = await setup(t);
        const context = await browser.newContext();
        await logIn(context, origin, f.keys.owner);
        const { page } = await openToolPage(context, `${origin}/test/portal.html`);
        assert.ok((await listToolsInMainWorld(page)).some((tool) => tool.name === 'webtest__quote'));
        f.rt.registry.unregister('webtest.quote');
        await refreshTools(page);
        const names = (await listToolsInMainWorld(page)).map((tool) => tool.name);
        assert.deepEqual(names, await manifestNames(f, 'portal'));
        await assert.rejects(
          callToolInMainWorld(page, 'webtest__quote', { sku: 'mug', quantity: 1 }),
          /No WebMCP tool named "webtest__quote"/,
        );
      },
    );
  },
);

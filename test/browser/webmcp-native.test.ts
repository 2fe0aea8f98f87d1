/**
 * /webmcp.js in headless Chromium with native WebMCP (`--enable-features=WebMCP`), driven through
 * Playwright's `page.webmcp`: the page registers exactly its surface's verbs with their hints,
 * a read verb runs, a typed-phrase verb runs after the human types the phrase into the in-page
 * dialog (a wrong phrase is refused and the dialog asks again), declining aborts, and tools are
 * withdrawn and added when the manifest changes.
 *
 * Real server: createHttpServer + the WebMCP plugin on 127.0.0.1:<ephemeral>, test verbs from
 * test/transports/webmcp/fixture.ts. Run: node --import tsx --test test/browser/webmcp-native.test.ts
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { Browser } from 'playwright-core';
import { defineVerb } from '../../src/runtime/verb.ts';
import type { WebmcpManifest } from '../../src/transports/webmcp/index.ts';
import { launchChromium, skipUnlessChromium } from '../support/browser.ts';
import { listenLoopback, webmcpFixture, type WebmcpFixture } from '../transports/webmcp/fixture.ts';
import {
  SURFACE_PAGES,
  STEP_TIMEOUT_MS,
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
  const browser = await launchChromium({ webmcp: true });
  t.after(() => browser.close());
  return { f, origin, browser };
}

describe('WebMCP module with native document.modelContext', { skip: skipUnlessChromium() }, () => {
  it(
    'registers exactly the dashboard surface verbs with hints, and runs a read verb',
    { timeout: TEST_TIMEOUT_MS },
    async (t) => {
      const { f, origin, browser } = await setup(t);
      const context = await browser.newContext();
      await logIn(context, origin, f.keys.owner);
      const { page, registered } = await openToolPage(context, `${origin}/test/dashboard.html`);
      assert.equal(await moduleMode(page), 'native');
      const expected = await manifestNames(f, 'dashboard');
      assert.deepEqual([...registered].sort(), expected);

      const tools = await page.webmcp.tools({ timeout: STEP_TIMEOUT_MS });
      assert.deepEqual(tools.map((tool) => tool.name).sort(), expected);
      const byName = new Map(tools.map((tool) => [tool.name, tool]));
      assert.deepEqual(byName.get('webtest__quote')?.annotations, { readOnly: true });
      assert.deepEqual(byName.get('webtest__charge')?.annotations, { consequential: true });
      assert.equal(
        byName.get('webtest__charge')?.description,
        'Charge an amount in cents to an invoice (test verb; typed phrase).',
      );
      assert.deepEqual((byName.get('webtest__quote')?.inputSchema as { required: string[] }).required, [
        'sku',
        'quantity',
      ]);
      assert.equal(byName.has('webtest__http_only'), false);

      const result = await page.webmcp.callTool(
        'webtest__quote',
        { sku: 'tee', quantity: 3 },
        { timeout: STEP_TIMEOUT_MS },
      );
      assert.deepEqual(result, {
        content: [
          {
            type: 'text',
            text: JSON.stringify({
              entity_id: 'tee',
              entity_type: 'sku',
              data: { quantity: 3, total_cents: 6000 },
            }),
          },
        ],
        structuredContent: { entity_id: 'tee', entity_type: 'sku', data: { quantity: 3, total_cents: 6000 } },
      });
      // A refusal comes back as an isError result carrying the envelope, not as an opaque throw.
      const invalid = (await page.webmcp.callTool(
        'webtest__quote',
        { sku: 'hat', quantity: 1 },
        { timeout: STEP_TIMEOUT_MS },
      )) as {
        isError: boolean;
        content: Array<{ text: string }>;
        structuredContent: { error: { reason: string; path: string } };
      };
      assert.equal(invalid.isError, true);
      assert.equal(invalid.structuredContent.error.reason, 'invalid_input');
      assert.equal(invalid.structuredContent.error.path, '/sku');
      assert.match(invalid.content[0]!.text, /^invalid_input: /);
    },
  );

  it(
    'runs a typed-phrase verb once the human types the exact phrase into the dialog',
    { timeout: TEST_TIMEOUT_MS },
    async (t) => {
      const { f, origin, browser } = await setup(t);
      const context = await browser.newContext();
      await logIn(context, origin, f.keys.admin);
      const { page } = await openToolPage(context, `${origin}/test/dashboard.html`);

      const call = page.webmcp.callTool(
        'webtest__charge',
        { invoice_id: 4242, amount_cents: 5000 },
        { timeout: STEP_TIMEOUT_MS * 3 },
      );
      const dialog = page.locator('dialog#solid-consent[open]');
      await dialog.waitFor();
      assert.equal(await page.locator('#solid-consent-title').textContent(), 'Confirm: Charge an invoice');
      assert.equal(
        await page.locator('#solid-consent-summary').textContent(),
        'Charge $50.00 to invoice #4242.',
      );
      assert.equal(
        await page.locator('#solid-consent-phrase').textContent(),
        'CHARGE $50.00 to invoice #4242',
      );
      assert.deepEqual(await f.effects(), [], 'nothing runs while the human reads the dialog');

      // A wrong phrase: the server refuses (phrase_mismatch) and the dialog asks again with the error.
      await page.getByLabel('Confirmation phrase').fill('CHARGE $50 to invoice #4242');
      await page.locator('#solid-consent-confirm').click();
      await page
        .locator('dialog#solid-consent[open] #solid-consent-error')
        .filter({ hasText: 'does not match' })
        .waitFor();
      await page.getByLabel('Confirmation phrase').fill('CHARGE $50.00 to invoice #4242');
      await page.locator('#solid-consent-confirm').click();

      const result = (await call) as { structuredContent: Record<string, unknown>; isError?: boolean };
      assert.equal(result.isError, undefined);
      assert.equal(result.structuredContent.charged_cents, 5000);
      assert.equal(result.structuredContent.status, 'completed');
      assert.equal(typeof result.structuredContent.audit_id, 'number');
      await dialog.waitFor({ state: 'detached' });
      assert.deepEqual(
        (await f.effects()).map((e) => e.detail),
        ['4242:5000'],
      );
      const rows = await f.rt.store.read((q) =>
        q.all<Record<string, unknown>>(
          `SELECT status, reason FROM audit_log WHERE action_type = 'webtest.charge' ORDER BY audit_id`,
        ),
      );
      assert.deepEqual(rows, [
        { status: 'pending', reason: 'dispatch_pending' },
        { status: 'denied', reason: 'phrase_mismatch' },
        { status: 'completed', reason: null },
      ]);
    },
  );

  it(
    'returns a declined error and runs nothing when the human cancels, by button or Escape',
    { timeout: TEST_TIMEOUT_MS },
    async (t) => {
      const { f, origin, browser } = await setup(t);
      const context = await browser.newContext();
      await logIn(context, origin, f.keys.employee);
      const { page } = await openToolPage(context, `${origin}/test/dashboard.html`);

      const cancelled = page.webmcp.callTool(
        'webtest__note_add',
        { text: 'never' },
        { timeout: STEP_TIMEOUT_MS * 2 },
      );
      await page.locator('dialog#solid-consent[open]').waitFor();
      assert.equal(
        await page.locator('#solid-consent-input').count(),
        0,
        'a confirmation gate asks no phrase',
      );
      await page.getByRole('button', { name: 'Cancel' }).click();
      const result = (await cancelled) as {
        isError: boolean;
        structuredContent: { error: { reason: string } };
      };
      assert.equal(result.isError, true);
      assert.equal(result.structuredContent.error.reason, 'declined');

      const escaped = page.webmcp.callTool(
        'webtest__note_add',
        { text: 'never either' },
        { timeout: STEP_TIMEOUT_MS * 2 },
      );
      await page.locator('dialog#solid-consent[open]').waitFor();
      await page.keyboard.press('Escape');
      assert.equal(
        ((await escaped) as { structuredContent: { error: { reason: string } } }).structuredContent.error
          .reason,
        'declined',
      );
      assert.deepEqual(await f.effects(), []);

      // Confirming the same kind of call does run it (the gate is a click for WRITE_REVERSIBLE).
      const confirmed = page.webmcp.callTool(
        'webtest__note_add',
        { text: 'yes' },
        { timeout: STEP_TIMEOUT_MS * 2 },
      );
      await page.locator('dialog#solid-consent[open]').waitFor();
      await page.getByRole('button', { name: 'Confirm' }).click();
      assert.equal(
        ((await confirmed) as { structuredContent: { text: string } }).structuredContent.text,
        'yes',
      );
      assert.deepEqual(
        (await f.effects()).map((e) => e.detail),
        ['yes'],
      );
    },
  );

  it('withdraws and adds tools when the manifest changes', { timeout: TEST_TIMEOUT_MS }, async (t) => {
    const { f, origin, browser } = await setup(t);
    const context = await browser.newContext();
    await logIn(context, origin, f.keys.owner);
    const { page } = await openToolPage(context, `${origin}/test/portal.html`);
    assert.deepEqual(
      (await page.webmcp.tools()).map((tool) => tool.name).sort(),
      await manifestNames(f, 'portal'),
    );

    f.rt.register(
      defineVerb({
        name: 'webtest.portal_late',
        description: 'Arrives on the portal after the page loaded.',
        shape: 'aggregate',
        category: 'webtest',
        input: { type: 'object', properties: {}, additionalProperties: false },
        webmcp_surfaces: ['portal'],
        async handler() {
          return { entity_id: 'late', data: {} };
        },
      }),
    );
    f.rt.registry.unregister('webtest.note_add');
    const names = await refreshTools(page);
    assert.ok(names.includes('webtest__portal_late'));
    assert.equal(names.includes('webtest__note_add'), false);
    const tools = (await page.webmcp.tools()).map((tool) => tool.name);
    assert.deepEqual(tools.sort(), await manifestNames(f, 'portal'));
    await assert.rejects(
      page.webmcp.callTool('webtest__note_add', { text: 'x' }),
      /No WebMCP tool named "webtest__note_add"/,
    );
    assert.deepEqual(await page.webmcp.callTool('webtest__portal_late', {}), {
      content: [{ type: 'text', text: JSON.stringify({ entity_id: 'late', data: {} }) }],
      structuredContent: { entity_id: 'late', data: {} },
    });
  });

  it(
    'runs public-surface reads without a session, and answers session_invalid elsewhere',
    { timeout: TEST_TIMEOUT_MS },
    async (t) => {
      const { f, origin, browser } = await setup(t);
      const context = await browser.newContext();
      const { page } = await openToolPage(context, `${origin}/test/public.html`);
      assert.deepEqual(
        (await page.webmcp.tools()).map((tool) => tool.name).sort(),
        await manifestNames(f, 'public'),
      );
      const result = (await page.webmcp.callTool('webtest__quote', { sku: 'mug', quantity: 2 })) as {
        structuredContent: { data: { total_cents: number } };
      };
      assert.equal(result.structuredContent.data.total_cents, 2500);

      const { page: dashboard } = await openToolPage(context, `${origin}/test/dashboard.html`);
      const refused = (await dashboard.webmcp.callTool('webtest__quote', { sku: 'mug', quantity: 1 })) as {
        isError: boolean;
        structuredContent: { error: { reason: string } };
      };
      assert.equal(refused.isError, true);
      assert.equal(refused.structuredContent.error.reason, 'session_invalid');
    },
  );
});

/**
 * The dashboard in headless Chromium (native WebMCP on): log in with an API key, see the trail
 * and filter it, approve a pending typed-phrase dispatch so the agent's nonce alone completes it,
 * open a receipt and revert it through the consent dialog, see the catalogue and the reputation
 * panel (or its degraded message), check the page's own WebMCP tools, save screenshots to
 * test-artifacts/dashboard.png (viewport) and dashboard-full.png, and log out (tools withdrawn).
 *
 * Run: node --import tsx --test test/browser/dashboard.test.ts
 */
import assert from 'node:assert/strict';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Envelope } from '../../src/spec/types.ts';
import { launchChromium, skipUnlessChromium } from '../support/browser.ts';
import { listenLoopback, webmcpFixture } from '../transports/webmcp/fixture.ts';
import { STEP_TIMEOUT_MS, TEST_TIMEOUT_MS } from './webmcp-pages.ts';

const ARTIFACT_DIR = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

describe('dashboard', { skip: skipUnlessChromium() }, () => {
  it(
    'logs in, shows the trail, approves a pending dispatch, reverts a receipt, logs out',
    { timeout: TEST_TIMEOUT_MS },
    async (t) => {
      const f = await webmcpFixture(t);
      const origin = await listenLoopback(f.app);
      const browser = await launchChromium({ webmcp: true });
      t.after(() => browser.close());

      // Activity before the human opens the dashboard: an agent's completed note, a denied call,
      // and a typed-phrase charge waiting for approval.
      const agent = { surface: 'webmcp' as const, webmcpSurface: 'dashboard' as const };
      const employee = { ...agent, principal: f.principal('employee') };
      const notePending = await f.rt.dispatch(employee, 'webtest.note_add', { text: 'ship the order' });
      const note = await f.rt.dispatch(
        employee,
        'webtest.note_add',
        { text: 'ship the order' },
        { confirm: true, nonce: notePending.consent!.nonce },
      );
      assert.equal(note.ok, true);
      const denied = await f.rt.dispatch(
        { ...agent, principal: f.principal('read_only') },
        'webtest.note_add',
        { text: 'nope' },
      );
      assert.equal(denied.error!.reason, 'role_denied');
      const chargeArgs = { invoice_id: 314, amount_cents: 15900 };
      const admin = { ...agent, principal: f.principal('admin') };
      const charge = await f.rt.dispatch(admin, 'webtest.charge', chargeArgs);
      const approvalId = charge.consent!.approval_id!;

      const context = await browser.newContext({ viewport: { width: 1280, height: 1600 } });
      const page = await context.newPage();
      page.setDefaultTimeout(STEP_TIMEOUT_MS);
      const pageErrors: string[] = [];
      page.on('pageerror', (err) => pageErrors.push(String(err)));
      const cspViolations: string[] = [];
      page.on('console', (msg) => {
        if (/Content Security Policy/i.test(msg.text())) cspViolations.push(msg.text());
      });

      await t.test('logs in with an API key', async () => {
        await page.goto(`${origin}/`);
        await page.locator('body[data-state="login"]').waitFor();
        await page.getByLabel('API key').fill('sk_solid_000000000000_wrongwrongwrongwrong');
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.locator('#login-error').filter({ hasText: 'auth_invalid' }).waitFor();
        await page.getByLabel('API key').fill(f.keys.owner);
        await page.getByLabel('API key').press('Enter');
        await page.locator('body[data-state="ready"]').waitFor();
        assert.match(
          (await page.locator('#whoami').textContent()) ?? '',
          /user 1 \(owner\) · Main Co \(professional\)/,
        );
        assert.equal(await page.getByLabel('API key').isVisible(), false);
      });

      await t.test('shows the trail and filters it', async () => {
        const noteRow = page.locator(`#trail-table tr[data-audit-id="${note.audit_id}"]`);
        await noteRow.waitFor();
        assert.equal(await noteRow.getAttribute('data-status'), 'completed');
        assert.match((await noteRow.textContent()) ?? '', /webtest\.note_add/);
        await page
          .locator(`#trail-table tr[data-audit-id="${charge.audit_id}"][data-status="pending"]`)
          .waitFor();
        await page.getByLabel('Status').selectOption('denied');
        await page.getByRole('button', { name: 'Apply filters' }).click();
        await page
          .locator(`#trail-table tr[data-audit-id="${note.audit_id}"]`)
          .waitFor({ state: 'detached' });
        const statuses = await page
          .locator('#trail-table tbody tr')
          .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-status')));
        assert.ok(statuses.length >= 1);
        assert.deepEqual([...new Set(statuses)], ['denied']);
        assert.match((await page.locator('#trail-table tbody').textContent()) ?? '', /role_denied/);
        await page.getByRole('button', { name: 'Clear' }).click();
        await noteRow.waitFor();
      });

      const approvalsSkip =
        f.rt.registry.get('approvals.approve') === undefined
          ? 'approvals.list/approve are not registered yet'
          : undefined;
      await t.test('approves a pending dispatch by typing its phrase', { skip: approvalsSkip }, async () => {
        const card = page.locator(`li[data-approval-id="${approvalId}"]`);
        await card.waitFor();
        assert.equal(await card.locator('code.phrase').textContent(), 'CHARGE $159.00 to invoice #314');
        await card.getByLabel('Type the phrase to approve').fill('CHARGE $159.00 to invoice 314');
        await card.getByRole('button', { name: 'Approve' }).click();
        await card.locator('[role="alert"]').filter({ hasText: 'phrase_mismatch' }).waitFor();
        await card.getByLabel('Type the phrase to approve').fill('CHARGE $159.00 to invoice #314');
        await card.getByRole('button', { name: 'Approve' }).click();
        await page
          .locator('#approvals-decision')
          .filter({ hasText: `Approved webtest.charge (${approvalId})` })
          .waitFor();
        await card.waitFor({ state: 'detached' });
        // The agent now completes its call with the nonce alone.
        const done: Envelope = await f.rt.dispatch(admin, 'webtest.charge', chargeArgs, {
          confirm: true,
          nonce: charge.consent!.nonce,
        });
        assert.equal(done.ok, true, JSON.stringify(done.error));
        const row = await f.rt.store.read((q) =>
          q.get<Record<string, unknown>>('SELECT approved_by FROM audit_log WHERE audit_id = ?', [
            done.audit_id,
          ]),
        );
        assert.equal(row?.approved_by, 1);
      });

      const revertSkip =
        f.rt.registry.get('audit.revert') === undefined ? 'audit.revert is not registered yet' : undefined;
      await t.test(
        'opens a receipt and reverts it through the consent dialog',
        { skip: revertSkip },
        async () => {
          await page.locator(`button[data-audit-id="${note.audit_id}"]`).click();
          await page.locator('#receipt').waitFor();
          assert.equal(
            await page.locator('#receipt-title').textContent(),
            `Receipt #${note.audit_id}: webtest.note_add`,
          );
          await page.getByRole('button', { name: 'Revert this action' }).click();
          await page.locator('dialog#solid-consent[open]').waitFor();
          assert.match(
            (await page.locator('#solid-consent-summary').textContent()) ?? '',
            /webtest\.note_add|note/i,
          );
          // Keyboard: focus Confirm and press Enter.
          await page.locator('#solid-consent-confirm').focus();
          await page.keyboard.press('Enter');
          await page.locator('#receipt-status').filter({ hasText: 'Reverted' }).waitFor();
          assert.deepEqual(
            (await f.effects()).map((e) => e.kind),
            approvalsSkip === undefined ? ['charge'] : [],
            'the note is gone; the approved charge stays',
          );
          await page.locator('#trail-table tbody tr', { hasText: 'audit.revert' }).first().waitFor();
        },
      );

      await t.test(
        'shows the catalogue, the reputation panel and registers the dashboard tools',
        async () => {
          await page.locator('section[data-category="webtest"] tr[data-verb="webtest.charge"]').waitFor();
          if (f.rt.registry.get('verbs.reputation') === undefined) {
            assert.match((await page.locator('#reputation-status').textContent()) ?? '', /not available/);
          } else {
            await page.locator('#reputation-chart svg').waitFor();
          }
          assert.match(
            (await page.locator('#webmcp-status').textContent()) ?? '',
            /tools? registered for agents \(native\)/,
          );
          const tools = (await page.webmcp.tools()).map((tool) => tool.name);
          assert.ok(tools.includes('audit__trail'));
          assert.ok(tools.includes('webtest__charge'));
          assert.equal(tools.includes('approvals__approve'), false, 'human-only verbs are not agent tools');
        },
      );

      await t.test('saves screenshots of the dashboard', async () => {
        await mkdir(ARTIFACT_DIR, { recursive: true });
        await page.evaluate(() => window.scrollTo(0, 0));
        for (const [name, fullPage] of [
          ['dashboard.png', false],
          ['dashboard-full.png', true],
        ] as const) {
          const path = `${ARTIFACT_DIR}${name}`;
          await rm(path, { force: true });
          await page.screenshot({ path, fullPage });
          const png = await readFile(path);
          assert.deepEqual(
            [...png.subarray(0, 8)],
            [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
            `${name} is a PNG`,
          );
        }
      });

      await t.test('logs out and withdraws the page tools', async () => {
        await page.getByRole('button', { name: 'Log out' }).click();
        await page.locator('body[data-state="login"]').waitFor();
        assert.equal(await page.locator('#login-error').textContent(), 'You are signed out.');
        assert.deepEqual(await page.webmcp.tools(), []);
        const rows = await f.rt.store.read((q) => q.all('SELECT session_hash FROM web_sessions'));
        assert.equal(rows.length, 0);
        await page.reload();
        await page.locator('body[data-state="login"]').waitFor();
      });

      assert.deepEqual(pageErrors, []);
      assert.deepEqual(cspViolations, []);
    },
  );

  it(
    'tells a read_only user that the approval queue needs an admin',
    { timeout: TEST_TIMEOUT_MS },
    async (t) => {
      const f = await webmcpFixture(t);
      const origin = await listenLoopback(f.app);
      const browser = await launchChromium({ webmcp: false });
      t.after(() => browser.close());
      const page = await (await browser.newContext()).newPage();
      page.setDefaultTimeout(STEP_TIMEOUT_MS);
      await page.goto(`${origin}/`);
      await page.getByLabel('API key').fill(f.keys.read_only);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator('body[data-state="ready"]').waitFor();
      assert.match(
        (await page.locator('#approvals-status').textContent()) ?? '',
        /read_only.*cannot see the approval queue/,
      );
      assert.match((await page.locator('#webmcp-status').textContent()) ?? '', /\(polyfill\)/);
    },
  );
});

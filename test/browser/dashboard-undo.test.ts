/**
 * The owner's undo and money words in headless Chromium, on the seeded demo business (issue 32
 * item 4): Activity rows name the customer, the object and the amount, one row per action; the
 * undo dialog of a contact change says what changed, before → after; a charge's receipt offers its
 * refund as one gated action — the owner types the refund's phrase in the same consent dialog and
 * the money goes back; the net of the business day is named in the tenant's time zone. Activity
 * and the receipt view have no horizontal overflow and no serious axe-core finding at 360, 390,
 * 768 and 1440 px; screenshots at 390 and 1440 px go to test-artifacts/dashboard-undo/.
 *
 * Run: node --import tsx --test test/browser/dashboard-undo.test.ts
 */
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import type { Envelope } from '../../src/spec/types.ts';
import { createHttpServer } from '../../src/transports/http/server.ts';
import { createWebmcpPlugin } from '../../src/transports/webmcp/index.ts';
import { signInHumanForTest } from '../../src/testing.ts';
import { CSRF_COOKIE, SESSION_COOKIE } from '../../src/identity/session-store.ts';
import { launchChromium, skipUnlessChromium } from '../support/browser.ts';
import { openDemoRuntime } from '../support/demo.ts';
import { listenLoopback } from '../transports/webmcp/fixture.ts';
import { STEP_TIMEOUT_MS } from './webmcp-pages.ts';

const ARTIFACT_DIR = fileURLToPath(new URL('../../test-artifacts/dashboard-undo/', import.meta.url));
const TIMEOUT_MS = 240_000;
const WIDTHS = [360, 390, 768, 1440] as const;

const require = createRequire(import.meta.url);

/** Serious or critical axe-core findings on the page (WCAG 2 A/AA rules). */
async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(`${await readFile(require.resolve('axe-core/axe.min.js'), 'utf8')};0`);
  const found = await page.evaluate(async () => {
    const a = (
      window as unknown as {
        axe: {
          run(
            ctx: Document,
            opts: unknown,
          ): Promise<{
            violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
          }>;
        };
      }
    ).axe;
    const r = await a.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa'] } });
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      where: v.nodes.map((n) => n.target.join(' ')),
    }));
  });
  return found
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.where.slice(0, 3).join(', ')}`);
}

function overflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

function ok(env: Envelope): Envelope {
  assert.equal(env.ok, true, `${env.verb}: ${JSON.stringify(env.error)}`);
  return env;
}

describe('dashboard undo and refund (demo business)', { skip: skipUnlessChromium() }, () => {
  it(
    'names customers, shows before → after, refunds a charge by typed phrase',
    { timeout: TIMEOUT_MS },
    async (t) => {
      const d = await openDemoRuntime(t);
      const app = createHttpServer(d.rt, { logger: false, plugins: [createWebmcpPlugin()] });
      await app.ready();
      t.after(async () => {
        app.server.closeAllConnections();
        await app.close();
      });
      const origin = await listenLoopback(app);
      const browser = await launchChromium({ webmcp: false });
      t.after(() => browser.close());

      // The business is in Berlin: its day, its net, its times.
      const settings = (await d.rt.tenants.get(d.companyId))!.settings;
      await d.rt.store.write((tx) =>
        tx.run('UPDATE tenants SET settings = ? WHERE company_id = ?', [
          JSON.stringify({ ...settings, time_zone: 'Europe/Berlin' }),
          d.companyId,
        ]),
      );
      d.rt.tenants.invalidate();
      const customer = await d.rt.store.read((q) =>
        q.get<{ name: string; phone: string | null }>('SELECT name, phone FROM contacts WHERE id = ?', [
          d.fixtures.customer_id,
        ]),
      );
      const name = customer!.name;
      const inv = d.fixtures.open_invoice;
      const charge = ok(
        await d.commit('admin', 'charge_invoice', { invoice_number: inv.number, amount_cents: 4200 }),
      );
      const chargeRef = (charge.result as { charge_ref: string }).charge_ref;
      const update = ok(
        await d.commit('employee', 'crm_contact_update', {
          contact_id: d.fixtures.customer_id,
          phone: '+1 555 0199',
        }),
      );

      const s = await signInHumanForTest(d.rt, {
        company_id: d.companyId,
        user_id: d.fixtures.owner_user_id,
        role: 'owner',
        name: 'The owner',
      });
      const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
      await context.addCookies([
        { name: SESSION_COOKIE, value: s.token, url: origin },
        { name: CSRF_COOKIE, value: s.csrfToken, url: origin },
      ]);
      const page = await context.newPage();
      page.setDefaultTimeout(STEP_TIMEOUT_MS);
      const pageErrors: string[] = [];
      page.on('pageerror', (err) => pageErrors.push(String(err)));
      await page.goto(`${origin}/`);
      await page.locator('body[data-state="ready"]').waitFor();
      await mkdir(ARTIFACT_DIR, { recursive: true });

      async function show(hash: string, view: string): Promise<void> {
        await page.evaluate((h) => {
          location.hash = h;
        }, hash);
        await page.locator(`body[data-view="${view}"]`).waitFor();
        await page.waitForLoadState('networkidle');
        await page.waitForFunction(
          (v) => document.querySelector(`#view-${v} [aria-busy="true"]`) === null,
          view,
        );
      }

      /** axe and overflow at every width; screenshots at 390 and 1440 px. */
      async function checkWidths(view: string, shot: string): Promise<void> {
        for (const width of WIDTHS) {
          await page.setViewportSize({ width, height: 900 });
          await page.waitForFunction((w) => window.innerWidth === w, width);
          assert.equal(await overflow(page), 0, `${view} at ${width} px has no horizontal overflow`);
          assert.deepEqual(await axeViolations(page), [], `${view} at ${width} px: axe`);
          if (width === 390 || width === 1440)
            await page.screenshot({ path: `${ARTIFACT_DIR}${shot}-${width}.png`, fullPage: true });
        }
        await page.setViewportSize({ width: 1440, height: 900 });
      }

      await t.test('Activity names the customer, the object and the amount; the net in Berlin', async () => {
        await show('#/activity', 'activity');
        const chargeRow = page.locator(`#trail-list li[data-audit-id="${charge.audit_id}"]`);
        await chargeRow.waitFor();
        assert.equal(
          await chargeRow.locator('a').textContent(),
          `Charge $42.00 by card to ${name} (invoice #${inv.number})`,
        );
        assert.equal(
          await page.locator(`#trail-list li[data-audit-id="${update.audit_id}"] a`).textContent(),
          `Update ${name}: phone`,
        );
        // One row per action: no "waiting for consent" row left behind by either write.
        assert.equal(await page.locator('#trail-list li[data-status="pending"]').count(), 0);
        const rows = await page.locator('#trail-list li a').allTextContents();
        for (const r of rows) assert.doesNotMatch(r, /contact \d+/);
        await page.locator('#money-chart .uplot').waitFor();
        assert.match(
          (await page.locator('#money-summary').textContent()) ?? '',
          /\(Europe\/Berlin\): \$[\d,.]+ charged, \$[\d,.]+ refunded, net \$[\d,.]+\.$/,
        );
        await checkWidths('activity', 'activity');
      });

      await t.test("the contact change's undo dialog says before → after", async () => {
        await show(`#/receipt/${update.audit_id}`, 'receipt');
        await page.getByRole('button', { name: 'Undo this action' }).click();
        const summary = page.locator('#solid-consent-summary');
        await summary.waitFor();
        assert.match(
          (await summary.textContent()) ?? '',
          new RegExp(
            `Undo “Phone of ${name}: ${(customer!.phone ?? 'none').replace(/[+]/g, '\\+')} → \\+1 555 0199”`,
          ),
        );
        await page.locator('#solid-consent').screenshot({ path: `${ARTIFACT_DIR}undo-dialog-1440.png` });
        await page.locator('#solid-consent-confirm').click();
        await page.locator('#receipt-status').filter({ hasText: 'Reverted' }).waitFor();
        const undone = await d.rt.store.read((q) =>
          q.get<{ audit_id: unknown }>(
            "SELECT audit_id FROM audit_log WHERE action_type = 'audit.revert' AND status = 'completed' ORDER BY audit_id DESC",
          ),
        );
        const undoRow = (
          ok(await d.call('owner', 'audit.trail', { audit_id: Number(undone!.audit_id), limit: 1 }))
            .result as {
            entries: Array<{ words: string }>;
          }
        ).entries[0];
        assert.equal(undoRow!.words, `Undo the action of receipt #${update.audit_id}`);
        const phone = await d.rt.store.read((q) =>
          q.get<{ phone: string | null }>('SELECT phone FROM contacts WHERE id = ?', [
            d.fixtures.customer_id,
          ]),
        );
        assert.equal(phone!.phone, customer!.phone, 'the phone is back');
      });

      await t.test("a charge's receipt refunds it: the owner types the refund's phrase", async () => {
        await show(`#/receipt/${charge.audit_id}`, 'receipt');
        const refund = page.getByRole('button', { name: 'Refund this charge' });
        await refund.waitFor();
        assert.equal(await page.getByRole('button', { name: 'Undo this action' }).isVisible(), false);
        assert.match((await page.locator('#receipt-status').textContent()) ?? '', /typing its phrase/);
        await checkWidths('receipt', 'receipt-charge');
        await refund.click();
        const phrase = `REFUND $42.00 on charge ${chargeRef}`;
        await page.locator('#solid-consent-phrase').filter({ hasText: phrase }).waitFor();
        await page.locator('#solid-consent-input').fill(phrase);
        await page.locator('#solid-consent-confirm').click();
        await page.locator('#receipt-status').filter({ hasText: 'Done: Refund a charge' }).waitFor();
        const refunded = await d.rt.store.read((q) =>
          q.get<{ refunded_cents: unknown }>('SELECT refunded_cents FROM payments WHERE charge_ref = ?', [
            chargeRef,
          ]),
        );
        assert.equal(Number(refunded!.refunded_cents), 4200);
        await show('#/activity', 'activity');
        await page.locator('#trail-list li[data-verb="issue_refund"]').first().waitFor();
        assert.equal(
          await page.locator('#trail-list li[data-verb="issue_refund"] a').first().textContent(),
          `Refund $42.00 to ${name} on charge ${chargeRef} (invoice #${inv.number})`,
        );
        await page.locator('#money-chart .uplot').waitFor();
        assert.match((await page.locator('#money-summary').textContent()) ?? '', /\$42\.00 refunded/);
        await checkWidths('activity', 'activity-after-refund');
      });

      assert.deepEqual(pageErrors, []);
    },
  );
});

/**
 * The dashboard in headless Chromium, as a business owner and an auditor use it (issue 17):
 * sign in; "Waiting for you" groups an agent's identical retries, counts down, shows the
 * preview's before/after, approves a charge by its typed phrase (a typo first) and rejects
 * another; Activity shows business actions only by default (the dashboard's own reads behind
 * "Include reads and system calls") and the money moved; a receipt says who, which agent, the
 * arguments and result in words and the consent path, verifies its signature and downloads the
 * signed JSON, and offers Undo only for an action with an undo step; Undo works through the
 * consent dialog; Agents & verbs charts latency; the owner changes a cap and blocks a name in
 * Settings and finds both in Activity; the owner creates an API key in Settings, sees it once,
 * uses it against /api/v1, revokes it and sees it refused; Activity's "Export for an auditor"
 * saves a period and its signed manifest, which verify offline; every view at 390 and 1280 px has no
 * horizontal overflow (also 360 and 768 px for the main views) and no serious axe-core finding;
 * screenshots of every view at both widths go to test-artifacts/dashboard/; a read_only visit
 * leaves no `denied` row; an expired session returns to sign-in with a plain sentence.
 *
 * Run: node --import tsx --test test/browser/dashboard.test.ts
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Download, Page } from 'playwright-core';
import type { Envelope, Receipt, Role } from '../../src/spec/types.ts';
import { verifyReceipt } from '../../src/runtime/ledger/keys/receipts.ts';
import { databaseKeys } from '../../src/runtime/ledger/verify/verify.ts';
import { verifyAuditExport } from '../../src/runtime/ledger/verify/export-check.ts';
import { launchChromium, skipUnlessChromium } from '../support/browser.ts';
import { listenLoopback, webmcpFixture, type WebmcpFixture } from '../transports/webmcp/fixture.ts';
import { signInHumanForTest } from '../../src/testing.ts';
import { REFUSAL_BURST } from '../../src/runtime/ledger/write/refusal-burst.ts';
import { CSRF_COOKIE, SESSION_COOKIE } from '../../src/identity/session-store.ts';
import { STEP_TIMEOUT_MS } from './webmcp-pages.ts';
import { dispatchAs } from '../support/keyed.ts';

const ARTIFACT_DIR = fileURLToPath(new URL('../../test-artifacts/dashboard/', import.meta.url));
const TIMEOUT_MS = 240_000;
const VIEWS = ['waiting', 'activity', 'receipt', 'agents', 'catalogue', 'settings'] as const;

const require = createRequire(import.meta.url);
let axeSource: string | undefined;
async function axe(): Promise<string> {
  axeSource ??= await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
  return axeSource;
}

/** Serious or critical axe-core findings on the page (WCAG 2 A/AA rules). */
async function axeViolations(page: Page): Promise<string[]> {
  // Runtime.evaluate is not subject to the page's CSP (an inline <script> would be).
  await page.evaluate(`${await axe()};0`);
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

/** Width by which the page is wider than its viewport (0 when nothing overflows). */
function overflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

async function goto(page: Page, hash: string, view: string): Promise<void> {
  await page.evaluate((h) => {
    location.hash = h;
  }, hash);
  await page.locator(`body[data-view="${view}"]`).waitFor();
  await page.waitForLoadState('networkidle');
  // networkidle is reached once per page load: wait for the view's own loading to end.
  // (Several panels of a view may be loading at once: wait for none.)
  await page.waitForFunction((v) => document.querySelector(`#view-${v} [aria-busy="true"]`) === null, view);
}

/**
 * Sign a tenant user in as a human (the real TOTP routes, through signInHumanForTest), give the
 * browser the session's cookies and open the dashboard. Passkey sign-in itself is tested in
 * test/browser/humans.test.ts with a virtual authenticator.
 */
async function signInAs(
  page: Page,
  f: WebmcpFixture,
  origin: string,
  role: Role,
  userId: number,
): Promise<void> {
  const s = await signInHumanForTest(f.rt, {
    company_id: f.companyId,
    user_id: userId,
    role,
    name: `The ${role}`,
  });
  await page.context().addCookies([
    { name: SESSION_COOKIE, value: s.token, url: origin },
    { name: CSRF_COOKIE, value: s.csrfToken, url: origin },
  ]);
  await page.goto(`${origin}/`);
}

describe('dashboard', { skip: skipUnlessChromium() }, () => {
  it(
    'an owner approves, rejects, reads receipts, undoes, at 390 and 1280 px',
    { timeout: TIMEOUT_MS },
    async (t) => {
      const f = await webmcpFixture(t);
      const origin = await listenLoopback(f.app);
      const browser = await launchChromium({ webmcp: true });
      t.after(() => browser.close());

      // Before the owner opens the dashboard: an agent's completed note, a denied call, a charge
      // waiting for approval that the agent asked for three times, and another charge.
      const agent = { surface: 'webmcp' as const, webmcpSurface: 'dashboard' as const };
      const employee = { ...agent, principal: { ...f.principal('employee'), agent_type: 'claude-desktop' } };
      // First, a named agent key probing what it may do: refused REFUSAL_BURST.refusals times (the
      // banner); older than the rows the Activity steps look for.
      const prober = await f.rt.createApiKey({
        company_id: f.companyId,
        user_id: 4,
        role: 'read_only',
        agent_type: 'claude-desktop',
        name: 'Night-shift bot',
      });
      for (let i = 0; i < REFUSAL_BURST.refusals; i++)
        await dispatchAs(f.rt, { surface: 'http', apiKey: prober }, 'webtest.note_add', { text: 'probe' });
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
      const admin = { ...agent, principal: { ...f.principal('admin'), agent_type: 'claude-desktop' } };
      const retries: Envelope[] = [];
      for (let i = 0; i < 3; i++) retries.push(await f.rt.dispatch(admin, 'webtest.charge', chargeArgs));
      // The card answers the newest of the three (they may share a millisecond): found below.
      let charge = retries[2]!;
      let approvalId = charge.consent!.approval_id!;
      const other = await f.rt.dispatch(admin, 'webtest.charge', { invoice_id: 7, amount_cents: 500 });
      const otherId = other.consent!.approval_id!;
      // The business is in New York: money is summed per business day there, and the zone is named.
      const settings = (await f.rt.tenants.get(f.companyId))!.settings;
      await f.rt.store.write((tx) =>
        tx.run('UPDATE tenants SET settings = ? WHERE company_id = ?', [
          JSON.stringify({ ...settings, time_zone: 'America/New_York' }),
          f.companyId,
        ]),
      );
      f.rt.tenants.invalidate();

      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      page.setDefaultTimeout(STEP_TIMEOUT_MS);
      const pageErrors: string[] = [];
      page.on('pageerror', (err) => pageErrors.push(String(err)));
      const cspViolations: string[] = [];
      page.on('console', (msg) => {
        if (/Content Security Policy/i.test(msg.text())) cspViolations.push(msg.text());
      });

      await t.test('signs in as a human and lands on "Waiting for you" without scrolling', async () => {
        await page.goto(`${origin}/`);
        await page.locator('body[data-state="login"]').waitFor();
        assert.equal(await page.getByLabel('API key', { exact: true }).count(), 0, 'no API-key sign-in');
        await page.getByLabel('Business number').fill(String(f.companyId));
        await page.getByLabel('User number').fill('1');
        await page.getByLabel('Code from your app').fill('000000');
        await page.getByRole('button', { name: 'Sign in with the code' }).click();
        await page.locator('#login-error').filter({ hasText: 'did not verify' }).waitFor();
        await signInAs(page, f, origin, 'owner', 1);
        await page.locator('body[data-state="ready"][data-view="waiting"]').waitFor();
        assert.equal(await page.locator('#business-name').textContent(), 'Main Co');
        assert.equal(await page.evaluate(() => window.scrollY), 0, 'the header stays in view');
        // The banner: the probing agent, by its key's name, with its refusals in words.
        const burst = page.locator('#alerts li[data-alert="burst"]');
        await burst.waitFor();
        assert.match(
          (await burst.textContent()) ?? '',
          new RegExp(
            `“Night-shift bot” \\(claude-desktop\\) was refused ${REFUSAL_BURST.refusals} times .*role denied`,
          ),
        );
        const text = (await page.locator('body').innerText()) ?? '';
        assert.doesNotMatch(text, /WebMCP|tools? registered|polyfill/i, 'no developer text for the owner');
      });

      await t.test('groups identical retries, counts down, shows the amount', async () => {
        const card = page.locator('li[data-group-size="3"]');
        await card.waitFor();
        approvalId = (await card.getAttribute('data-approval-id'))!;
        charge = retries.find((r) => r.consent!.approval_id === approvalId)!;
        assert.ok(charge, 'the card is one of the retries');
        assert.equal(await page.locator('#approvals-list > li').count(), 2, 'three retries, one card');
        assert.match((await card.textContent()) ?? '', /\$159\.00/);
        assert.match((await card.textContent()) ?? '', /#314/);
        assert.match((await card.textContent()) ?? '', /via claude-desktop/);
        // The preview's projected impact, in words: who, and the balance before and after.
        const impact = card.locator('section.impact');
        assert.match((await impact.textContent()) ?? '', /CustomerAcme Ltd/);
        assert.equal(
          await impact.locator('dd[data-change="Balance due"]').innerText(),
          '$200.00 now → $41.00 after',
        );
        assert.match((await impact.textContent()) ?? '', /This cannot be undone once done\./);
        await mkdir(ARTIFACT_DIR, { recursive: true });
        await card.screenshot({ path: `${ARTIFACT_DIR}approval-card-1280.png` });
        const before = await card.locator('time[data-countdown]').textContent();
        assert.match(before ?? '', /^in \d+ (min|h|s)/);
        assert.equal(await page.locator('#waiting-count').textContent(), '4');
        // The tab title carries the waiting count (seen from another tab).
        assert.match(await page.title(), /^\(4\) Waiting for you · /);
      });

      await t.test('approves a charge by typing its phrase (after a typo)', async () => {
        const card = page.locator(`li[data-approval-id="${approvalId}"]`);
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
        const done: Envelope = await f.rt.dispatch(admin, 'webtest.charge', chargeArgs, {
          confirm: true,
          nonce: charge.consent!.nonce,
        });
        assert.equal(done.ok, true, JSON.stringify(done.error));
        (charge as { done?: Envelope }).done = done;
      });

      await t.test('rejects another charge', async () => {
        const card = page.locator(`li[data-approval-id="${otherId}"]`);
        await card.getByRole('button', { name: 'Reject' }).click();
        await page
          .locator('#approvals-decision')
          .filter({ hasText: `Rejected webtest.charge (${otherId})` })
          .waitFor();
        await card.waitFor({ state: 'detached' });
      });

      const done = (): Envelope => (charge as { done?: Envelope }).done!;

      await t.test('Activity shows business actions by default; reads behind the filter', async () => {
        await page.getByRole('link', { name: 'Activity' }).click();
        await page.locator('body[data-view="activity"]').waitFor();
        await page.locator(`#trail-list li[data-audit-id="${done().audit_id}"]`).waitFor();
        await page.locator('#charts .uplot').waitFor();
        // Money today: the approved charge, charged and net, on the business day in New York,
        // the zone named; amounts written as the typed phrase writes them.
        await page.locator('#money-chart .uplot').waitFor();
        assert.match(
          (await page.locator('#money-summary').textContent()) ?? '',
          /^Today, .+ \(America\/New_York\): \$159\.00 charged, \$0\.00 refunded, net \$159\.00\.$/,
        );
        assert.match((await page.locator('#money-chart h2').textContent()) ?? '', /America\/New_York/);
        assert.equal(
          await page.locator('#activity-zone').textContent(),
          "Times are in America/New_York, the business's time zone.",
        );
        assert.equal(await page.locator('#money-sums [data-sum="net"]').textContent(), '$159.00');
        assert.deepEqual(
          await page.locator('#money-table tr[data-verb="webtest.charge"] td').allTextContents(),
          ['charged', '1', '$159.00'],
        );
        // One row per action, in the owner's words: the note's consent request folds into the note.
        const noteRow = page.locator(`#trail-list li[data-audit-id="${note.audit_id}"]`);
        assert.equal(await noteRow.locator('a').textContent(), 'Add the note "ship the order"');
        assert.match((await noteRow.locator('.badge').textContent()) ?? '', /^done, after consent/);
        assert.equal(
          await page.locator(`#trail-list li[data-audit-id="${notePending.audit_id}"]`).count(),
          0,
        );
        assert.equal(
          await page.locator(`#trail-list li[data-audit-id="${done().audit_id}"] a`).textContent(),
          'Charge $159.00 to invoice #314',
        );
        const verbs = await page
          .locator('#trail-list li')
          .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-verb')));
        assert.ok(verbs.length > 0);
        for (const v of verbs)
          assert.doesNotMatch(String(v), /^(audit\.trail|approvals\.list|verbs\.reputation)$/);
        await page.getByLabel('Include reads and system calls').check();
        await page.getByRole('button', { name: 'Apply filters' }).click();
        await page.locator('#trail-list li[data-verb="approvals.list"]').first().waitFor();
        await page.getByLabel('Include reads and system calls').uncheck();
        await page.getByLabel('Status').selectOption('denied');
        await page.getByRole('button', { name: 'Apply filters' }).click();
        await page.locator(`#trail-list li[data-audit-id="${note.audit_id}"]`).waitFor({ state: 'detached' });
        const statuses = await page
          .locator('#trail-list li')
          .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-status')));
        assert.deepEqual([...new Set(statuses)], ['denied']);
        await page.getByRole('button', { name: 'Clear' }).click();
        await page.locator(`#trail-list li[data-audit-id="${note.audit_id}"]`).waitFor();
      });

      await t.test("one agent's view: named by its key, what it did and what was refused", async () => {
        await page.getByLabel('Status').selectOption('denied');
        await page.getByRole('button', { name: 'Apply filters' }).click();
        const bot = page.locator('#trail-list li .who', { hasText: '“Night-shift bot” (claude-desktop)' });
        await bot.first().waitFor();
        await page.getByRole('button', { name: 'Show only what “Night-shift bot” did' }).first().click();
        await page.locator('#trail-agent:not([hidden])').waitFor();
        assert.equal(
          await page.locator('#trail-agent-words').textContent(),
          `Only “Night-shift bot”: ${REFUSAL_BURST.refusals} actions shown, ${REFUSAL_BURST.refusals} refused.`,
        );
        // The money it moved today, in the business's time zone (a read_only bot: none).
        await page.locator('#trail-agent-money', { hasText: 'moved today' }).waitFor();
        assert.equal(
          await page.locator('#trail-agent-money').textContent(),
          'Money “Night-shift bot” moved today (America/New_York): $0.00 charged, $0.00 refunded, net $0.00.',
        );
        const whos = await page.locator('#trail-list li .who').allTextContents();
        assert.equal(whos.length, REFUSAL_BURST.refusals);
        for (const w of whos) assert.match(w, /“Night-shift bot”/);
        await page.getByRole('button', { name: 'Show every agent' }).click();
        await page.locator('#trail-agent').waitFor({ state: 'hidden' });
        await page.getByRole('button', { name: 'Clear' }).click();
        await page.locator(`#trail-list li[data-audit-id="${note.audit_id}"]`).waitFor();
      });

      await t.test(
        "finds the charge's receipt: who, agent, arguments in words, consent; no Undo",
        async () => {
          await page.locator(`#trail-list li[data-audit-id="${done().audit_id}"] a`).click();
          await page.locator(`#receipt[data-audit-id="${done().audit_id}"]`).waitFor();
          const field = (k: string) => page.locator(`#receipt-fields dd[data-field="${k}"]`).textContent();
          assert.match((await field('who')) ?? '', /user 2 \(admin\)/);
          assert.equal(await field('agent'), 'claude-desktop');
          assert.match((await field('arguments')) ?? '', /\$159\.00/);
          assert.match((await field('arguments')) ?? '', /#314/);
          assert.match(
            (await field('consent')) ?? '',
            /^Typed by The owner \(owner\) in the dashboard, \d\d:\d\d UTC \(approval apv_/,
          );
          assert.equal(await field('self_approved'), 'no');
          assert.doesNotMatch((await field('when')) ?? '', /T\d\d:\d\d:\d\d/, 'local time, not ISO');
          assert.equal(await page.locator('#receipt-revert').isVisible(), false, 'a charge has no undo step');
          assert.match((await page.locator('#receipt-status').textContent()) ?? '', /cannot be undone/);
          assert.match((await field('result')) ?? '', /Charged\s*\$159\.00/, 'the result in words');
        },
      );

      await t.test("verifies the charge's signed receipt and downloads it", async () => {
        await page.getByRole('button', { name: 'Verify signature' }).click();
        const verdict = page.locator('#receipt-verdict[data-valid="true"]');
        await verdict.waitFor();
        assert.match(
          (await verdict.textContent()) ?? '',
          /^Signature valid — signed by key \S+, for the action recorded at [^T]+\. The audit log still holds this row unchanged\.$/,
        );
        await page
          .locator('#receipt-signature')
          .screenshot({ path: `${ARTIFACT_DIR}receipt-signature-1280.png` });
        const [download] = await Promise.all([
          page.waitForEvent('download'),
          page.getByRole('button', { name: 'Download receipt' }).click(),
        ]);
        assert.equal(download.suggestedFilename(), `receipt-${done().audit_id}.json`);
        const saved = JSON.parse(await readFile((await download.path())!, 'utf8')) as Receipt;
        assert.equal(saved.audit_id, done().audit_id);
        assert.equal(saved.charged_cents, 15900);
        const keys = await f.rt.store.read((q) => databaseKeys(q, f.principal('owner').company_id));
        assert.deepEqual(verifyReceipt(saved, keys), {
          valid: true,
          kid: saved.attestation!.kid,
          errors: [],
        });
        // A receipt altered after download is refused, and the page says why.
        const forged = await f.rt.dispatch(
          { principal: f.principal('owner'), surface: 'http' },
          'audit.verify_receipt',
          { receipt: { ...saved, charged_cents: 1 } },
        );
        assert.equal((forged.result as { data: { valid: boolean } }).data.valid, false);
      });

      await t.test('exports the period for an auditor: two files that verify offline', async () => {
        await goto(page, '#/activity', 'activity');
        const today = await page.evaluate(() => {
          const d = new Date();
          return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
        });
        await page.getByLabel('First day').fill(today);
        await page.getByLabel('Last day').fill(today);
        const downloads: Download[] = [];
        page.on('download', (d) => downloads.push(d));
        await page.getByRole('button', { name: 'Export', exact: true }).click();
        await page.locator('#export-status', { hasText: 'Saved' }).waitFor();
        assert.equal(downloads.length, 2);
        const dir = await mkdtemp(join(tmpdir(), 'solid-dashboard-export-'));
        t.after(() => rm(dir, { recursive: true, force: true }));
        const [rows, manifest] = downloads;
        assert.match(rows!.suggestedFilename(), /^audit-\d+-\d{4}-\d{2}-\d{2}-\d{4}-\d{2}-\d{2}\.ndjson$/);
        assert.equal(manifest!.suggestedFilename(), `${rows!.suggestedFilename()}.manifest.json`);
        for (const d of downloads) await d.saveAs(join(dir, d.suggestedFilename()));
        const keys = await f.rt.store.read((q) => databaseKeys(q, f.principal('owner').company_id));
        const report = await verifyAuditExport(join(dir, rows!.suggestedFilename()), { trust: { keys } });
        assert.equal(report.ok, true, JSON.stringify(report.findings));
        assert.ok(report.rows_checked > 5, String(report.rows_checked));
      });

      await t.test('undoes a reversible note through the consent dialog', async () => {
        await goto(page, `#/receipt/${note.audit_id}`, 'receipt');
        await page.locator(`#receipt[data-audit-id="${note.audit_id}"]`).waitFor();
        // The dialog in the owner's words: what was done, by whom, when in the business's time
        // zone, the consent class in words; at 1440 and 390 px (cancelled once, then confirmed).
        for (const width of [1440, 390]) {
          await page.setViewportSize({ width, height: 900 });
          await page.getByRole('button', { name: 'Undo this action' }).click();
          await page.locator('dialog#solid-consent[open]').waitFor();
          assert.match(
            (await page.locator('#solid-consent-summary').textContent()) ?? '',
            /^Undo “Add the note "ship the order"” \(receipt #\d+\), done by user 3 \(employee\) on .+ \(America\/New_York\)\.$/,
          );
          assert.doesNotMatch(
            (await page.locator('#solid-consent-summary').textContent()) ?? '',
            /webtest\.|T\d\d:/,
          );
          assert.match(
            (await page.locator('.solid-consent-meta').textContent()) ?? '',
            /^A change that can be undone · you confirm · /,
          );
          await mkdir(ARTIFACT_DIR, { recursive: true });
          await page.screenshot({ path: `${ARTIFACT_DIR}undo-dialog-${width}.png` });
          if (width === 1440) {
            await page.locator('#solid-consent-cancel').click();
            await page.locator('#receipt-status').filter({ hasText: 'Undo cancelled' }).waitFor();
          }
        }
        await page.locator('#solid-consent-confirm').focus();
        await page.keyboard.press('Enter');
        try {
          await page
            .locator('#receipt-status')
            .filter({ hasText: /Reverted|refused|Not reverted/ })
            .waitFor();
        } catch (err) {
          await mkdir(ARTIFACT_DIR, { recursive: true });
          await page.screenshot({ path: `${ARTIFACT_DIR}undo-failure.png` });
          const state = await page.evaluate(() => ({
            status: document.getElementById('receipt-status')?.textContent,
            dialog: document.querySelector('dialog#solid-consent')?.outerHTML.slice(0, 400),
          }));
          throw new Error(`${String(err)}: ${JSON.stringify(state)}`, { cause: err });
        }
        assert.match((await page.locator('#receipt-status').textContent()) ?? '', /^Reverted/);
        await page.setViewportSize({ width: 1280, height: 900 });
        assert.deepEqual(
          (await f.effects()).map((e) => e.kind),
          ['charge'],
          'the note is gone; the approved charge stays',
        );
      });

      await t.test('Agents & verbs: caller mistakes do not lower the success rate', async () => {
        for (let i = 0; i < 3; i++) await f.rt.dispatch(employee, 'webtest.quote', { sku: '' } as never);
        await f.rt.dispatch(employee, 'webtest.quote', { sku: 'mug', quantity: 2 });
        await f.rt.auditBuffer.flush();
        await f.rt.observers.flush();
        await goto(page, '#/agents', 'agents');
        const row = page.locator('#reputation-table tr[data-verb="webtest.quote"]');
        await row.waitFor();
        const cells = await row.locator('td').allTextContents();
        assert.equal(cells[1], '100 %', `success rate: ${cells.join(' | ')}`);
        assert.equal(cells[4], '3', 'three caller mistakes in their own column');
        await page.locator('#latency-chart .uplot').waitFor();
        assert.match(
          (await page.locator('#latency-summary').textContent()) ?? '',
          /^Response time of the \d+ most-called verbs?, last 24 hours\. Slowest at p95: .+, \d+ ms\./,
        );
      });

      await t.test('Catalogue is searchable and grouped by category', async () => {
        await goto(page, '#/catalogue', 'catalogue');
        await page.getByLabel('Search').fill('invoice');
        await page.locator('details[data-category="webtest"][open] li[data-verb="webtest.charge"]').waitFor();
        assert.equal(await page.locator('li[data-verb="audit.trail"]').count(), 0);
        await page.getByLabel('Search').fill('');
      });

      await t.test(
        "Settings: the owner moves the business's time zone through the consent dialog",
        async () => {
          await goto(page, '#/settings', 'settings');
          await page.locator('[data-time-zone="America/New_York"]').waitFor();
          await page.getByLabel('New time zone').fill('Europe/Berlin');
          await page.getByRole('button', { name: 'Set time zone' }).click();
          await page.locator('dialog#solid-consent[open]').waitFor();
          await page.locator('#solid-consent-confirm').click();
          await page.locator('[data-time-zone="Europe/Berlin"]').waitFor();
          assert.match(
            (await page.locator('#settings-status').textContent()) ?? '',
            /now keeps time in Europe\/Berlin/,
          );
          await goto(page, '#/activity', 'activity');
          await page.locator('#money-chart h2', { hasText: 'Europe/Berlin' }).waitFor();
        },
      );

      await t.test('Settings: the owner changes a cap and blocks a name; both are in the trail', async () => {
        await goto(page, '#/settings', 'settings');
        const row = page.locator('#settings-body tr[data-class="WRITE_FINANCIAL"]');
        await row.waitFor();
        assert.equal(await row.locator('td').first().textContent(), '25 (default)');
        await page.getByLabel('Kind').selectOption('WRITE_FINANCIAL');
        await page.getByLabel('New daily limit').fill('30');
        await page.getByRole('button', { name: 'Set', exact: true }).click();
        await page.locator('dialog#solid-consent[open]').waitFor();
        await page.locator('#solid-consent-confirm').click();
        await page
          .locator('#settings-status')
          .filter({ hasText: 'The daily cap of Money moved is now 30.' })
          .waitFor();
        assert.equal(await row.locator('td').first().textContent(), '30');
        await page.getByLabel('Block a verb name').fill('payments.payout');
        await page.getByRole('button', { name: 'Block', exact: true }).click();
        await page.locator('dialog#solid-consent[open]').waitFor();
        await page.locator('#solid-consent-confirm').click();
        await page.locator('#settings-body li[data-blocked="payments.payout"]').waitFor();
        const capRow = await f.rt.store.read((q) =>
          q.get<{ audit_id: number; user_id: number; agent_type: string; request_data: string }>(
            "SELECT audit_id, user_id, agent_type, request_data FROM audit_log WHERE action_type = 'tenant.caps_set' AND status = 'completed'",
          ),
        );
        assert.equal(capRow?.agent_type, 'dashboard', 'dispatched as the owner through the dashboard');
        assert.equal(capRow?.user_id, 1);
        assert.deepEqual(JSON.parse(capRow!.request_data), { consent_class: 'WRITE_FINANCIAL', limit: 30 });
        await goto(page, '#/activity', 'activity');
        await page
          .locator(`#trail-list li[data-verb="tenant.caps_set"][data-audit-id="${capRow!.audit_id}"]`)
          .waitFor();
        await page
          .locator('#trail-list li[data-verb="tenant.blocklist_add"][data-status="completed"]')
          .waitFor();
        await goto(page, '#/settings', 'settings');
      });

      await t.test('Settings: the owner creates an API key, sees it once, it works, revokes it', async () => {
        await goto(page, '#/settings', 'settings');
        const panel = page.locator('#api-keys');
        await panel.locator('tr[data-key-id]').first().waitFor();
        const roles = await panel.getByLabel('Role').locator('option').allTextContents();
        assert.deepEqual(roles, ['Read only', 'Employee', 'Admin', 'Owner']);
        await page.waitForLoadState('networkidle');
        await panel.getByLabel('Name').fill('shipping agent');
        await panel.getByLabel('Role').selectOption('employee');
        assert.equal(await panel.getByLabel('Name').inputValue(), 'shipping agent');
        await panel.getByRole('button', { name: 'Create key' }).click();
        // The pending answer opens the consent dialog (slower on a loaded CI machine).
        await page.locator('dialog#solid-consent[open]').waitFor({ timeout: 30_000 });
        await page.locator('#solid-consent-confirm').click();
        const reveal = page.locator('#api-keys [data-new-key]');
        await reveal.waitFor();
        const apiKey = await page.locator('#new-api-key').inputValue();
        assert.match(apiKey, /^sk_solid_[0-9a-f]{12}_/);
        assert.match((await reveal.textContent()) ?? '', /it will not be shown again/);
        await reveal.getByRole('button', { name: 'Copy' }).waitFor();
        await page.locator('#api-keys').screenshot({ path: `${ARTIFACT_DIR}settings-api-keys-1280.png` });
        const keyId = apiKey.slice('sk_solid_'.length, 'sk_solid_'.length + 12);
        const call = (key: string) =>
          fetch(`${origin}/api/v1/agent/dispatch/verbs.list`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: '{}',
          });
        const works = await call(apiKey);
        assert.equal(works.status, 200, 'the new key works against /api/v1');
        assert.equal(((await works.json()) as Envelope).ok, true);
        // Shown once: a reload of the view lists the key but not its secret.
        await goto(page, '#/activity', 'activity');
        await goto(page, '#/settings', 'settings');
        const row = page.locator(`#api-keys tr[data-key-id="${keyId}"]`);
        await row.waitFor();
        assert.equal(await page.locator('#api-keys [data-new-key]').count(), 0);
        assert.doesNotMatch((await page.locator('body').innerText()) ?? '', new RegExp(apiKey.slice(22)));
        await row.getByRole('button', { name: 'Revoke key shipping agent' }).click();
        await page.locator('dialog#solid-consent[open]').waitFor();
        const phrase = (await page.locator('#solid-consent-phrase').textContent()) ?? '';
        assert.equal(phrase, `revoke key ${keyId}`);
        await page.locator('#solid-consent-input').fill(phrase);
        await page.locator('#solid-consent-confirm').click();
        await page.locator('#api-keys-status').filter({ hasText: 'Key shipping agent is revoked' }).waitFor();
        assert.match(
          (await page.locator(`#api-keys tr[data-key-id="${keyId}"]`).textContent()) ?? '',
          /Revoked/,
        );
        const refused = await call(apiKey);
        assert.equal(refused.status, 401, 'the revoked key stops working');
        assert.equal(((await refused.json()) as Envelope).error?.reason, 'auth_invalid');
        await f.rt.auditBuffer.flush();
        const leaked = await f.rt.store.read((q) =>
          q.all<{ n: number }>(
            'SELECT (SELECT COUNT(*) FROM audit_log WHERE request_data LIKE ?) + (SELECT COUNT(*) FROM receipts WHERE receipt LIKE ?) AS n',
            [`%${apiKey.slice(22)}%`, `%${apiKey.slice(22)}%`],
          ),
        );
        assert.equal(Number(leaked[0]!.n), 0, 'the secret is in no audit row or receipt');
        const waiting = await f.rt.store.read((q) =>
          q.all<{ status: string }>("SELECT status FROM approvals WHERE verb = 'api_keys.revoke'"),
        );
        assert.deepEqual(
          waiting.map((w) => w.status),
          ['consumed'],
          'the revoke typed in the dialog leaves nothing waiting',
        );
      });

      await t.test('every view: no horizontal overflow, no serious axe finding, screenshots', async () => {
        await mkdir(ARTIFACT_DIR, { recursive: true });
        for (const width of [1280, 390]) {
          await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
          for (const view of VIEWS) {
            await goto(page, view === 'receipt' ? `#/receipt/${done().audit_id}` : `#/${view}`, view);
            if (view === 'receipt') await page.locator('#receipt:not([hidden])').waitFor();
            assert.equal(await overflow(page), 0, `${view} at ${width} px overflows`);
            assert.deepEqual(await axeViolations(page), [], `${view} at ${width} px`);
            await page.screenshot({ path: `${ARTIFACT_DIR}${view}-${width}.png` });
          }
        }
        for (const width of [360, 768, 1440]) {
          await page.setViewportSize({ width, height: 800 });
          for (const view of ['waiting', 'activity', 'receipt', 'catalogue'] as const) {
            await goto(page, view === 'receipt' ? `#/receipt/${done().audit_id}` : `#/${view}`, view);
            assert.equal(await overflow(page), 0, `${view} at ${width} px overflows`);
          }
        }
        // At night: dark mode by the system setting, as readable (axe) and as wide.
        await page.emulateMedia({ colorScheme: 'dark' });
        for (const width of [390, 1440]) {
          await page.setViewportSize({ width, height: 900 });
          for (const view of ['waiting', 'activity', 'settings'] as const) {
            await goto(page, `#/${view}`, view);
            assert.equal(await overflow(page), 0, `${view} (dark) at ${width} px overflows`);
            assert.deepEqual(await axeViolations(page), [], `${view} (dark) at ${width} px`);
          }
          await goto(page, '#/activity', 'activity');
          await page.locator('#money-chart .uplot').waitFor();
          await page.screenshot({ path: `${ARTIFACT_DIR}activity-dark-${width}.png` });
        }
        await page.emulateMedia({ colorScheme: 'light' });
        for (const width of [390, 1440]) {
          await page.setViewportSize({ width, height: 900 });
          await goto(page, '#/activity', 'activity');
          await page.locator('#money-chart .uplot').waitFor();
          await page.screenshot({ path: `${ARTIFACT_DIR}activity-money-${width}.png` });
        }
        await page.setViewportSize({ width: 1280, height: 900 });
      });

      await t.test('an expired session returns to sign-in with a plain sentence', async () => {
        await f.rt.store.write((tx) => tx.run('DELETE FROM web_sessions'));
        await goto(page, '#/activity', 'activity');
        await page.locator('body[data-state="login"]').waitFor();
        assert.equal(
          await page.locator('#login-error').textContent(),
          'Your session has ended. Sign in again to continue.',
        );
        assert.doesNotMatch((await page.locator('body').innerText()) ?? '', /api_key|POST \/api/);
      });

      await t.test('signs out and withdraws the page tools', async () => {
        await signInAs(page, f, origin, 'owner', 1);
        await page.locator('body[data-state="ready"]').waitFor();
        const tools = (await page.webmcp.tools()).map((tool) => tool.name);
        assert.ok(tools.includes('webtest__charge'));
        assert.equal(tools.includes('approvals__approve'), false, 'human-only verbs are not agent tools');
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.locator('body[data-state="login"]').waitFor();
        assert.equal(await page.locator('#login-error').textContent(), 'You are signed out.');
        assert.deepEqual(await page.webmcp.tools(), []);
      });

      assert.deepEqual(pageErrors, []);
      assert.deepEqual(cspViolations, []);
    },
  );

  it('a read_only visit of every view leaves no denied row', { timeout: TIMEOUT_MS }, async (t) => {
    const f = await webmcpFixture(t);
    const origin = await listenLoopback(f.app);
    const browser = await launchChromium({ webmcp: false });
    t.after(() => browser.close());
    const page = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
    page.setDefaultTimeout(STEP_TIMEOUT_MS);
    await signInAs(page, f, origin, 'read_only', 4);
    await page.locator('body[data-state="ready"][data-view="activity"]').waitFor();
    await mkdir(ARTIFACT_DIR, { recursive: true });
    for (const view of VIEWS) {
      await goto(page, `#/${view}`, view);
      assert.equal(await overflow(page), 0, `${view} overflows`);
    }
    assert.match((await page.locator('#view-waiting').textContent()) ?? '', /admin or the owner/);
    await page.screenshot({ path: `${ARTIFACT_DIR}read-only-waiting-390.png` });
    await f.rt.auditBuffer.flush();
    const rows = await f.rt.store.read((q) =>
      q.all<{ action_type: string; reason: string }>(
        "SELECT action_type, reason FROM audit_log WHERE status = 'denied' AND user_id = 4",
      ),
    );
    assert.deepEqual(rows, [], 'no denial for panels the role cannot use');
    const keyCalls = await f.rt.store.read((q) =>
      q.all<{ action_type: string }>(
        "SELECT action_type FROM audit_log WHERE action_type LIKE 'api_keys.%' AND user_id = 4",
      ),
    );
    assert.deepEqual(keyCalls, [], 'the API keys panel makes no call for read_only');
    await goto(page, '#/settings', 'settings');
    assert.equal(await page.locator('#api-keys').count(), 0, 'read_only sees nothing of the API keys');
  });
});

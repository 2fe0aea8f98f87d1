/**
 * Settings → "Connected apps" in headless Chromium: the owner sees the app they allowed (its
 * name, role ceiling, read-only, expiry) and revokes it; the grant is revoked in the store and
 * its token is refused. spec/oauth.md §grants
 *
 * Run: node --import tsx --test test/browser/connected-apps.test.ts
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { launchChromium, skipUnlessChromium } from '../support/browser.ts';
import { signInHumanForTest } from '../../src/testing.ts';
import { CSRF_COOKIE, SESSION_COOKIE } from '../../src/identity/session-store.ts';
import { isVerbError } from '../../src/runtime/errors.ts';
import { oauthFixture } from '../oauth/fixture.ts';
import { mintTestToken } from '../oauth/mint.ts';

describe('connected apps', { skip: skipUnlessChromium() }, () => {
  it('the owner sees an allowed app in Settings and revokes it', { timeout: 120_000 }, async (t) => {
    const f = await oauthFixture(t);
    const token = await mintTestToken(
      f.rt,
      { company_id: f.companyId, user_id: 1, role: 'owner' },
      { role: 'employee', read_only: true, client_name: 'Claude' },
    );
    const s = await signInHumanForTest(f.rt, { company_id: f.companyId, user_id: 1, role: 'owner' });
    const browser = await launchChromium({ webmcp: false });
    t.after(() => browser.close());
    const context = await browser.newContext();
    await context.addCookies([
      { name: SESSION_COOKIE, value: s.token, url: f.base },
      { name: CSRF_COOKIE, value: s.csrfToken, url: f.base },
    ]);
    const page = await context.newPage();
    await page.goto(`${f.base}/#/settings`);
    const item = page.locator('#connected-apps li[data-grant]');
    await item.waitFor();
    const text = await item.textContent();
    assert.match(text ?? '', /Claude: acts up to employee, read only; allowed by Token Owner/);
    await page.getByRole('button', { name: 'Revoke Claude' }).click();
    await page.locator('#connected-apps', { hasText: 'No app is connected.' }).waitFor();
    const rows = await f.rt.store.read((q) =>
      q.all<{ revoked_at: string | null }>('SELECT revoked_at FROM oauth_grants'),
    );
    assert.equal(rows.length, 1);
    assert.ok(rows[0]!.revoked_at);
    await assert.rejects(
      f.rt.tenants.authenticate(token),
      (e) => isVerbError(e) && e.reason === 'auth_invalid',
    );
  });
});

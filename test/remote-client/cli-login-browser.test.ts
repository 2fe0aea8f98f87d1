/**
 * The dashboard's approval page of the CLI browser login, in headless Chromium (issue 35 row 5):
 * `solid login` prints `<server>/#/cli-login` and, in the terminal only, a code; opened signed
 * out, the page asks to sign in (saying why); signed in as a human, it asks for the code (a link
 * with a code in it fills nothing in), then shows the CLI's name, the address and user agent that
 * asked, and a role to pick (at most the human's own; Approve stays disabled until one is picked);
 * Approve ends the CLI's wait with a new key of that role stored 0600. A used code is refused.
 * Spec: spec/transports.md §remote-login.
 *
 * Run: node --import tsx --test test/remote-client/cli-login-browser.test.ts
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { launchChromium, skipUnlessChromium } from '../support/browser.ts';
import { signInHumanForTest } from '../../src/testing.ts';
import { CSRF_COOKIE, SESSION_COOKIE } from '../../src/identity/session-store.ts';
import { remoteFixture } from './support.ts';

test(
  'a human types the code of `solid login` on the dashboard page, sees who asked and picks the role',
  { skip: skipUnlessChromium(), timeout: 180_000 },
  async (t) => {
    const f = await remoteFixture(t);
    let gotCode!: (code: string) => void;
    const printed: string[] = [];
    const codeShown = new Promise<string>((resolve) => (gotCode = resolve));
    const login = f.cli('remote', ['login', '--name', 'ci laptop'], {
      onErr: (line) => {
        printed.push(line);
        const m = /code: ([A-Z0-9]{4}-[A-Z0-9]{4})/.exec(line);
        if (m) gotCode(m[1]!);
      },
    });
    const code = await codeShown;
    const url = /(http:\/\/\S+#\/cli-login)\s/.exec(printed.join('\n'))![1]!;

    const browser = await launchChromium({ webmcp: false });
    t.after(() => browser.close());
    const page = await browser.newPage();
    page.setDefaultTimeout(20_000);
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(String(err)));

    await page.goto(url);
    await page.locator('body[data-state="login"]').waitFor();
    assert.match(
      await page.locator('#login-cli-note').innerText(),
      /approve a command-line login\. You will then type the code your terminal shows/,
    );

    // A human (an admin) signs in; a code in a link would fill nothing in.
    const admin = await f.server.rt.tenants.authenticate(f.keys.admin);
    const s = await signInHumanForTest(f.server.rt, {
      company_id: admin.company_id,
      user_id: admin.user_id,
      role: 'admin',
      name: 'Ada Admin',
    });
    await page.context().addCookies([
      { name: SESSION_COOKIE, value: s.token, url: f.baseUrl },
      { name: CSRF_COOKIE, value: s.csrfToken, url: f.baseUrl },
    ]);
    await page.goto('about:blank');
    await page.goto(`${url}?code=${code}`);
    await page.locator('#cli-login[data-state="enter"]').waitFor();
    assert.equal(await page.locator('#cli-login-code-input').inputValue(), '', 'never prefilled');

    await page.getByLabel('Code shown in your terminal').fill('ZZZZ-ZZZZ');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.locator('#cli-login-status', { hasText: 'No open login has that code' }).waitFor();

    await page.getByLabel('Code shown in your terminal').fill(code.toLowerCase());
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.locator('#cli-login[data-state="open"]').waitFor();
    assert.equal(await page.locator('#cli-login-code').innerText(), code);
    const panel = await page.locator('#cli-login').innerText();
    assert.match(panel, /ci laptop/);
    assert.equal(await page.locator('#cli-login-address').innerText(), '127.0.0.1');
    assert.match(await page.locator('#cli-login-agent').innerText(), /^solid-cli\//);
    assert.match(panel, /a new API key for Ada Admin/);
    const roles = await page.locator('#cli-login-role option:not([disabled])').allInnerTexts();
    assert.deepEqual(roles, ['read_only', 'employee', 'admin'], 'at most the human’s own role');
    assert.equal(await page.getByRole('button', { name: 'Approve' }).isDisabled(), true);
    await page.getByLabel('Role of the new key').selectOption('employee');
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.locator('#cli-login[data-state="approved"]').waitFor();
    assert.match(
      await page.locator('#cli-login-status').innerText(),
      /role employee\. Go back to your terminal/,
    );

    const done = await login;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /logged in to .* as user \d+ \(employee\)/);
    const path = join(f.configHome, 'solid', 'credentials.json');
    assert.equal(statSync(path).mode & 0o777, 0o600);
    const stored = (
      JSON.parse(readFileSync(path, 'utf8')) as {
        servers: Record<string, { api_key: string; method: string }>;
      }
    ).servers[f.baseUrl]!;
    assert.equal(stored.method, 'browser');
    assert.notEqual(stored.api_key, f.keys.admin);

    // The same code again: it was used.
    await page.goto(url);
    await page.getByLabel('Code shown in your terminal').fill(code);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.locator('#cli-login-status', { hasText: 'already approved and used' }).waitFor();
    assert.deepEqual(errors, []);
  },
);

/**
 * The dashboard's approval page of the CLI browser login, in headless Chromium: `solid login`
 * prints `<server>/#/cli-login?code=…`; opened signed out, the page asks to sign in (saying why);
 * signed in, it shows the same code, the CLI's name and what approving grants; Approve ends the
 * CLI's wait with a new key stored 0600. A used link is shown as unusable.
 * Spec: spec/transports.md §remote-login.
 *
 * Run: node --import tsx --test test/remote-client/cli-login-browser.test.ts
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { launchChromium, skipUnlessChromium } from '../support/browser.ts';
import { remoteFixture } from './support.ts';

test(
  'a human approves `solid login` on the dashboard page',
  { skip: skipUnlessChromium(), timeout: 180_000 },
  async (t) => {
    const f = await remoteFixture(t);
    let link!: (url: string) => void;
    const printed = new Promise<string>((resolve) => (link = resolve));
    const login = f.cli('remote', ['login', '--name', 'ci laptop'], {
      onErr: (line) => {
        const m = /(http:\/\/\S+#\/cli-login\?code=\S+)/.exec(line);
        if (m) link(m[1]!);
      },
    });
    const url = await printed;
    const code = /code=([A-Z0-9-]+)/.exec(url)![1]!;

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
      new RegExp(`approve the command-line login with the code ${code}`),
    );
    await page.getByLabel('API key').fill(f.keys.admin);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#cli-login[data-state="open"]').waitFor();
    assert.equal(await page.locator('#cli-login-code').innerText(), code);
    const panel = await page.locator('#cli-login').innerText();
    assert.match(panel, /ci laptop/);
    assert.match(panel, /a new API key for user \d+ \(admin\)/);
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.locator('#cli-login[data-state="approved"]').waitFor();
    assert.match(await page.locator('#cli-login-status').innerText(), /Go back to your terminal/);

    const done = await login;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /logged in to .* as user \d+ \(admin\)/);
    const path = join(f.configHome, 'solid', 'credentials.json');
    assert.equal(statSync(path).mode & 0o777, 0o600);
    const stored = (
      JSON.parse(readFileSync(path, 'utf8')) as {
        servers: Record<string, { api_key: string; method: string }>;
      }
    ).servers[f.baseUrl]!;
    assert.equal(stored.method, 'browser');
    assert.notEqual(stored.api_key, f.keys.admin);

    // The same link again: the code was used.
    await page.goto(url);
    await page.locator('#cli-login[data-state="unusable"]').waitFor();
    assert.match(await page.locator('#cli-login').innerText(), /cannot be used/);
    assert.deepEqual(errors, []);
  },
);

/**
 * A hosted connector's OAuth dance with the human in real Debian Chromium (CDP virtual
 * authenticator for the passkey): a connector-style client (the MCP SDK client's OAuth support,
 * no prior configuration) is challenged, registers and sends the person's browser to the
 * authorization endpoint; the consent page asks her to sign in; she signs in with her passkey and
 * comes back; she picks the role and one toolset and allows; the client gets its code and token,
 * reads over /mcp, and a gated write waits for her approval (she approves on the approval page;
 * only then the same call runs). Screenshots go to test-artifacts/oauth/.
 *
 * Run: node --import tsx --test test/browser/oauth-consent.test.ts
 * Spec: spec/oauth.md §consent, spec/consent.md §human-sign-in, §approval-page.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { launchChromium, skipUnlessChromium } from '../support/browser.ts';
import { STEP_TIMEOUT_MS } from './webmcp-pages.ts';
import { enrolmentUrl } from '../../src/identity/enrolment.ts';
import { inviteUser } from '../../src/identity/invite.ts';
import { errorEnvelopeOf } from '../../src/transports/mcp/envelope-map.ts';
import { oauthFixture } from '../oauth/fixture.ts';
import { MemoryProvider } from '../oauth/connector.ts';

const ARTIFACT_DIR = fileURLToPath(new URL('../../test-artifacts/oauth/', import.meta.url));

async function virtualAuthenticator(context: BrowserContext, page: Page): Promise<void> {
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
}

const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;

describe('OAuth consent in Chromium', { skip: skipUnlessChromium() }, () => {
  it(
    'a connector registers, the owner signs in with a passkey and consents, the client reads and a gated write waits for her',
    { timeout: 240_000 },
    async (t) => {
      const f = await oauthFixture(t);
      const port = new URL(f.base).port;
      // WebAuthn refuses an IP address as RP ID; solid serve uses localhost for the whole flow.
      const origin = `http://localhost:${port}`;
      f.rt.options.publicUrl = origin;
      await mkdir(ARTIFACT_DIR, { recursive: true });

      const { link } = await inviteUser(
        f.rt.store,
        { company_id: f.companyId, name: 'Jane Ruiz', role: 'owner' },
        undefined,
        f.rt.clock(),
      );
      const browser = await launchChromium({ webmcp: false });
      t.after(() => browser.close());
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      page.setDefaultTimeout(STEP_TIMEOUT_MS);
      const pageErrors: string[] = [];
      page.on('pageerror', (err) => pageErrors.push(String(err)));
      await virtualAuthenticator(context, page);
      // The connector's redirect URI: the browser lands there with the code.
      const provider = new MemoryProvider();
      const landed: string[] = [];
      await context.route(`${provider.redirectUrl}**`, async (route) => {
        landed.push(route.request().url());
        await route.fulfill({ status: 200, contentType: 'text/plain', body: 'You can close this tab.' });
      });

      // The owner has a passkey (enrolment), then is signed out.
      await page.goto(enrolmentUrl(origin, link.token));
      await page.locator('body[data-enrol="ready"]').waitFor();
      await page.getByRole('button', { name: 'Register a passkey' }).click();
      await page.locator('body[data-state="ready"]').waitFor();
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.locator('body[data-state="login"]').waitFor();

      // The connector, with no prior configuration: challenged, it discovers and registers.
      const url = new URL('/mcp', origin);
      await assert.rejects(
        new Client({ name: 'connector', version: '1' }).connect(
          new StreamableHTTPClientTransport(url, { authProvider: provider }),
        ),
        UnauthorizedError,
      );
      assert.ok(provider.authorizationUrl, 'sent to the authorization endpoint');
      assert.ok(provider.info?.client_id, 'registered itself');

      // The person's browser: the consent page asks for the sign-in, then comes back.
      await page.goto(provider.authorizationUrl.href);
      await page.getByRole('heading', { name: 'Sign in to continue' }).waitFor();
      await page.screenshot({ path: `${ARTIFACT_DIR}consent-sign-in-1280.png` });
      await page.getByRole('link', { name: 'Sign in' }).click();
      await page.locator('body[data-state="login"]').waitFor();
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await page.getByRole('heading', { name: 'Allow Test Connector?' }).waitFor();
      const body = (await page.locator('body').innerText()) ?? '';
      assert.match(
        body,
        /Test Connector asks to act for .* as an agent, on your behalf \(Jane Ruiz, owner\)/,
      );
      assert.match(body, /change, still asking you: webtest\.charge \(a typed phrase or your approval\)/);
      assert.match(
        body,
        /the agent cannot type the phrase for you, approve, change these settings or sign in as you/,
      );

      // She allows the admin role, the webtest toolset only.
      await page.locator('select[name="role"]').selectOption('admin');
      await page.locator('input[name="reach"][value="listed"]').check();
      await page.locator('input[name="toolset"][value="webtest"]').check();
      await page.screenshot({ path: `${ARTIFACT_DIR}consent-1280.png`, fullPage: true });
      await page.getByRole('button', { name: 'Allow' }).click();
      await page.waitForURL(`${provider.redirectUrl}**`);
      const code = new URL(landed.at(-1)!).searchParams.get('code');
      assert.ok(code, landed.join(' '));

      // The client gets its token and works over /mcp as the grant's agent.
      const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
      await transport.finishAuth(code);
      const client = new Client({ name: 'connector', version: '1' });
      await client.connect(transport);
      t.after(() => client.close());
      const names = (await client.listTools()).tools.map((x) => x.name);
      assert.ok(names.includes('webtest__quote') && !names.includes('audit__trail'), names.join(' '));
      const read = await client.callTool({ name: 'webtest__quote', arguments: { sku: 'mug', quantity: 2 } });
      assert.match(text(read), /2500/);

      // A gated write waits for her: the approval page, where she types the phrase.
      const args = { invoice_id: 7, amount_cents: 500 };
      const pending = await client.callTool({ name: 'webtest__charge', arguments: args });
      const env = errorEnvelopeOf(pending as CallToolResult);
      assert.equal(env?.error?.reason, 'dispatch_pending', text(pending));
      assert.deepEqual(await f.rt.store.read((q) => q.all('SELECT * FROM webtest_effects')), []);
      const approvalUrl = env?.consent?.approval_url;
      assert.ok(approvalUrl?.startsWith(`${origin}/approvals/`), approvalUrl);
      const again = await client.callTool({ name: 'webtest__charge', arguments: args });
      assert.equal(
        errorEnvelopeOf(again as CallToolResult)?.error?.reason,
        'dispatch_pending',
        'still waiting',
      );
      await page.goto(approvalUrl!);
      await page.locator('body[data-approval="pending"]').waitFor();
      await page.getByLabel('Type the phrase').fill('CHARGE $5.00 to invoice #7');
      await page.screenshot({ path: `${ARTIFACT_DIR}approval-1280.png`, fullPage: true });
      await page.getByRole('button', { name: 'Approve' }).click();
      await page.locator('body[data-approval="approved"]').waitFor();
      const done = await client.callTool({ name: 'webtest__charge', arguments: args });
      assert.equal(done.isError ?? false, false, text(done));
      const effects = await f.rt.store.read((q) =>
        q.all<{ kind: string }>('SELECT kind FROM webtest_effects'),
      );
      assert.deepEqual(
        effects.map((e) => e.kind),
        ['charge'],
      );
      await f.rt.auditBuffer.flush();
      const rows = await f.rt.store.read((q) =>
        q.all<{ action_type: string; agent_type: string; key_id: string | null }>(
          "SELECT action_type, agent_type, key_id FROM audit_log WHERE company_id = ? AND action_type IN ('oauth.grant', 'approvals.approve', 'webtest.charge') AND status = 'completed' ORDER BY audit_id",
          [f.companyId],
        ),
      );
      assert.deepEqual(
        rows.map((r) => [r.action_type, r.agent_type, r.key_id?.slice(0, 6) ?? null]),
        [
          ['oauth.grant', 'human:dashboard', null],
          ['approvals.approve', 'approval_page', null],
          ['webtest.charge', 'oauth:Test Connector', 'grant:'],
        ],
      );
      assert.deepEqual(pageErrors, []);
    },
  );
});

/**
 * Fixture of the OAuth tests: a test runtime (tenant phrase_channel `human`, the product default)
 * with the WebMCP test verbs, served by the real HTTP server with the dashboard (human sign-in),
 * `/mcp` and the OAuth mount, listening on 127.0.0.1; and the human's part of the authorization
 * dance done over HTTP with a signed-in session (no browser: the consent form is posted as a
 * browser would post it).
 */
import type { TestContext } from 'node:test';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { createHttpServer } from '../../src/transports/http/server.ts';
import { createWebmcpPlugin } from '../../src/transports/webmcp/index.ts';
import { mcpHttpPlugin } from '../../src/transports/mcp/http-plugin.ts';
import { createOAuthPlugin, type OAuthPluginOptions } from '../../src/oauth/plugin.ts';
import { portableMigration } from '../../src/store/migrations/render.ts';
import { signInHumanForTest } from '../../src/testing.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { testVerbs } from '../transports/webmcp/fixture.ts';

export interface OAuthFixture extends TestRuntime {
  /** The runtime's clock (ms since the epoch); move it on to expire tokens and grants. */
  clock: { ms: number };
  app: FastifyInstance;
  /** `http://127.0.0.1:<port>` */
  base: string;
}

export async function oauthFixture(t: TestContext, options: OAuthPluginOptions = {}): Promise<OAuthFixture> {
  const clock = { ms: Date.now() };
  const h = await createTestRuntime(t, { phraseChannel: 'human', clock: () => new Date(clock.ms) });
  await h.rt.store.migrate('webtest', [
    portableMigration(
      1,
      'webtest effects',
      'CREATE TABLE webtest_effects (id {id}, kind TEXT NOT NULL, detail TEXT NOT NULL, created_at TEXT NOT NULL);',
    ),
  ]);
  h.rt.register(...testVerbs);
  const app = createHttpServer(h.rt, {
    logger: false,
    plugins: [createWebmcpPlugin(), mcpHttpPlugin, createOAuthPlugin(options)],
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.after(async () => {
    app.server.closeAllConnections();
    await app.close();
  });
  const { port } = app.server.address() as AddressInfo;
  return { ...h, clock, app, base: `http://127.0.0.1:${port}` };
}

/** A cookie jar of name=value pairs, fed from Set-Cookie lines. */
export class Jar {
  readonly #c = new Map<string, string>();
  constructor(cookieHeader = '') {
    for (const part of cookieHeader.split(';')) {
      const eq = part.indexOf('=');
      if (eq > 0) this.#c.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
    }
  }
  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      if (eq > 0) this.#c.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim());
    }
  }
  get header(): string {
    return [...this.#c].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

/** What the human picks on the consent screen. */
export interface ConsentChoice {
  decision?: 'allow' | 'deny';
  role?: string;
  read_only?: boolean;
  expiry_days?: number;
  /** Only these toolsets (and `verbs`): the grant's allow-list. Absent with `verbs`: every toolset. */
  toolsets?: string[];
  /** Only these verbs (with `toolsets`). */
  verbs?: string[];
}

/**
 * Follow an authorization URL as the human's browser would: the authorization endpoint
 * redirects to the consent page; a signed-in human (user 1, the owner, unless `user` says
 * otherwise) posts the form; the authorization server redirects to the client's redirect URI.
 * Returns that final redirect URL (with `code` or `error`) and the consent page's HTML.
 */
export async function humanConsents(
  f: OAuthFixture,
  authorizationUrl: URL | string,
  choice: ConsentChoice = {},
  user: { user_id: number; role: 'owner' | 'admin' | 'employee' | 'read_only' } = {
    user_id: 1,
    role: 'owner',
  },
): Promise<{ redirect: URL; page: string; consentStatus: number }> {
  const s = await signInHumanForTest(f.rt, { company_id: f.companyId, ...user });
  const jar = new Jar(s.cookie);
  let res = await fetch(authorizationUrl, { redirect: 'manual', headers: { cookie: jar.header } });
  jar.take(res);
  if (res.status !== 303 && res.status !== 302)
    throw new Error(`authorize answered ${res.status}: ${await res.text()}`);
  const consentUrl = new URL(res.headers.get('location')!, f.base);
  if (consentUrl.origin !== f.base || !consentUrl.pathname.startsWith('/oauth/consent/'))
    return { redirect: consentUrl, page: '', consentStatus: 0 };
  res = await fetch(consentUrl, { headers: { cookie: jar.header } });
  const page = await res.text();
  const consentStatus = res.status;
  if (res.status !== 200) return { redirect: consentUrl, page, consentStatus };
  const form = new URLSearchParams({
    csrf: s.csrfToken,
    decision: choice.decision ?? 'allow',
    role: choice.role ?? 'admin',
    expiry_days: String(choice.expiry_days ?? 30),
    ...(choice.read_only === true ? { read_only: '1' } : {}),
  });
  if (choice.toolsets !== undefined || choice.verbs !== undefined) {
    form.set('reach', 'listed');
    for (const t of choice.toolsets ?? []) form.append('toolset', t);
    form.set('verbs', (choice.verbs ?? []).join(', '));
  }
  res = await fetch(consentUrl, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: jar.header, origin: f.base, 'content-type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
  });
  if (res.status !== 303) throw new Error(`consent answered ${res.status}: ${await res.text()}`);
  let next = new URL(res.headers.get('location')!, f.base);
  // The authorization server resumes and redirects to the client.
  for (let i = 0; i < 5 && next.origin === f.base; i++) {
    res = await fetch(next, { redirect: 'manual', headers: { cookie: jar.header } });
    jar.take(res);
    const loc = res.headers.get('location');
    if (loc === null) throw new Error(`resume answered ${res.status}: ${await res.text()}`);
    next = new URL(loc, f.base);
  }
  return { redirect: next, page, consentStatus };
}

/**
 * /dashboard.js — the dashboard page's script (bundled by esbuild at run time; no framework).
 *
 * On load it asks GET /api/v1/session: with a session it opens the dashboard, otherwise it shows
 * the login form (API key → POST /api/v1/session → HttpOnly session cookie + CSRF token). The
 * dashboard loads the catalogue, the trail, pending approvals and the reputation scoreboard, and
 * registers the `dashboard` WebMCP surface by importing /webmcp.js. Log out ends the session and
 * withdraws the tools.
 *
 * `document.body.dataset.state` is `login`, `loading` or `ready` (tests and styles may wait on it).
 * Spec: spec/transports.md §webmcp-dashboard.
 */
import { byId } from './element.ts';
import {
  createContext,
  describeError,
  type CatalogEntry,
  type DashboardContext,
  type SessionInfo,
} from './dashboard-context.ts';
import { loadApprovals } from './dashboard-approvals.ts';
import { setupCatalogue } from './dashboard-catalogue.ts';
import { loadReputation } from './dashboard-reputation.ts';
import { loadTrail, setupTrail } from './dashboard-trail.ts';
import { setCsrfToken, type Envelope } from './verb-client.ts';
import { noteCliLoginOnSignIn, showCliLogin } from './dashboard-cli-login.ts';

interface WebmcpModule {
  connect(options: { surface: 'dashboard' }): { ready: Promise<string[]>; mode: string; disconnect(): void };
  currentConnection(): { disconnect(): void } | undefined;
}

const WEBMCP_MODULE = '/webmcp.js';

function setState(state: 'login' | 'loading' | 'ready'): void {
  document.body.dataset.state = state;
}

async function json(res: Response): Promise<Envelope> {
  try {
    return (await res.json()) as Envelope;
  } catch {
    return {
      ok: false,
      verb: 'session',
      error: { reason: 'internal_error', message: `Unexpected answer (HTTP ${res.status}).` },
    };
  }
}

function showLogin(message = ''): void {
  setCsrfToken(undefined);
  byId('app').hidden = true;
  byId('session-bar').hidden = true;
  byId('receipt').hidden = true;
  byId('login-section').hidden = false;
  byId('login-error').textContent = message;
  noteCliLoginOnSignIn();
  setState('login');
  byId<HTMLInputElement>('api-key').focus();
}

async function connectWebmcp(): Promise<void> {
  const status = byId('webmcp-status');
  try {
    const mod = (await import(WEBMCP_MODULE)) as WebmcpModule;
    const connection = mod.connect({ surface: 'dashboard' });
    const names = await connection.ready;
    status.textContent =
      connection.mode === 'none'
        ? 'WebMCP: this browser offers no model context; the page tools are not registered.'
        : `WebMCP: ${names.length} tool${names.length === 1 ? '' : 's'} registered for agents (${connection.mode}).`;
  } catch (err) {
    status.textContent = `WebMCP: could not register the page tools (${String((err as Error)?.message ?? err)}).`;
  }
}

async function disconnectWebmcp(): Promise<void> {
  try {
    const mod = (await import(WEBMCP_MODULE)) as WebmcpModule;
    mod.currentConnection()?.disconnect();
  } catch {
    /* the module never loaded: nothing registered */
  }
}

async function enter(session: SessionInfo): Promise<void> {
  setState('loading');
  setCsrfToken(session.csrf_token);
  byId('login-section').hidden = true;
  byId('whoami').textContent =
    `Signed in as user ${session.user_id} (${session.role}) · ${session.tenant_name || `company ${session.company_id}`} (${session.tier})`;
  byId('session-bar').hidden = false;
  byId('app').hidden = false;
  let catalog: CatalogEntry[] = [];
  try {
    const res = await fetch('/api/v1/dashboard/catalog', { credentials: 'same-origin', cache: 'no-store' });
    catalog = ((await res.json()) as { verbs: CatalogEntry[] }).verbs;
  } catch (err) {
    byId('catalogue-status').textContent =
      `Could not load the catalogue: ${String((err as Error)?.message ?? err)}`;
  }
  const reload = (): void => {
    void Promise.all([loadTrail(ctx, true), loadApprovals(ctx), loadReputation(ctx)]);
  };
  const ctx: DashboardContext = createContext(session, catalog, reload);
  setupCatalogue(ctx);
  setupTrail(ctx);
  await Promise.all([loadTrail(ctx, true), loadApprovals(ctx), loadReputation(ctx), connectWebmcp()]);
  setState('ready');
  byId('main').focus();
  current = session;
  await showCliLogin(session);
}

/** The signed-in session (for the CLI login panel when the hash changes). */
let current: SessionInfo | undefined;

async function login(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  const input = byId<HTMLInputElement>('api-key');
  const error = byId('login-error');
  const key = input.value.trim();
  if (key === '') {
    error.textContent = 'Enter an API key (it starts with sk_solid_).';
    input.focus();
    return;
  }
  error.textContent = '';
  const res = await fetch('/api/v1/session', {
    method: 'POST',
    credentials: 'same-origin',
    cache: 'no-store',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: key }),
  });
  const env = await json(res);
  input.value = '';
  if (!env.ok) {
    error.textContent = `Sign-in failed: ${describeError(env)}`;
    input.focus();
    return;
  }
  await enter(env.result as unknown as SessionInfo);
}

async function logout(): Promise<void> {
  const token = document.cookie.match(/(?:^|;\s*)solid_csrf=([^;]*)/)?.[1];
  await fetch('/api/v1/session', {
    method: 'DELETE',
    credentials: 'same-origin',
    cache: 'no-store',
    headers: token !== undefined ? { 'x-csrf-token': decodeURIComponent(token) } : {},
  });
  await disconnectWebmcp();
  showLogin('You are signed out.');
}

async function start(): Promise<void> {
  byId<HTMLFormElement>('login-form').addEventListener('submit', (event) => void login(event));
  byId('logout').addEventListener('click', () => void logout());
  window.addEventListener('hashchange', () => {
    if (current !== undefined && !byId('app').hidden) void showCliLogin(current);
    else noteCliLoginOnSignIn();
  });
  const res = await fetch('/api/v1/session', { credentials: 'same-origin', cache: 'no-store' });
  const env = await json(res);
  if (env.ok) await enter(env.result as unknown as SessionInfo);
  else showLogin();
}

void start();

/**
 * /dashboard.js — the dashboard page's script (bundled by esbuild; no framework).
 *
 * On load it asks GET /api/v1/session: with a session it opens the dashboard, otherwise it shows
 * the sign-in form (API key → POST /api/v1/session → HttpOnly session cookie + CSRF token). The
 * dashboard is a set of views, one shown at a time, chosen by the location hash:
 *   #/waiting   approvals waiting for the signed-in admin or owner (default for them)
 *   #/activity  what agents did (default for other roles)
 *   #/receipt/N one action's receipt
 *   #/agents    reliability per verb
 *   #/catalogue every verb, searchable
 *   #/settings  caps, blocklist, typed phrases, this session
 * A view loads its data when shown, and only calls verbs the role may use. A call answering
 * session_invalid (expired or revoked session) returns to sign-in with a plain sentence. The page
 * registers the `dashboard` WebMCP surface by importing /webmcp.js (for agents in the browser;
 * nothing about it is shown to the human); sign-out ends the session and withdraws the tools.
 *
 * `document.body.dataset.state` is `login`, `loading` or `ready`; `dataset.view` the shown view;
 * `dataset.webmcp` the WebMCP mode (tests and styles may wait on them).
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
import { loadApprovals, startApprovals, stopApprovals, withWaitingCount } from './dashboard-approvals.ts';
import { setupCatalogue } from './dashboard-catalogue.ts';
import { loadCharts } from './dashboard-charts.ts';
import { loadReputation } from './dashboard-reputation.ts';
import { loadSettings } from './dashboard-settings.ts';
import { loadTrail, openReceipt, setupTrail } from './dashboard-trail.ts';
import { setCsrfToken, type Envelope } from './verb-client.ts';
import { cliLoginCode, noteCliLoginOnSignIn, showCliLogin } from './dashboard-cli-login.ts';

interface WebmcpModule {
  connect(options: { surface: 'dashboard' }): { ready: Promise<string[]>; mode: string; disconnect(): void };
  currentConnection(): { disconnect(): void } | undefined;
}

const WEBMCP_MODULE = '/webmcp.js';
const VIEWS = ['waiting', 'activity', 'receipt', 'agents', 'catalogue', 'settings'] as const;
type View = (typeof VIEWS)[number];

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
  stopApprovals();
  setCsrfToken(undefined);
  current = undefined;
  byId('app').hidden = true;
  byId('session-bar').hidden = true;
  byId('business-name').textContent = 'solid-verbs';
  document.title = 'Sign in · solid-verbs';
  byId('login-section').hidden = false;
  byId('login-error').textContent = message;
  noteCliLoginOnSignIn();
  setState('login');
  window.scrollTo(0, 0);
  byId<HTMLInputElement>('api-key').focus({ preventScroll: true });
}

async function connectWebmcp(): Promise<void> {
  try {
    const mod = (await import(WEBMCP_MODULE)) as WebmcpModule;
    const connection = mod.connect({ surface: 'dashboard' });
    await connection.ready;
    document.body.dataset.webmcp = connection.mode;
  } catch {
    document.body.dataset.webmcp = 'failed';
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

/** The view and its argument named by the hash; the role's default view otherwise. */
function route(ctx: DashboardContext): { view: View; arg?: string } {
  const m = /^#\/([a-z]+)(?:\/(.*))?$/.exec(location.hash);
  const name = m?.[1] as View | undefined;
  if (name !== undefined && (VIEWS as readonly string[]).includes(name))
    return m?.[2] !== undefined ? { view: name, arg: m[2] } : { view: name };
  return { view: ctx.canUse('approvals.list') ? 'waiting' : 'activity' };
}

/** Show the view of the hash and load its data. */
async function show(ctx: DashboardContext, focus: boolean): Promise<void> {
  const { view, arg } = route(ctx);
  for (const v of VIEWS) byId(`view-${v}`).hidden = v !== view;
  for (const a of document.querySelectorAll<HTMLAnchorElement>('nav.views a[data-view]')) {
    if (a.dataset.view === view) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.body.dataset.view = view;
  const titles: Record<View, string> = {
    waiting: 'Waiting for you',
    activity: 'Activity',
    receipt: 'Receipt',
    agents: 'Agents & verbs',
    catalogue: 'Catalogue',
    settings: 'Settings',
  };
  document.title = withWaitingCount(`${titles[view]} · ${ctx.session.tenant_name || 'solid-verbs'}`);
  switch (view) {
    case 'waiting':
      await loadApprovals(ctx);
      break;
    case 'activity':
      await Promise.all([loadTrail(ctx, true), loadCharts(ctx)]);
      break;
    case 'receipt':
      await openReceipt(ctx, arg === undefined ? undefined : Number(arg));
      break;
    case 'agents':
      await loadReputation(ctx);
      break;
    case 'catalogue':
      break;
    case 'settings':
      await loadSettings(ctx);
      break;
  }
  if (focus) byId(`view-${view}`).querySelector<HTMLElement>('h1')?.focus({ preventScroll: true });
  window.scrollTo(0, 0);
}

async function enter(session: SessionInfo): Promise<void> {
  setState('loading');
  setCsrfToken(session.csrf_token);
  byId('login-section').hidden = true;
  const business = session.tenant_name || `Company ${session.company_id}`;
  byId('business-name').textContent = business;
  byId('whoami').textContent = `User ${session.user_id} · ${session.role}`;
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
  const ctx: DashboardContext = createContext(
    session,
    catalog,
    () => {
      void show(ctx, false);
      if (route(ctx).view !== 'waiting') void loadApprovals(ctx, false);
    },
    () => showLogin('Your session has ended. Sign in again to continue.'),
  );
  current = ctx;
  setupCatalogue(ctx);
  setupTrail(ctx);
  startApprovals(ctx);
  if (cliLoginCode() === undefined) {
    const first = route(ctx).view;
    await Promise.all([
      show(ctx, false),
      first !== 'waiting' && ctx.canUse('approvals.list') ? loadApprovals(ctx, false) : undefined,
      connectWebmcp(),
    ]);
  } else await connectWebmcp();
  setState('ready');
  window.scrollTo(0, 0);
  await showCliLogin(session);
}

/** The signed-in dashboard (for the hash router and the CLI login panel). */
let current: DashboardContext | undefined;

async function login(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  const input = byId<HTMLInputElement>('api-key');
  const error = byId('login-error');
  const key = input.value.trim();
  if (key === '') {
    error.textContent = 'Enter your API key (it starts with sk_solid_).';
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
    if (current === undefined || byId('app').hidden) {
      noteCliLoginOnSignIn();
      return;
    }
    if (cliLoginCode() !== undefined) void showCliLogin(current.session);
    else void show(current, true);
  });
  const res = await fetch('/api/v1/session', { credentials: 'same-origin', cache: 'no-store' });
  const env = await json(res);
  if (env.ok) await enter(env.result as unknown as SessionInfo);
  else showLogin();
}

void start();

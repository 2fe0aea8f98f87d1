/**
 * /dashboard.js — the dashboard page's script (bundled by esbuild; no framework).
 *
 * On load it asks GET /api/v1/session: with a session it opens the dashboard, otherwise it shows
 * the human sign-in (a passkey, or the authenticator app's code: human-sign-in.ts; an API key is
 * an agent's credential and never signs in here) → HttpOnly session cookie + CSRF token. The
 * same page serves two paths of its own: `/enrol/<token>` (a one-time enrolment link: register
 * a passkey or an authenticator app) and `/approvals/<approval_id>` (the approval page:
 * approval-page.ts; sign-in first when needed, then back to it). The dashboard is a set of views,
 * one shown at a time, chosen by the location hash:
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
  type CatalogEntry,
  type DashboardContext,
  type SessionInfo,
} from './dashboard-context.ts';
import { loadApprovals, startApprovals, stopApprovals, withWaitingCount } from './dashboard-approvals.ts';
import { setupCatalogue } from './dashboard-catalogue.ts';
import { loadCharts } from './dashboard-charts.ts';
import { loadAlerts } from './dashboard-alerts.ts';
import { setBusinessTimeZone } from './dashboard-words.ts';
import { loadReputation } from './dashboard-reputation.ts';
import { loadSettings } from './dashboard-settings.ts';
import { loadConnectedApps } from './dashboard-apps.ts';
import { loadTrail, openReceipt, setupTrail } from './dashboard-trail.ts';
import { setupExport } from './dashboard-export.ts';
import { setCsrfToken } from './verb-client.ts';
import type { Envelope } from '../src/spec/types.ts';
import { noteCliLoginOnSignIn, onCliLoginPage, showCliLogin } from './dashboard-cli-login.ts';
import { cancelPasskeyPrompt, enrolmentToken, setupSignIn, showEnrolment } from './human-sign-in.ts';
import { approvalIdOfPath, showApprovalPage } from './approval-page.ts';

interface WebmcpModule {
  connect(options: { surface: 'dashboard' }): { ready: Promise<string[]>; mode: string; disconnect(): void };
  currentConnection(): { disconnect(): void } | undefined;
}

const WEBMCP_MODULE = '/webmcp.js';
const VIEWS = ['waiting', 'activity', 'receipt', 'agents', 'catalogue', 'settings'] as const;
type View = (typeof VIEWS)[number];

function setState(state: 'login' | 'loading' | 'ready' | 'enrol' | 'approval'): void {
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
  byId('approval-section').hidden = true;
  byId('enrol-section').hidden = true;
  byId('login-section').hidden = false;
  byId('login-error').textContent =
    message ||
    (oauthReturnPath() !== undefined ? 'Sign in to answer the app that asks to act for your business.' : '');
  noteCliLoginOnSignIn();
  setState('login');
  window.scrollTo(0, 0);
  byId<HTMLButtonElement>('passkey-signin').focus({ preventScroll: true });
}

/**
 * The OAuth consent page that sent the person here to sign in (`/?oauth_return=/oauth/consent/<uid>`,
 * src/oauth/consent.ts), if any: only that path on this origin, so it is no open redirect.
 */
function oauthReturnPath(): string | undefined {
  const back = new URLSearchParams(location.search).get('oauth_return');
  return back !== null && /^\/oauth\/consent\/[A-Za-z0-9_-]{1,100}$/.test(back) ? back : undefined;
}

/** Signed in (on load, or by a sign-in or enrolment): the approval page of the path, else the dashboard. */
async function signedIn(session: SessionInfo): Promise<void> {
  cancelPasskeyPrompt();
  // A human signed in to answer an app's OAuth request: back to its consent page.
  const oauthBack = session.actor === 'human' ? oauthReturnPath() : undefined;
  if (oauthBack !== undefined) return location.assign(oauthBack);
  const approvalId = approvalIdOfPath();
  if (approvalId === undefined) return enter(session);
  setCsrfToken(session.csrf_token);
  byId('login-section').hidden = true;
  byId('app').hidden = true;
  showWhoami(session);
  setState('approval');
  await showApprovalPage(approvalId, () => showLogin('Your session has ended. Sign in again to continue.'));
}

function showWhoami(session: SessionInfo): void {
  byId('business-name').textContent = session.tenant_name || `Company ${session.company_id}`;
  byId('whoami').textContent = `${session.user_name ?? `User ${session.user_id}`} · ${session.role}`;
  byId('session-bar').hidden = false;
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
  const alerts = loadAlerts(ctx);
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
      await Promise.all([loadSettings(ctx), loadConnectedApps(ctx)]);
      break;
  }
  await alerts;
  if (focus) byId(`view-${view}`).querySelector<HTMLElement>('h1')?.focus({ preventScroll: true });
  window.scrollTo(0, 0);
}

async function enter(session: SessionInfo): Promise<void> {
  setState('loading');
  setCsrfToken(session.csrf_token);
  byId('login-section').hidden = true;
  byId('approval-section').hidden = true;
  showWhoami(session);
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
  // Times are the business's (its time zone, named on screen), not this browser's.
  if (ctx.canUse('audit.money_moved')) {
    const { envelope } = await ctx.call('audit.money_moved', { limit: 1 });
    if (envelope.ok)
      setBusinessTimeZone((envelope.result as { data: { time_zone?: string } }).data.time_zone);
  }
  setupCatalogue(ctx);
  setupTrail(ctx);
  setupExport(ctx);
  startApprovals(ctx);
  if (!onCliLoginPage()) {
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
  setupSignIn(signedIn);
  byId('logout').addEventListener('click', () => void logout());
  window.addEventListener('hashchange', () => {
    if (current === undefined || byId('app').hidden) {
      noteCliLoginOnSignIn();
      return;
    }
    if (onCliLoginPage()) void showCliLogin(current.session);
    else void show(current, true);
  });
  const token = enrolmentToken();
  if (token !== undefined) return showEnrolment(token, signedIn);
  const res = await fetch('/api/v1/session', { credentials: 'same-origin', cache: 'no-store' });
  const env = await json(res);
  if (env.ok) await signedIn(env.result as unknown as SessionInfo);
  else
    showLogin(
      approvalIdOfPath() === undefined ? '' : 'Sign in to see the action an agent asks you to approve.',
    );
}

void start();

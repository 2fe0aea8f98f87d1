/**
 * Settings → "Connected apps": the tenant's OAuth grants (spec/oauth.md §grants) — which app a
 * person allowed to act for the business, up to which role, read-only or not, until when — with
 * Revoke (POST /api/v1/oauth/grants/{id}/revoke, the session's CSRF token). A person revokes the
 * grants they made; an admin or the owner any grant. The section stays hidden when the server
 * has no OAuth mount (the route answers 404).
 *
 * `section#connected-apps` lists `li[data-grant]` with `data-state` `live`; a revoked grant
 * leaves the list.
 */
import { byId, el } from './element.ts';
import { ROLE_RANK, type DashboardContext } from './dashboard-context.ts';

interface GrantRow {
  grant_id: string;
  client_name: string;
  user_id: number;
  user_name: string;
  role: string;
  read_only: boolean;
  scope?: { toolsets?: string[]; verbs?: string[] } | null;
  expires_at: string;
  revoked_at: string | null;
}

interface Answer {
  ok: boolean;
  result?: { grants?: GrantRow[] };
  error?: { message?: string };
}

async function getJson(path: string, init: RequestInit = {}): Promise<{ status: number; body: Answer }> {
  const res = await fetch(path, { credentials: 'same-origin', cache: 'no-store', ...init });
  let body: Answer;
  try {
    body = (await res.json()) as Answer;
  } catch {
    body = { ok: false, error: { message: `HTTP ${res.status}` } };
  }
  return { status: res.status, body };
}

/** (Re)load the Connected apps section of the settings view. */
export async function loadConnectedApps(ctx: DashboardContext): Promise<void> {
  const box = byId('connected-apps');
  const title = el('h2', { id: 'connected-apps-title' }, 'Connected apps');
  let answer: { status: number; body: Answer };
  try {
    answer = await getJson('/api/v1/oauth/grants');
  } catch {
    box.hidden = true;
    return;
  }
  if (answer.status === 404) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  if (!answer.body.ok) {
    box.replaceChildren(
      title,
      el('p', {}, `Could not load the connected apps: ${answer.body.error?.message ?? ''}`),
    );
    return;
  }
  const now = Date.now();
  const live = (answer.body.result?.grants ?? []).filter(
    (g) => g.revoked_at === null && Date.parse(g.expires_at) > now,
  );
  const admin = (ROLE_RANK[ctx.session.role] ?? 0) >= (ROLE_RANK.admin ?? 2);
  const status = el('p', { role: 'status' });
  const intro = el(
    'p',
    {},
    'Apps such as Claude or ChatGPT that a person of this business allowed to act as an agent. They never approve, type a phrase or change these settings; revoking stops them at their next request.',
  );
  if (live.length === 0) {
    box.replaceChildren(title, intro, el('p', {}, 'No app is connected.'));
    return;
  }
  const items = live.map((g) => {
    const reach =
      g.scope === null || g.scope === undefined
        ? ''
        : `, only ${[...(g.scope.toolsets ?? []), ...(g.scope.verbs ?? [])].join(', ') || 'the core verbs'}`;
    const what = `${g.client_name}: acts up to ${g.role}${g.read_only ? ', read only' : ''}${reach}; allowed by ${g.user_name || `user ${g.user_id}`}; until ${new Date(g.expires_at).toLocaleString()}.`;
    const canRevoke = admin || g.user_id === ctx.session.user_id;
    const button = canRevoke
      ? el('button', { type: 'button', 'aria-label': `Revoke ${g.client_name}` }, 'Revoke')
      : null;
    button?.addEventListener('click', () => {
      button.disabled = true;
      void (async () => {
        const r = await getJson(`/api/v1/oauth/grants/${encodeURIComponent(g.grant_id)}/revoke`, {
          method: 'POST',
          headers: { 'x-csrf-token': ctx.session.csrf_token },
        });
        if (r.body.ok) await loadConnectedApps(ctx);
        else {
          button.disabled = false;
          status.textContent = `Could not revoke: ${r.body.error?.message ?? ''}`;
        }
      })();
    });
    return el('li', { 'data-grant': g.grant_id, 'data-state': 'live' }, what, ' ', button);
  });
  box.replaceChildren(title, intro, el('ul', {}, ...items), status);
}

/**
 * Dashboard panel: approve a command-line login (`solid login` browser flow). The CLI prints
 * `<server>/#/cli-login?code=ABCD-EFGH`; a signed-in human sees the code, the CLI's name and what
 * approving does, and approves (POST /api/v1/cli-login/{code}/approve with the session's CSRF
 * token: the CLI receives a NEW API key for this user with this user's role) or denies.
 *
 * `section#cli-login[data-state]` is `loading`, `open`, `approved`, `denied` or `unusable`.
 * Spec: spec/transports.md §remote-login.
 */
import { byId, el } from './element.ts';
import { describeError, type SessionInfo } from './dashboard-context.ts';
import type { Envelope } from '../src/spec/types.ts';

/** The code of a `#/cli-login?code=…` location hash, if that is the hash. */
export function cliLoginCode(hash: string = location.hash): string | undefined {
  const m = /^#\/cli-login\?(.*)$/.exec(hash);
  if (m === null) return undefined;
  const code = new URLSearchParams(m[1]).get('code');
  return code === null || code.trim() === '' ? undefined : code.trim();
}

/** On the sign-in form: say why to sign in when a CLI login link was opened. */
export function noteCliLoginOnSignIn(): void {
  const code = cliLoginCode();
  const note = byId('login-cli-note');
  note.hidden = code === undefined;
  note.textContent =
    code === undefined ? '' : `Sign in to approve the command-line login with the code ${code}.`;
}

async function post(path: string, csrf: string): Promise<Envelope> {
  try {
    const res = await fetch(path, {
      method: 'POST',
      credentials: 'same-origin',
      cache: 'no-store',
      headers: { 'x-csrf-token': csrf },
    });
    return (await res.json()) as Envelope;
  } catch (err) {
    return {
      ok: false,
      verb: 'cli_login',
      error: { reason: 'network_error', message: String((err as Error)?.message ?? err) },
    };
  }
}

/** Show (or hide) the panel for the current hash. */
export async function showCliLogin(session: SessionInfo): Promise<void> {
  const section = byId('cli-login');
  const body = byId('cli-login-body');
  const code = cliLoginCode();
  if (code === undefined) {
    section.hidden = true;
    return;
  }
  section.hidden = false;
  section.dataset.state = 'loading';
  body.replaceChildren(el('p', { role: 'status' }, 'Loading the login request…'));
  let env: Envelope;
  try {
    const res = await fetch(`/api/v1/cli-login/${encodeURIComponent(code)}`, {
      credentials: 'same-origin',
      cache: 'no-store',
    });
    env = (await res.json()) as Envelope;
  } catch (err) {
    env = {
      ok: false,
      verb: 'cli_login',
      error: { reason: 'network_error', message: String((err as Error)?.message ?? err) },
    };
  }
  if (!env.ok || env.result?.status !== 'pending') {
    section.dataset.state = 'unusable';
    const why = env.ok ? `it was already ${String(env.result?.status)}.` : describeError(env);
    body.replaceChildren(
      el('p', { class: 'error', role: 'alert' }, `This login link cannot be used: ${why}`),
    );
    return;
  }
  const r = env.result as { code: string; client_name: string; created_at: string; expires_at: string };
  const status = el('p', { role: 'status', id: 'cli-login-status' });
  const approve = el('button', { type: 'button' }, 'Approve');
  const deny = el('button', { type: 'button', class: 'secondary' }, 'Deny');
  body.replaceChildren(
    el(
      'p',
      {},
      'A command line asks to sign in as you. Approve only if you just ran ',
      el('code', {}, 'solid login'),
      ' and your terminal shows this same code:',
    ),
    el('p', { class: 'cli-code' }, el('code', { id: 'cli-login-code' }, r.code)),
    el(
      'dl',
      { class: 'fields' },
      el('dt', {}, 'Client'),
      el('dd', {}, r.client_name),
      el('dt', {}, 'Requested'),
      el('dd', {}, el('time', { datetime: r.created_at }, new Date(r.created_at).toLocaleString())),
      el('dt', {}, 'Expires'),
      el('dd', {}, el('time', { datetime: r.expires_at }, new Date(r.expires_at).toLocaleString())),
      el('dt', {}, 'It receives'),
      el(
        'dd',
        {},
        `a new API key for user ${session.user_id} (${session.role}) of ${session.tenant_name || `company ${session.company_id}`}`,
      ),
    ),
    el('p', { class: 'actions' }, approve, deny),
    status,
  );
  section.dataset.state = 'open';
  const decide = async (action: 'approve' | 'deny') => {
    approve.disabled = true;
    deny.disabled = true;
    const answer = await post(
      `/api/v1/cli-login/${encodeURIComponent(r.code)}/${action}`,
      session.csrf_token,
    );
    if (!answer.ok) {
      status.textContent = `Not ${action === 'approve' ? 'approved' : 'denied'}: ${describeError(answer)}`;
      approve.disabled = false;
      deny.disabled = false;
      return;
    }
    section.dataset.state = action === 'approve' ? 'approved' : 'denied';
    status.textContent =
      action === 'approve'
        ? 'Approved. Go back to your terminal: the command line is now signed in.'
        : 'Denied. The command line was told so.';
    history.replaceState(null, '', `${location.pathname}${location.search}`);
  };
  approve.addEventListener('click', () => void decide('approve'));
  deny.addEventListener('click', () => void decide('deny'));
  section.focus();
}

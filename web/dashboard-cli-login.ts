/**
 * Dashboard panel: approve a command-line login (`solid login` browser flow, RFC 8628 style). The
 * CLI prints `<server>/#/cli-login` and, only in its own terminal, a code. A signed-in human
 * types that code here (a link never carries it: a code in a link could come from anyone who
 * started a login), sees the CLI's name and who asked (the address and user agent the server
 * saw), picks the new key's role (at most their own) and approves (POST
 * /api/v1/cli-login/{code}/approve {role} with the session's CSRF token: the CLI receives a NEW
 * API key for this user with that role) or denies.
 *
 * `section#cli-login[data-state]` is `enter` (the code field), `loading`, `open`, `approved` or
 * `denied`. Spec: spec/transports.md §remote-login.
 */
import { byId, el } from './element.ts';
import { describeError, type SessionInfo } from './dashboard-context.ts';
import type { Envelope } from '../src/spec/types.ts';

const ROLES = ['read_only', 'employee', 'admin', 'owner'] as const;

/** Is this location hash the CLI login page (`#/cli-login`, with or without a query)? */
export function onCliLoginPage(hash: string = location.hash): boolean {
  return /^#\/cli-login(?:\?.*)?$/.test(hash);
}

/** On the sign-in form: say why to sign in when the CLI login page was opened. */
export function noteCliLoginOnSignIn(): void {
  const note = byId('login-cli-note');
  const open = onCliLoginPage();
  note.hidden = !open;
  note.textContent = open
    ? 'Sign in to approve a command-line login. You will then type the code your terminal shows.'
    : '';
}

async function call(path: string, init: RequestInit = {}): Promise<Envelope> {
  try {
    const res = await fetch(path, { credentials: 'same-origin', cache: 'no-store', ...init });
    return (await res.json()) as Envelope;
  } catch (err) {
    return {
      ok: false,
      verb: 'cli_login',
      error: { reason: 'network_error', message: String((err as Error)?.message ?? err) },
    };
  }
}

interface PendingLogin {
  code: string;
  client_name: string;
  requester: { address: string; user_agent: string };
  status: string;
  created_at: string;
  expires_at: string;
}

/** Show (or hide) the panel for the current hash: first the field for the terminal's code. */
export async function showCliLogin(session: SessionInfo): Promise<void> {
  const section = byId('cli-login');
  if (!onCliLoginPage()) {
    section.hidden = true;
    return;
  }
  section.hidden = false;
  askForCode(session);
  section.focus();
}

function askForCode(session: SessionInfo, problem?: string): void {
  const section = byId('cli-login');
  const body = byId('cli-login-body');
  const input = el('input', {
    id: 'cli-login-code-input',
    name: 'code',
    autocomplete: 'off',
    autocapitalize: 'characters',
    spellcheck: 'false',
    required: true,
    maxlength: 12,
    placeholder: 'ABCD-EFGH',
  });
  const form = el(
    'form',
    { id: 'cli-login-form' },
    el(
      'p',
      {},
      'A command line asks to sign in as you. Type the code that ',
      el('code', {}, 'solid login'),
      ' shows in your own terminal. Do not type a code someone sent you.',
    ),
    el('label', { for: 'cli-login-code-input' }, 'Code shown in your terminal'),
    input,
    el('p', { class: 'actions' }, el('button', { type: 'submit' }, 'Continue')),
    el('p', { class: 'error', role: 'alert', id: 'cli-login-status' }, problem ?? ''),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void lookUp(session, input.value);
  });
  body.replaceChildren(form);
  section.dataset.state = 'enter';
  input.focus();
}

async function lookUp(session: SessionInfo, typed: string): Promise<void> {
  const section = byId('cli-login');
  const code = typed.trim().toUpperCase();
  if (code === '') return askForCode(session, 'Type the code your terminal shows.');
  section.dataset.state = 'loading';
  const env = await call(`/api/v1/cli-login/${encodeURIComponent(code)}`);
  if (!env.ok)
    return askForCode(
      session,
      env.error?.reason === 'not_found'
        ? 'No open login has that code: check it against your terminal (codes live 10 minutes and work once).'
        : describeError(env),
    );
  const r = env.result as unknown as PendingLogin;
  if (r.status !== 'pending')
    return askForCode(
      session,
      `That code was already ${r.status === 'consumed' ? 'approved and used' : r.status}: run solid login again for a new one.`,
    );
  showRequest(session, r);
}

function showRequest(session: SessionInfo, r: PendingLogin): void {
  const section = byId('cli-login');
  const body = byId('cli-login-body');
  const status = el('p', { role: 'status', id: 'cli-login-status' });
  const own = ROLES.indexOf(session.role as (typeof ROLES)[number]);
  const role = el(
    'select',
    { id: 'cli-login-role', name: 'role', required: true },
    el('option', { value: '', selected: true, disabled: true }, 'Choose a role…'),
    ...ROLES.slice(0, own + 1).map((name) => el('option', { value: name }, name)),
  );
  const approve = el('button', { type: 'button', disabled: true }, 'Approve');
  const deny = el('button', { type: 'button', class: 'secondary' }, 'Deny');
  role.addEventListener('change', () => {
    approve.disabled = role.value === '';
  });
  body.replaceChildren(
    el('p', {}, 'Approve only if you just ran ', el('code', {}, 'solid login'), ' and this is your request:'),
    el('p', { class: 'cli-code' }, el('code', { id: 'cli-login-code' }, r.code)),
    el(
      'dl',
      { class: 'fields' },
      el('dt', {}, 'Client'),
      el('dd', {}, r.client_name),
      el('dt', {}, 'Asked from'),
      el('dd', { id: 'cli-login-address' }, r.requester.address || 'unknown'),
      el('dt', {}, 'User agent'),
      el('dd', { id: 'cli-login-agent' }, r.requester.user_agent || 'none sent'),
      el('dt', {}, 'Requested'),
      el('dd', {}, el('time', { datetime: r.created_at }, new Date(r.created_at).toLocaleString())),
      el('dt', {}, 'Expires'),
      el('dd', {}, el('time', { datetime: r.expires_at }, new Date(r.expires_at).toLocaleString())),
      el('dt', {}, 'It receives'),
      el(
        'dd',
        {},
        `a new API key for ${session.user_name || `user ${session.user_id}`} of ${session.tenant_name || `company ${session.company_id}`}, with the role you choose (yours is ${session.role})`,
      ),
    ),
    el('p', {}, el('label', { for: 'cli-login-role' }, 'Role of the new key'), ' ', role),
    el('p', { class: 'actions' }, approve, deny),
    status,
  );
  section.dataset.state = 'open';
  const decide = async (action: 'approve' | 'deny') => {
    approve.disabled = true;
    deny.disabled = true;
    const answer = await call(`/api/v1/cli-login/${encodeURIComponent(r.code)}/${action}`, {
      method: 'POST',
      headers: { 'x-csrf-token': session.csrf_token, 'content-type': 'application/json' },
      body: JSON.stringify(action === 'approve' ? { role: role.value } : {}),
    });
    if (!answer.ok) {
      status.textContent = `Not ${action === 'approve' ? 'approved' : 'denied'}: ${describeError(answer)}`;
      approve.disabled = role.value === '';
      deny.disabled = false;
      return;
    }
    section.dataset.state = action === 'approve' ? 'approved' : 'denied';
    status.textContent =
      action === 'approve'
        ? `Approved with the role ${role.value}. Go back to your terminal: the command line is now signed in.`
        : 'Denied. The command line was told so.';
    history.replaceState(null, '', `${location.pathname}${location.search}`);
  };
  approve.addEventListener('click', () => void decide('approve'));
  deny.addEventListener('click', () => void decide('deny'));
}

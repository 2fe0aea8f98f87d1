/**
 * The human sign-in and enrolment screens of the dashboard (no API key: an API key is an agent's
 * credential and never signs a person in). spec/consent.md §human-sign-in
 *
 *   sign-in      "Sign in with a passkey" (WebAuthn through @simplewebauthn/browser, bundled), or
 *                the fallback: business number, user number and the authenticator app's code
 *   /enrol/T     the one-time link: who it enrols, "Register a passkey", or "Use an authenticator
 *                app instead" (the otpauth:// link and the secret, shown once, then a first code)
 *
 * Each success answers the session envelope and the page enters the dashboard (or returns to the
 * approval page it was opened on). `document.body.dataset.enrol` is `ready`, `totp`, `done` or
 * `invalid` (tests wait on it).
 */
import { startAuthentication, startRegistration, WebAuthnAbortService } from '@simplewebauthn/browser';
import { byId, el } from './element.ts';
import type { SessionInfo } from './dashboard-context.ts';
import type { Envelope } from '../src/spec/types.ts';

/** POST a JSON body to a sign-in route; resolves to the envelope, never throws. */
async function post(url: string, body: unknown): Promise<Envelope> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      credentials: 'same-origin',
      cache: 'no-store',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return (await res.json()) as Envelope;
  } catch (err) {
    return {
      ok: false,
      verb: 'session',
      error: { reason: 'network_error', message: `The server could not be reached (${String(err)}).` },
    };
  }
}

function words(env: Envelope): string {
  const e = env.error;
  if (e === undefined) return 'Something went wrong.';
  return `${e.message}${e.hint ? ` ${e.hint}` : ''}`;
}

/** A browser error of a WebAuthn ceremony in plain words (the person cancelled, no authenticator…). */
function ceremonyWords(err: unknown): string {
  const name = (err as { name?: string })?.name ?? '';
  if (name === 'NotAllowedError' || name === 'AbortError')
    return 'The passkey request was cancelled or timed out. Try again, or use your authenticator app.';
  if (name === 'InvalidStateError')
    return 'This device already holds a passkey for you here: sign in with it.';
  if (name === 'SecurityError')
    return 'Passkeys need this page opened at http://localhost (or the server’s name), not an IP address.';
  return `The browser could not use a passkey here (${String((err as Error)?.message ?? err)}).`;
}

/** Wire the sign-in section; `signedIn` runs with the new session. */
export function setupSignIn(signedIn: (session: SessionInfo) => Promise<void>): void {
  const error = byId('login-error');
  byId<HTMLButtonElement>('passkey-signin').addEventListener('click', () => {
    void (async () => {
      error.textContent = '';
      const options = await post('/api/v1/signin/passkey/options', {});
      if (!options.ok) {
        error.textContent = `Sign-in failed: ${words(options)}`;
        return;
      }
      let response;
      try {
        response = await startAuthentication({ optionsJSON: options.result!.options as never });
      } catch (err) {
        error.textContent = ceremonyWords(err);
        return;
      }
      const env = await post('/api/v1/signin/passkey/verify', { response });
      if (!env.ok) {
        error.textContent = `Sign-in failed: ${words(env)}`;
        return;
      }
      await signedIn(env.result as unknown as SessionInfo);
    })();
  });
  byId<HTMLFormElement>('totp-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void (async () => {
      error.textContent = '';
      const form = byId<HTMLFormElement>('totp-form');
      const data = new FormData(form);
      const env = await post('/api/v1/signin/totp', {
        company_id: Number(data.get('company_id')),
        user_id: Number(data.get('user_id')),
        code: String(data.get('code') ?? '').trim(),
      });
      byId<HTMLInputElement>('totp-code').value = '';
      if (!env.ok) {
        error.textContent = `Sign-in failed: ${words(env)}`;
        byId<HTMLInputElement>('totp-code').focus();
        return;
      }
      await signedIn(env.result as unknown as SessionInfo);
    })();
  });
}

/** Cancel a passkey prompt in flight (the page is leaving the sign-in screen). */
export function cancelPasskeyPrompt(): void {
  WebAuthnAbortService.cancelCeremony();
}

/** The token of an enrolment path (`/enrol/<token>`), or undefined. */
export function enrolmentToken(): string | undefined {
  const m = /^\/enrol\/([A-Za-z0-9_-]{1,80})$/.exec(location.pathname);
  return m?.[1];
}

function setEnrol(state: 'ready' | 'totp' | 'done' | 'invalid'): void {
  document.body.dataset.enrol = state;
}

/**
 * Show the enrolment screen for the link's token: who it enrols, then a passkey registration or
 * the TOTP fallback; `signedIn` runs with the session the enrolment opened.
 */
export async function showEnrolment(
  token: string,
  signedIn: (session: SessionInfo) => Promise<void>,
): Promise<void> {
  document.title = 'Set up your sign-in · solid-verbs';
  byId('login-section').hidden = true;
  const section = byId('enrol-section');
  section.hidden = false;
  const status = byId('enrol-status');
  const body = byId('enrol-body');
  body.replaceChildren();
  document.body.dataset.state = 'enrol';
  const info = await post('/api/v1/enrol/info', { token });
  if (!info.ok) {
    status.textContent = words(info);
    setEnrol('invalid');
    return;
  }
  const r = info.result as {
    tenant_name: string;
    user_name: string;
    role: string;
    company_id: number;
    user_id: number;
    expires_at: string;
    passkeys_available: boolean;
  };
  byId('business-name').textContent = r.tenant_name || 'solid-verbs';
  status.textContent = `Welcome, ${r.user_name}. You are joining ${r.tenant_name} as ${r.role}. Set up how you sign in: this link works once.`;
  const problem = el('p', { class: 'error', role: 'alert', id: 'enrol-error' });
  const passkey = el('button', { type: 'button', id: 'enrol-passkey' }, 'Register a passkey');
  const totp = el(
    'button',
    { type: 'button', class: 'secondary', id: 'enrol-totp' },
    'Use an authenticator app instead',
  );
  passkey.disabled = !r.passkeys_available;
  body.append(
    el(
      'p',
      {},
      'A passkey lives on this device (fingerprint, face or PIN). It is how you approve what agents ask: no agent can type it for you.',
    ),
    el('p', { class: 'actions' }, passkey, totp),
    problem,
  );
  if (!r.passkeys_available)
    problem.textContent =
      'Passkeys need this page opened at http://localhost (or the server’s name), not an IP address.';
  passkey.addEventListener('click', () => {
    void (async () => {
      problem.textContent = '';
      const options = await post('/api/v1/enrol/passkey/options', { token });
      if (!options.ok) {
        problem.textContent = words(options);
        return;
      }
      let response;
      try {
        response = await startRegistration({ optionsJSON: options.result!.options as never });
      } catch (err) {
        problem.textContent = ceremonyWords(err);
        return;
      }
      const env = await post('/api/v1/enrol/passkey/verify', { token, response });
      if (!env.ok) {
        problem.textContent = words(env);
        return;
      }
      setEnrol('done');
      history.replaceState(null, '', '/');
      section.hidden = true;
      await signedIn(env.result as unknown as SessionInfo);
    })();
  });
  totp.addEventListener('click', () => {
    void (async () => {
      problem.textContent = '';
      const started = await post('/api/v1/enrol/totp/start', { token });
      if (!started.ok) {
        problem.textContent = words(started);
        return;
      }
      const s = started.result as { uri: string; secret: string };
      const code = el('input', {
        id: 'enrol-totp-code',
        name: 'code',
        inputmode: 'numeric',
        autocomplete: 'one-time-code',
        pattern: '[0-9]{6}',
        required: true,
      });
      const form = el(
        'form',
        { id: 'enrol-totp-form' },
        el('label', { for: 'enrol-totp-code' }, 'The 6-digit code your app shows now'),
        code,
        el('button', { type: 'submit' }, 'Confirm and sign in'),
      );
      body.replaceChildren(
        el('p', {}, 'Add this account to your authenticator app. It is shown once: keep it only in the app.'),
        el(
          'dl',
          { class: 'fields' },
          el('dt', {}, 'Link for the app'),
          el('dd', {}, el('a', { href: s.uri, id: 'enrol-totp-uri' }, s.uri)),
          el('dt', {}, 'Secret (to type by hand)'),
          el('dd', {}, el('code', { id: 'enrol-totp-secret' }, s.secret)),
          el('dt', {}, 'Your sign-in numbers'),
          el('dd', {}, `business ${r.company_id}, user ${r.user_id}`),
        ),
        form,
        problem,
      );
      setEnrol('totp');
      code.focus();
      form.addEventListener('submit', (event) => {
        event.preventDefault();
        void (async () => {
          const env = await post('/api/v1/enrol/totp/verify', { token, code: code.value.trim() });
          code.value = '';
          if (!env.ok) {
            problem.textContent = words(env);
            return;
          }
          setEnrol('done');
          history.replaceState(null, '', '/');
          section.hidden = true;
          await signedIn(env.result as unknown as SessionInfo);
        })();
      });
    })();
  });
  setEnrol('ready');
  passkey.focus();
}

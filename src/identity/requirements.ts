/**
 * Which credential counts as what on each transport: the requirements table of spec/consent.md
 * §channels as data (the MCP SDK's `requirements.ts` pattern). test/identity/requirements.test.ts
 * holds one test per row: it builds the row's principal the way the transport does and tries,
 * with the tenant on its default (`phrase_channel: human`), to type a phrase, approve, change a
 * consent setting and open a session, asserting the refusal (or, for a human row, the success).
 *
 * The `actor` column is what src/identity sets (principal.ts); the `may` columns are what the one
 * predicate (consent-predicate.ts `mayConsent`) answers for it under the default settings.
 */
import type { Actor, ConsentChannel } from '../spec/types.ts';

/** One row of the table. */
export interface CredentialRequirement {
  /** Stable row id (the test names its case after it). */
  readonly id: string;
  /** What the caller holds. */
  readonly credential: string;
  /** Where it is presented. */
  readonly transport: string;
  /** The principal's actor identity sets for it. */
  readonly actor: Actor;
  /** For a human, the consent channel named on receipts. */
  readonly channel?: ConsentChannel;
  /** Under the default settings: may it type a phrase that counts, approve, change consent settings, open a session? */
  readonly may: {
    readonly type_phrase: boolean;
    readonly approve: boolean;
    readonly change_consent_settings: boolean;
    readonly open_session: boolean;
  };
  /** Why, in a sentence. */
  readonly why: string;
}

const AGENT = { type_phrase: false, approve: false, change_consent_settings: false, open_session: false };
const HUMAN = { type_phrase: true, approve: true, change_consent_settings: true, open_session: true };

/** The rows, agent credentials first. spec/consent.md §channels */
export const CREDENTIAL_REQUIREMENTS: readonly CredentialRequirement[] = [
  {
    id: 'api_key',
    credential: 'API key (Authorization: Bearer sk_solid_…, --api-key, SOLID_API_KEY)',
    transport: 'HTTP agent API, CLI flags and scripts, MCP, UCP',
    actor: 'agent',
    may: AGENT,
    why: 'A key is what an agent is given: it acts, never consents.',
  },
  {
    id: 'api_key_session',
    credential: 'a browser session opened with an API key (POST /api/v1/session {api_key})',
    transport: 'dashboard API',
    actor: 'agent',
    may: AGENT,
    why: 'A program holding the key can open it without a browser; the session is the key’s.',
  },
  {
    id: 'oauth_token',
    credential:
      'OAuth access token from this server’s authorization server (Authorization: Bearer …; a human consented on the consent screen)',
    transport: 'HTTP agent API, MCP Streamable HTTP (src/oauth)',
    actor: 'agent',
    may: AGENT,
    why: 'A token is delegated to a client program: an agent credential like a key, never more than the human who granted it; it opens no session, not even an agent’s.',
  },
  {
    id: 'mcp_form_elicitation',
    credential: 'the answer to an MCP form elicitation',
    transport: 'MCP (stdio, Streamable HTTP)',
    actor: 'agent',
    may: AGENT,
    why: 'The client software answers the form; a program can answer it itself.',
  },
  {
    id: 'mcp_url_elicitation',
    credential: 'the MCP client that opened the approval page (URL-mode elicitation)',
    transport: 'MCP (stdio, Streamable HTTP)',
    actor: 'agent',
    may: AGENT,
    why: 'The client only opens the page; the consent is the signed-in person’s on it (human_session).',
  },
  {
    id: 'webmcp',
    credential: 'a WebMCP page tool call on a person’s session',
    transport: 'WebMCP (POST /api/v1/webmcp/execute/*)',
    actor: 'agent',
    may: AGENT,
    why: 'The browser’s in-page agent makes the call, acting for the signed-in user.',
  },
  {
    id: 'human_session',
    credential: 'a session from a human sign-in (passkey or TOTP of a tenant user)',
    transport: 'dashboard API, approval page',
    actor: 'human',
    channel: 'dashboard',
    may: HUMAN,
    why: 'Only a person holds the passkey or the authenticator; the route adds Origin and CSRF checks.',
  },
  {
    id: 'local_cli_pty_script',
    credential:
      'a program at a terminal or pseudo-terminal of `solid` on a local database (`script -qc …`): it reads each prompt and types it back, but holds no enrolled user’s authenticator',
    transport: 'CLI, embedded database',
    actor: 'agent',
    may: AGENT,
    why: 'A TTY is not a person: any program gets one from `script`. Without the one-time code the terminal’s human factor refuses (signin_failed, human_required, audited) and the call, if any, is the key’s.',
  },
  {
    id: 'local_cli_tty',
    credential:
      'the person at the prompt of `solid` on a local database (stdin a TTY) who typed the one-time code of an enrolled, active user’s authenticator app (TOTP)',
    transport: 'CLI, embedded database',
    actor: 'human',
    channel: 'operator_terminal',
    may: { ...HUMAN, open_session: false },
    why: 'Only the person holding that user’s authenticator has the code (each code works once, failures are throttled); the call is that user’s, at that user’s role. A web session still comes only from a sign-in.',
  },
];

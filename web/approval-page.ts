/**
 * The approval page, `/approvals/<approval_id>` (spec/consent.md §approval-page): one action an
 * agent asked for, shown to the signed-in human who decides it. The link comes from the agent's
 * pending answer (`consent.approval_url`), an MCP client that opened it (URL-mode elicitation) or
 * the dashboard.
 *
 * What will happen is the runtime's own sentence (the verb's summary) and the projected impact;
 * what the agent wrote itself (free-text arguments such as a refund's reason) is shown apart,
 * labelled as the agent's words, never inside the sentence the human agrees to. The human types
 * the phrase exactly (typed-phrase gates) or confirms, or rejects with a reason the agent reads.
 * Decisions go through POST /api/v1/approval-page/dispatch/approvals.approve|reject as the
 * signed-in human on the `approval_page` channel.
 *
 * `document.body.dataset.approval` is `loading`, `pending`, `approved`, `rejected`, `closed` or
 * `missing` (tests wait on it).
 */
import { byId, el } from './element.ts';
import { argumentWords, countdown, localTime } from './dashboard-words.ts';
import type { Envelope } from '../src/spec/types.ts';

/** The approval id of an approval path (`/approvals/<id>`), or undefined. */
export function approvalIdOfPath(): string | undefined {
  const m = /^\/approvals\/(apv_[A-Za-z0-9_-]{1,64})$/.exec(location.pathname);
  return m?.[1];
}

function csrf(): string {
  for (const part of document.cookie.split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === 'solid_csrf') return decodeURIComponent(rest.join('='));
  }
  return '';
}

async function call(verb: string, input: Record<string, unknown>): Promise<Envelope> {
  try {
    const res = await fetch(`/api/v1/approval-page/dispatch/${verb}`, {
      method: 'POST',
      credentials: 'same-origin',
      cache: 'no-store',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf() },
      body: JSON.stringify({ input }),
    });
    return (await res.json()) as Envelope;
  } catch (err) {
    return { ok: false, verb, error: { reason: 'network_error', message: String(err) } };
  }
}

interface ApprovalView {
  approval_id: string;
  verb: string;
  summary: string;
  typed_phrase?: string | null;
  args?: Record<string, unknown>;
  requested_by: number;
  requested_role?: string;
  agent_type?: string | null;
  status: string;
  role_floor: string;
  can_decide: boolean;
  expires_at: string;
  created_at: string;
}

/** Free text the agent wrote: string arguments that read as words (a space, or longer than 40). */
function agentWords(args: Record<string, unknown> | undefined): Array<[string, string]> {
  if (args === undefined) return [];
  return Object.entries(args)
    .filter(([, v]) => typeof v === 'string' && v !== '[REDACTED]' && (/\s/.test(v) || v.length > 40))
    .map(([k, v]) => [k.replace(/_/g, ' '), v as string]);
}

/** The arguments without the agent's free text (which is shown apart). */
function withoutAgentWords(args: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (args === undefined) return undefined;
  const free = new Set(agentWords(args).map(([k]) => k.replace(/ /g, '_')));
  return Object.fromEntries(Object.entries(args).filter(([k]) => !free.has(k)));
}

function setState(state: string): void {
  document.body.dataset.approval = state;
}

/**
 * Show the approval page for `approvalId` (the caller made sure a human is signed in).
 * `onSessionEnded` runs when the session turns out dead (back to sign-in, then here again).
 */
export async function showApprovalPage(approvalId: string, onSessionEnded: () => void): Promise<void> {
  setState('loading');
  const section = byId('approval-section');
  section.hidden = false;
  byId('app').hidden = true;
  const body = byId('approval-body');
  const status = byId('approval-status');
  status.textContent = '';
  body.replaceChildren();
  document.title = 'Approve an action · solid-verbs';
  const listed = await call('approvals.list', { approval_id: approvalId });
  if (!listed.ok) {
    if (listed.error?.reason === 'session_invalid') return onSessionEnded();
    status.textContent = `${listed.error?.message ?? 'This approval cannot be shown.'} ${listed.error?.hint ?? ''}`;
    setState('missing');
    return;
  }
  const a = ((listed.result?.approvals ?? []) as ApprovalView[])[0];
  if (a === undefined) {
    status.textContent = `No approval ${approvalId} in this business.`;
    setState('missing');
    return;
  }
  const heading = el('h1', { id: 'approval-title', tabindex: '-1' }, 'An agent asks you to approve');
  const sentence = el('p', { class: 'lead', id: 'approval-summary' }, a.summary);
  const facts = el(
    'dl',
    { class: 'fields' },
    el('dt', {}, 'Action'),
    el('dd', {}, a.verb),
    el('dt', {}, 'Asked by'),
    el(
      'dd',
      {},
      `user ${a.requested_by}${a.requested_role ? ` (${a.requested_role})` : ''}${a.agent_type ? ` via ${a.agent_type}` : ''}`,
    ),
    el('dt', {}, 'Asked at'),
    el('dd', {}, localTime(a.created_at)),
    // The agent's free text is left out here: it is shown apart, below, as the agent's words.
    ...argumentWords(withoutAgentWords(a.args)).flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]),
  );
  const said = agentWords(a.args);
  const agentBlock =
    said.length === 0
      ? null
      : el(
          'section',
          { class: 'panel agent-words', id: 'approval-agent-words', 'aria-labelledby': 'agent-words-title' },
          el('h2', { id: 'agent-words-title' }, 'In the agent’s own words (not checked by anyone)'),
          ...said.map(([k, v]) => el('p', {}, el('strong', {}, `${k}: `), el('q', {}, v))),
        );
  body.append(heading, sentence, facts, ...(agentBlock === null ? [] : [agentBlock]));

  if (a.status !== 'pending') {
    const what: Record<string, string> = {
      approved: 'This action was approved. The agent finishes it with its nonce.',
      rejected: 'This action was rejected. The agent was told.',
      consumed: 'This action was approved and has been carried out.',
      expired: 'This request expired before anyone decided. The agent must ask again.',
    };
    status.textContent = what[a.status] ?? `This approval is ${a.status}.`;
    setState('closed');
    heading.focus();
    return;
  }
  if (!a.can_decide) {
    status.textContent = `Only a user with the ${a.role_floor} role or higher can decide this.`;
    setState('closed');
    heading.focus();
    return;
  }
  body.append(el('p', { class: 'muted' }, `This request expires ${countdown(a.expires_at)}.`));
  const problem = el('p', { class: 'error', role: 'alert', id: 'approval-error' });
  const typed = typeof a.typed_phrase === 'string' && a.typed_phrase !== '';
  const phraseInput = el('input', {
    id: 'approval-phrase',
    name: 'typed_phrase',
    autocomplete: 'off',
    spellcheck: 'false',
  });
  const decide = el(
    'form',
    { id: 'approval-form', class: 'panel' },
    ...(typed
      ? [
          el('p', {}, 'To approve, type exactly:'),
          el('p', {}, el('code', { class: 'phrase', id: 'approval-phrase-shown' }, a.typed_phrase!)),
          el('label', { for: 'approval-phrase' }, 'Type the phrase'),
          phraseInput,
        ]
      : [el('p', {}, 'Approve this action?')]),
    el(
      'p',
      { class: 'actions' },
      el('button', { type: 'submit', id: 'approval-approve' }, typed ? 'Approve' : 'Confirm'),
    ),
  );
  const reason = el('textarea', { id: 'approval-reason', name: 'reason', rows: 2, maxlength: 500 });
  const reject = el(
    'form',
    { id: 'reject-form', class: 'panel' },
    el('label', { for: 'approval-reason' }, 'Or reject it, with a reason the agent reads'),
    reason,
    el(
      'p',
      { class: 'actions' },
      el('button', { type: 'submit', class: 'secondary', id: 'approval-reject' }, 'Reject'),
    ),
  );
  body.append(decide, reject, problem);
  decide.addEventListener('submit', (event) => {
    event.preventDefault();
    void (async () => {
      problem.textContent = '';
      const env = await call('approvals.approve', {
        approval_id: a.approval_id,
        ...(typed ? { typed_phrase: phraseInput.value } : {}),
      });
      if (!env.ok) {
        if (env.error?.reason === 'session_invalid') return onSessionEnded();
        problem.textContent = `${env.error?.message ?? 'Not approved.'} ${env.error?.hint ?? ''}`;
        phraseInput.focus();
        return;
      }
      decide.remove();
      reject.remove();
      status.textContent =
        'Approved. The agent can now finish: it calls again with the same arguments and its nonce.';
      setState('approved');
    })();
  });
  reject.addEventListener('submit', (event) => {
    event.preventDefault();
    void (async () => {
      problem.textContent = '';
      const note = reason.value.trim();
      const env = await call('approvals.reject', {
        approval_id: a.approval_id,
        ...(note !== '' ? { note } : {}),
      });
      if (!env.ok) {
        if (env.error?.reason === 'session_invalid') return onSessionEnded();
        problem.textContent = `${env.error?.message ?? 'Not rejected.'} ${env.error?.hint ?? ''}`;
        return;
      }
      decide.remove();
      reject.remove();
      status.textContent = 'Rejected. The agent is told when it calls again.';
      setState('rejected');
    })();
  });
  setState('pending');
  heading.focus();
}

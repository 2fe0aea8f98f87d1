/**
 * View "Waiting for you": pending approvals (approvals.list). Identical requests (same verb,
 * arguments and requester — an agent retrying) share one card with their count. A card says what
 * will happen in words (customer, amount, the arguments), the projected impact when the verb has a
 * preview (what stays, and each change as "now → after"), counts down to expiry, and lets an
 * admin or owner approve by typing the phrase (approvals.approve) or reject (approvals.reject; a
 * rejection covers every request of the group). The queue is polled every 10 s while the page is
 * visible, so an arriving or expiring request shows without a reload. A role below the verb's
 * floor never calls it (no `role_denied` row): the view says who can decide instead.
 */
import { byId, el } from './element.ts';
import { describeError, type DashboardContext } from './dashboard-context.ts';
import { argumentWords, countdown, impactWords, localTime, who } from './dashboard-words.ts';

/** One approval of approvals.list (src/verbs/approvals.ts). */
export interface Approval {
  approval_id: string;
  verb: string;
  consent_class: string;
  summary: string;
  typed_phrase: string;
  args?: Record<string, unknown>;
  requested_by: number;
  requested_role?: string;
  agent_type?: string | null;
  status: string;
  role_floor: string;
  can_decide: boolean;
  created_at: string;
  expires_at: string;
  /** The verb's preview computed now (pending only): current, projected, reversible. */
  preview?: Record<string, unknown>;
}

/** The card's "What changes" block: unchanged facts, then each change as now → after. */
function impactBlock(approval: Approval): HTMLElement | null {
  const impact = impactWords(approval.preview);
  if (impact === undefined) return null;
  return el(
    'section',
    { class: 'impact', 'aria-label': 'What changes' },
    el('h3', {}, 'What changes'),
    el(
      'dl',
      { class: 'fields' },
      ...impact.same.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]),
      ...impact.changes.flatMap(([k, before, after]) => [
        el('dt', {}, k),
        el(
          'dd',
          { 'data-change': k },
          `${before} now`,
          el('span', { 'aria-hidden': 'true' }, ' → '),
          `${after} after`,
        ),
      ]),
    ),
    ...impact.notes.map((n) => el('p', { class: 'note' }, n)),
  );
}

/** Poll interval of the queue in ms. */
const POLL_MS = 10_000;

function groupKey(a: Approval): string {
  return `${a.verb}|${a.requested_by}|${a.agent_type ?? ''}|${JSON.stringify(a.args ?? {})}|${a.typed_phrase}`;
}

/** Group identical requests; the newest of each group first (approvals.list is newest first). */
export function groupApprovals(approvals: Approval[]): Approval[][] {
  const groups = new Map<string, Approval[]>();
  for (const a of approvals) {
    const k = groupKey(a);
    const g = groups.get(k);
    if (g === undefined) groups.set(k, [a]);
    else g.push(a);
  }
  return [...groups.values()];
}

function card(ctx: DashboardContext, group: Approval[]): HTMLLIElement {
  const approval = group[0]!;
  const id = approval.approval_id;
  const inputId = `phrase-${id}`;
  const alert = el('p', { class: 'error', role: 'alert', id: `approval-error-${id}` });
  const input = el('input', {
    id: inputId,
    name: 'typed_phrase',
    type: 'text',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
    disabled: !approval.can_decide,
  });
  const approve = el('button', { type: 'submit', disabled: !approval.can_decide }, 'Approve');
  const reject = el(
    'button',
    { type: 'button', class: 'secondary', disabled: !approval.can_decide },
    group.length > 1 ? `Reject all ${group.length}` : 'Reject',
  );
  const form = el(
    'form',
    { class: 'approval-form', 'aria-describedby': `approval-summary-${id}` },
    el('label', { for: inputId }, 'Type the phrase to approve'),
    input,
    el('span', { class: 'actions' }, approve, reject),
  );
  const facts = argumentWords(approval.args);
  const item = el(
    'li',
    {
      class: 'card',
      'data-approval-id': id,
      'data-status': approval.status,
      'data-group-size': group.length,
    },
    el('h2', {}, ctx.title(approval.verb)),
    el('p', { id: `approval-summary-${id}`, class: 'lead' }, approval.summary),
    group.length > 1
      ? el(
          'p',
          { class: 'note', 'data-duplicates': group.length - 1 },
          `The agent asked ${group.length} times for the same thing; approving answers the newest request.`,
        )
      : null,
    el(
      'dl',
      { class: 'fields' },
      ...facts.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]),
      el('dt', {}, 'Requested by'),
      el('dd', {}, who(`user:${approval.requested_by}`, approval.requested_role, approval.agent_type)),
      el('dt', {}, 'Asked'),
      el('dd', {}, el('time', { datetime: approval.created_at }, localTime(approval.created_at))),
      el('dt', {}, 'Expires'),
      el(
        'dd',
        {},
        el(
          'time',
          { datetime: approval.expires_at, 'data-countdown': approval.expires_at },
          countdown(approval.expires_at),
        ),
      ),
      el('dt', {}, 'Phrase'),
      el('dd', {}, el('code', { class: 'phrase' }, approval.typed_phrase)),
    ),
    impactBlock(approval),
    approval.can_decide
      ? form
      : el('p', { class: 'muted' }, `Needs the ${approval.role_floor} role, or it is no longer open.`),
    alert,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    alert.textContent = '';
    approve.disabled = true;
    const { envelope } = await ctx.call('approvals.approve', { approval_id: id, typed_phrase: input.value });
    approve.disabled = false;
    if (!envelope.ok) {
      alert.textContent = `Not approved: ${describeError(envelope)}`;
      input.focus();
      return;
    }
    byId('approvals-decision').textContent =
      `Approved ${approval.verb} (${id}). The agent can now confirm its call.`;
    ctx.changed();
  });
  reject.addEventListener('click', async () => {
    alert.textContent = '';
    reject.disabled = true;
    for (const a of group) {
      const { envelope } = await ctx.call('approvals.reject', { approval_id: a.approval_id });
      if (!envelope.ok) {
        reject.disabled = false;
        alert.textContent = `Not rejected: ${describeError(envelope)}`;
        return;
      }
    }
    byId('approvals-decision').textContent =
      `Rejected ${approval.verb} (${group.map((a) => a.approval_id).join(', ')}).`;
    ctx.changed();
  });
  return item;
}

let waiting = 0;

/** `title` with the waiting count in front while approvals wait: "(3) Waiting for you · Summit Plumbing". */
export function withWaitingCount(title: string): string {
  const base = title.replace(/^\(\d+\) /, '');
  return waiting > 0 ? `(${waiting}) ${base}` : base;
}

function setCount(n: number): void {
  const badge = byId('waiting-count');
  badge.hidden = n === 0;
  badge.textContent = String(n);
  badge.setAttribute('aria-label', `${n} waiting`);
  waiting = n;
  // The tab title carries the count, so a human sees it from another tab.
  document.title = withWaitingCount(document.title);
}

/** Last rendered queue (ids), to skip re-rendering (and losing typed text) when nothing changed. */
let shown = '';

/** (Re)load the queue; `force` re-renders even when the same requests are pending. */
export async function loadApprovals(ctx: DashboardContext, force = true): Promise<void> {
  const status = byId('approvals-status');
  const list = byId('approvals-list');
  if (!ctx.has('approvals.list')) {
    list.replaceChildren();
    status.textContent = 'Approvals are not available on this server.';
    return;
  }
  if (!ctx.canUse('approvals.list')) {
    list.replaceChildren();
    status.textContent = `Approvals are decided by an admin or the owner; your role (${ctx.session.role}) sees the actions in Activity.`;
    return;
  }
  const { envelope } = await ctx.call('approvals.list', { status: 'pending' });
  if (!envelope.ok) {
    status.textContent = `Could not load approvals: ${describeError(envelope)}`;
    return;
  }
  const approvals = ((envelope.result as { approvals?: Approval[] }).approvals ?? []).filter(
    (a) => a.status === 'pending',
  );
  setCount(approvals.length);
  const ids = approvals.map((a) => a.approval_id).join(',');
  if (!force && ids === shown) return;
  shown = ids;
  const groups = groupApprovals(approvals);
  list.replaceChildren(...groups.map((g) => card(ctx, g)));
  status.textContent =
    approvals.length === 0
      ? 'Nothing is waiting for you. When an agent asks to charge, refund or delete, it appears here.'
      : `${approvals.length} request${approvals.length === 1 ? '' : 's'} waiting for your decision.`;
}

let timers: number[] = [];

/** Start the countdown ticker and the queue poll for this session (stops the previous ones). */
export function startApprovals(ctx: DashboardContext): void {
  stopApprovals();
  timers.push(
    window.setInterval(() => {
      for (const t of document.querySelectorAll<HTMLElement>('time[data-countdown]'))
        t.textContent = countdown(t.dataset.countdown ?? '');
    }, 1000),
  );
  if (ctx.canUse('approvals.list'))
    timers.push(
      // Hidden tabs poll too: their title shows the waiting count.
      window.setInterval(() => void loadApprovals(ctx, false), POLL_MS),
    );
}

/** Stop the timers (sign-out). */
export function stopApprovals(): void {
  for (const t of timers) window.clearInterval(t);
  timers = [];
  shown = '';
  waiting = 0;
}

/**
 * Dashboard panel: pending approvals (approvals.list). An admin or owner types the phrase shown
 * and approves (approvals.approve), or rejects (approvals.reject). The requesting agent then
 * confirms its pending call with its nonce alone. Degrades to a message when the verbs are absent
 * or the role may not see the queue.
 */
import { byId, el } from './element.ts';
import { describeError, type DashboardContext } from './dashboard-context.ts';

/** One approval of approvals.list (src/verbs/approvals.ts). */
export interface Approval {
  approval_id: string;
  verb: string;
  consent_class: string;
  summary: string;
  typed_phrase: string;
  requested_by: number;
  requested_role?: string;
  agent_type?: string | null;
  status: string;
  role_floor: string;
  can_decide: boolean;
  created_at: string;
  expires_at: string;
}

function card(ctx: DashboardContext, approval: Approval): HTMLLIElement {
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
    'Reject',
  );
  const form = el(
    'form',
    { class: 'approval-form', 'aria-describedby': `approval-summary-${id}` },
    el('label', { for: inputId }, 'Type the phrase to approve'),
    input,
    el('span', { class: 'actions' }, approve, reject),
  );
  const expires = new Date(approval.expires_at);
  const item = el(
    'li',
    { class: 'card', 'data-approval-id': id, 'data-status': approval.status },
    el('h3', {}, el('code', {}, approval.verb), ` · ${approval.consent_class}`),
    el('p', { id: `approval-summary-${id}` }, approval.summary),
    el(
      'dl',
      { class: 'fields' },
      el('dt', {}, 'Requested by'),
      el(
        'dd',
        {},
        `user ${approval.requested_by}${approval.requested_role ? ` (${approval.requested_role})` : ''}${approval.agent_type ? ` via ${approval.agent_type}` : ''}`,
      ),
      el('dt', {}, 'Status'),
      el('dd', {}, approval.status),
      el('dt', {}, 'Expires'),
      el(
        'dd',
        {},
        el(
          'time',
          { datetime: approval.expires_at },
          Number.isNaN(expires.getTime()) ? approval.expires_at : expires.toLocaleString(),
        ),
      ),
      el('dt', {}, 'Phrase'),
      el('dd', {}, el('code', { class: 'phrase' }, approval.typed_phrase)),
    ),
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
      return;
    }
    byId('approvals-decision').textContent =
      `Approved ${approval.verb} (${id}). The agent can now confirm its call.`;
    ctx.changed();
  });
  reject.addEventListener('click', async () => {
    alert.textContent = '';
    reject.disabled = true;
    const { envelope } = await ctx.call('approvals.reject', { approval_id: id });
    reject.disabled = false;
    if (!envelope.ok) {
      alert.textContent = `Not rejected: ${describeError(envelope)}`;
      return;
    }
    byId('approvals-decision').textContent = `Rejected ${approval.verb} (${id}).`;
    ctx.changed();
  });
  return item;
}

/** (Re)load the queue. */
export async function loadApprovals(ctx: DashboardContext): Promise<void> {
  const status = byId('approvals-status');
  const list = byId('approvals-list');
  if (!ctx.has('approvals.list')) {
    list.replaceChildren();
    status.textContent = 'Approvals are not available on this server (approvals.list is not registered).';
    return;
  }
  const { envelope } = await ctx.call('approvals.list', { status: 'pending' });
  if (!envelope.ok) {
    list.replaceChildren();
    status.textContent =
      envelope.error?.reason === 'role_denied'
        ? `Your role (${ctx.session.role}) cannot see the approval queue; an admin or owner can.`
        : `Could not load approvals: ${describeError(envelope)}`;
    return;
  }
  const approvals = ((envelope.result as { approvals?: Approval[] }).approvals ?? []).filter(
    (a) => a.status === 'pending',
  );
  list.replaceChildren(...approvals.map((a) => card(ctx, a)));
  status.textContent =
    approvals.length === 0
      ? 'No action is waiting for approval.'
      : `${approvals.length} action${approvals.length === 1 ? '' : 's'} waiting for approval.`;
}

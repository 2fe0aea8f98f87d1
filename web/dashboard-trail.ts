/**
 * Dashboard panel: the trail (audit.trail with filters, newest first, "Load more" pages with the
 * opaque cursor) and the receipt detail of one entry with a Revert button (audit.revert through
 * the same gates: the consent dialog opens when the revert is gated).
 */
import { byId, el } from './element.ts';
import { describeError, type DashboardContext } from './dashboard-context.ts';

/** One entry of audit.trail (src/verbs/trail.ts). */
export interface TrailEntry {
  audit_id: number;
  timestamp: string;
  action: string;
  actor: string;
  entity_id: number | string | null;
  entity_type?: string | null;
  status: string;
  reason?: string | null;
  shape?: string | null;
  consent_class?: string | null;
  role?: string | null;
  agent_type?: string | null;
  approved_by?: number | null;
  parent_id?: number | null;
  transaction_id?: string | null;
  [k: string]: unknown;
}

const PAGE = 25;

let cursor: string | null = null;
let entries = new Map<number, TrailEntry>();
let selected: TrailEntry | undefined;

function filters(): Record<string, unknown> {
  const form = byId<HTMLFormElement>('trail-filters');
  const data = new FormData(form);
  const args: Record<string, unknown> = {};
  for (const key of ['verb', 'status', 'reason'] as const) {
    const v = String(data.get(key) ?? '').trim();
    if (v !== '') args[key] = v;
  }
  const actor = String(data.get('actor') ?? '').trim();
  if (actor !== '') args.actor = Number(actor);
  for (const key of ['from', 'to'] as const) {
    const v = String(data.get(key) ?? '').trim();
    if (v !== '') {
      const d = new Date(v);
      if (!Number.isNaN(d.getTime())) args[key] = d.toISOString();
    }
  }
  return args;
}

function row(entry: TrailEntry): HTMLTableRowElement {
  const open = el(
    'button',
    {
      type: 'button',
      class: 'link',
      'data-audit-id': entry.audit_id,
      'aria-label': `Open receipt ${entry.audit_id}`,
    },
    `#${entry.audit_id}`,
  );
  open.addEventListener('click', () => showReceipt(entry));
  return el(
    'tr',
    { 'data-audit-id': entry.audit_id, 'data-status': entry.status },
    el('td', {}, open),
    el('td', {}, el('time', { datetime: entry.timestamp }, new Date(entry.timestamp).toLocaleString())),
    el('td', {}, el('code', {}, entry.action)),
    el('td', {}, entry.actor),
    el('td', {}, el('span', { class: `badge status-${entry.status}` }, entry.status)),
    el('td', {}, entry.reason ?? ''),
    el('td', {}, entry.consent_class ?? ''),
  );
}

/** Load the first page (reset) or the next one. */
export async function loadTrail(ctx: DashboardContext, reset = true): Promise<void> {
  const status = byId('trail-status');
  const body = byId<HTMLTableElement>('trail-table').tBodies[0]!;
  const more = byId<HTMLButtonElement>('trail-more');
  if (!ctx.has('audit.trail')) {
    status.textContent = 'The trail is not available on this server (audit.trail is not registered).';
    return;
  }
  const args: Record<string, unknown> = { ...filters(), limit: PAGE };
  if (!reset && cursor !== null) args.cursor = cursor;
  status.textContent = 'Loading the trail…';
  const { envelope } = await ctx.call('audit.trail', args);
  if (!envelope.ok) {
    status.textContent = `Could not load the trail: ${describeError(envelope)}`;
    return;
  }
  const result = envelope.result as { entries: TrailEntry[]; next_cursor: string | null };
  if (reset) {
    body.replaceChildren();
    entries = new Map();
  }
  for (const entry of result.entries) {
    entries.set(entry.audit_id, entry);
    body.append(row(entry));
  }
  cursor = result.next_cursor;
  more.hidden = cursor === null;
  status.textContent = `${entries.size} entr${entries.size === 1 ? 'y' : 'ies'} shown${cursor !== null ? '; more available' : ''}.`;
}

let showReceipt: (entry: TrailEntry) => void = () => {};

function revertible(ctx: DashboardContext, entry: TrailEntry): string | undefined {
  if (!ctx.has('audit.revert'))
    return 'Reverting is not available on this server (audit.revert is not registered).';
  if (entry.status !== 'completed')
    return `Only completed actions can be reverted (this one is ${entry.status}).`;
  if (entry.consent_class === null || entry.consent_class === undefined || entry.consent_class === 'READ')
    return 'Reads change nothing; there is nothing to revert.';
  if (entry.action === 'audit.revert') return 'This entry is itself a revert.';
  return undefined;
}

function renderReceipt(ctx: DashboardContext, entry: TrailEntry): void {
  selected = entry;
  const section = byId('receipt');
  byId('receipt-title').textContent = `Receipt #${entry.audit_id}: ${entry.action}`;
  const fields = byId('receipt-fields');
  fields.replaceChildren();
  for (const [key, value] of Object.entries(entry)) {
    if (value === null || value === undefined || value === '') continue;
    fields.append(
      el('dt', {}, key),
      el('dd', {}, typeof value === 'object' ? JSON.stringify(value) : String(value)),
    );
  }
  const button = byId<HTMLButtonElement>('receipt-revert');
  const why = revertible(ctx, entry);
  button.hidden = why !== undefined;
  button.dataset.auditId = String(entry.audit_id);
  byId('receipt-status').textContent = why ?? '';
  section.hidden = false;
}

let active: DashboardContext | undefined;

/** Wire the filters, the "Load more" button and the receipt panel (once), for this session's context. */
export function setupTrail(context: DashboardContext): void {
  const first = active === undefined;
  active = context;
  byId('receipt').hidden = true;
  selected = undefined;
  if (!first) return;
  const ctx = (): DashboardContext => active!;
  const form = byId<HTMLFormElement>('trail-filters');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void loadTrail(ctx(), true);
  });
  form.addEventListener('reset', () => {
    setTimeout(() => void loadTrail(ctx(), true), 0);
  });
  byId('trail-more').addEventListener('click', () => void loadTrail(ctx(), false));
  showReceipt = (entry) => {
    renderReceipt(ctx(), entry);
    byId('receipt-title').focus();
  };
  byId('receipt-close').addEventListener('click', () => {
    byId('receipt').hidden = true;
    const id = selected?.audit_id;
    selected = undefined;
    if (id !== undefined) document.querySelector<HTMLButtonElement>(`button[data-audit-id="${id}"]`)?.focus();
  });
  byId('receipt-revert').addEventListener('click', async () => {
    const entry = selected;
    if (entry === undefined) return;
    const status = byId('receipt-status');
    const button = byId<HTMLButtonElement>('receipt-revert');
    button.disabled = true;
    status.textContent = `Reverting #${entry.audit_id}…`;
    const { envelope, declined } = await ctx().call('audit.revert', { audit_id: entry.audit_id });
    button.disabled = false;
    if (declined) {
      status.textContent = 'Revert cancelled; nothing was changed.';
      return;
    }
    if (!envelope.ok) {
      status.textContent = `Revert refused: ${describeError(envelope)}`;
      return;
    }
    const result = envelope.result as {
      reverted?: boolean;
      revert_action?: string;
      message?: string;
      reason?: string;
      audit_id?: number;
      revert_audit_id?: number;
    };
    status.textContent =
      result.reverted === true
        ? `Reverted: ${result.revert_action ?? 'done'}${result.revert_audit_id !== undefined ? ` (audit #${result.revert_audit_id})` : ''}.`
        : `Not reverted: ${result.message ?? result.reason ?? 'no reason given'}.`;
    button.hidden = result.reverted === true;
    ctx().changed();
  });
}

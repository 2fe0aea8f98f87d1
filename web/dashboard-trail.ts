/**
 * Views "Activity" and "Receipts".
 *
 * Activity: what agents did, newest first (audit.trail). By default only business actions
 * (`scope: 'business'`: consent class other than READ, their denials included); "Include reads and
 * system calls" shows every row, the dashboard's own reads too. One row per action (`fold`: a
 * consent request that was then confirmed folds into the action, spec/audit.md §fold). Each row
 * is a sentence — local time, who and through which agent, what it did in the owner's words
 * (the verb's consent summary: "Charge $159.00 to invoice #314"), the outcome — linking to its
 * receipt.
 *
 * Receipts (#/receipt/{audit_id}): one action (audit.trail { audit_id }): who, which agent, when
 * in local time, the arguments in words, the outcome, the consent path (class, approval, whether
 * the requester approved their own request), its chain position, and "Undo this action" only when
 * the action has a revert handler, completed, and was not undone yet (audit.revert through the
 * same gates: the consent dialog opens when the revert is gated; it names the change before →
 * after when the verb has `revert.describe`). An action without a revert that another verb undoes
 * (catalogue `undone_by`: a charge, undone by its refund) offers that verb instead, prefilled from
 * the signed receipt, as one gated action through the same consent dialog (the refund's typed
 * phrase, typed by the signed-in human). A completed write also shows its
 * signed receipt (audit.receipt): the result in words, the key and chain position it is signed
 * with, "Verify signature" (audit.verify_receipt: the tenant's keys and the row in the log) and
 * "Download receipt" (the signed receipt as JSON, for `solid receipt verify`).
 */
import { byId, el } from './element.ts';
import { describeError, type DashboardContext } from './dashboard-context.ts';
import { argumentWords, localTime, money, STATUS_WORDS, who } from './dashboard-words.ts';

/** A signed receipt (audit.receipt data.receipt; spec/receipts.md §fields). */
interface SignedReceipt {
  audit_id: number;
  timestamp?: string;
  attestation?: { kid?: string; seq?: number; row_hash?: string; jws?: string };
  [k: string]: unknown;
}

/** Receipt members that are not the verb's own result. */
const RECEIPT_META = new Set([
  'status',
  'audit_id',
  'timestamp',
  'idempotency_key',
  'rollback_handle',
  'attestation',
  'replayed',
]);

/** One entry of audit.trail (src/verbs/audit-trail.ts). */
export interface TrailEntry {
  audit_id: number;
  seq?: number;
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
  revertible?: boolean;
  latency_ms?: number | null;
  arguments?: Record<string, unknown>;
  approved_at?: string | null;
  required_approval?: boolean;
  self_approved?: boolean;
  /** Consent provenance in words (spec/consent.md §provenance), on the receipt view's entry. */
  consent_words?: string | null;
  reverted_by_audit_id?: number | null;
  reverted_at?: string | null;
  /** What the entry did in the owner's words (its verb's consent summary), with `fold` or one audit_id. */
  words?: string | null;
  /** The consent requests this write answered (folded into it), with `fold`. */
  pending_audit_ids?: number[];
  /** The credential's key id, and the name the owner gave it (the key's, or the OAuth client's). */
  key_id?: string | null;
  agent_name?: string | null;
  [k: string]: unknown;
}

const PAGE = 25;

let cursor: string | null = null;
let count = 0;

function filters(): Record<string, unknown> {
  const form = byId<HTMLFormElement>('trail-filters');
  const data = new FormData(form);
  const args: Record<string, unknown> = {};
  for (const key of ['verb', 'status'] as const) {
    const v = String(data.get(key) ?? '').trim();
    if (v !== '') args[key] = v;
  }
  for (const key of ['from', 'to'] as const) {
    const v = String(data.get(key) ?? '').trim();
    if (v !== '') {
      const d = new Date(v);
      if (!Number.isNaN(d.getTime())) args[key] = d.toISOString();
    }
  }
  if (data.get('include_reads') === null) args.scope = 'business';
  // One row per action, in the owner's words (spec/audit.md §fold).
  args.fold = true;
  if (agentFilter !== undefined) args.key_id = agentFilter.key_id;
  return args;
}

/** The one agent the activity is narrowed to (its key), or undefined for every agent. */
let agentFilter: { key_id: string; name: string } | undefined;

/** What an entry did: the owner's words when the verb has them, else the verb's title. */
function what(ctx: DashboardContext, entry: TrailEntry): string {
  return typeof entry.words === 'string' && entry.words !== ''
    ? entry.words.replace(/[.]$/, '')
    : ctx.title(entry.action);
}

function row(ctx: DashboardContext, entry: TrailEntry): HTMLLIElement {
  const outcome =
    entry.status === 'completed' && (entry.pending_audit_ids?.length ?? 0) > 0
      ? 'done, after consent'
      : (STATUS_WORDS[entry.status] ?? entry.status);
  return el(
    'li',
    { 'data-audit-id': entry.audit_id, 'data-status': entry.status, 'data-verb': entry.action },
    el('time', { datetime: entry.timestamp }, localTime(entry.timestamp)),
    el(
      'a',
      {
        href: `#/receipt/${entry.audit_id}`,
        'aria-label': `Receipt ${entry.audit_id}: ${what(ctx, entry)}`,
      },
      what(ctx, entry),
    ),
    el(
      'span',
      { class: 'who' },
      who(entry.actor, entry.role, entry.agent_type, agentName(entry)),
      agentName(entry) !== undefined &&
        entry.key_id !== null &&
        entry.key_id !== undefined &&
        agentFilter === undefined
        ? el(
            'button',
            {
              type: 'button',
              class: 'link agent-only',
              'data-key-id': String(entry.key_id),
              'aria-label': `Show only what “${agentName(entry)}” did`,
            },
            'only this agent',
          )
        : null,
    ),
    el(
      'span',
      { class: `badge status-${entry.status}` },
      outcome,
      entry.reason ? el('span', { class: 'reason' }, ` · ${entry.reason}`) : null,
    ),
  );
}

/**
 * The money one agent moved today (audit.money_moved with its key_id, the business day in the
 * business's time zone), as a sentence under the agent's view; nothing when the role cannot read it.
 */
async function agentMoney(ctx: DashboardContext, agent: { key_id: string; name: string }): Promise<void> {
  const box = byId('trail-agent-money');
  box.textContent = '';
  if (!ctx.canUse('audit.money_moved')) return;
  const { envelope } = await ctx.call('audit.money_moved', { key_id: agent.key_id });
  if (agentFilter?.key_id !== agent.key_id) return;
  if (!envelope.ok) {
    box.textContent = `Could not load the money it moved: ${describeError(envelope)}`;
    return;
  }
  const d = (
    envelope.result as {
      data: {
        charged_cents: number;
        refunded_cents: number;
        net_cents: number;
        currency: string;
        time_zone: string;
      };
    }
  ).data;
  box.textContent = `Money “${agent.name}” moved today (${d.time_zone}): ${money(d.charged_cents, d.currency)} charged, ${money(d.refunded_cents, d.currency)} refunded, net ${money(d.net_cents, d.currency)}.`;
}

/** The name the owner gave the entry's agent (its key's or grant's), when it has one. */
function agentName(entry: TrailEntry): string | undefined {
  return typeof entry.agent_name === 'string' && entry.agent_name !== '' ? entry.agent_name : undefined;
}

/** Load the first page (reset) or the next one. */
export async function loadTrail(ctx: DashboardContext, reset = true): Promise<void> {
  const status = byId('trail-status');
  const list = byId('trail-list');
  const more = byId<HTMLButtonElement>('trail-more');
  if (!ctx.canUse('audit.trail')) {
    status.textContent = 'The activity log is not available to your role.';
    return;
  }
  const args: Record<string, unknown> = { ...filters(), limit: PAGE };
  if (!reset && cursor !== null) args.cursor = cursor;
  status.textContent = 'Loading the activity…';
  list.setAttribute('aria-busy', 'true');
  const { envelope } = await ctx.call('audit.trail', args);
  list.removeAttribute('aria-busy');
  if (!envelope.ok) {
    status.textContent = `Could not load the activity: ${describeError(envelope)}`;
    return;
  }
  const result = envelope.result as {
    entries: TrailEntry[];
    next_cursor: string | null;
    stopped_early?: boolean;
  };
  if (reset) {
    list.replaceChildren();
    count = 0;
  }
  for (const entry of result.entries) list.append(row(ctx, entry));
  count += result.entries.length;
  cursor = result.next_cursor;
  more.hidden = cursor === null;
  const refused = list.querySelectorAll('li[data-status="denied"]').length;
  const only = byId('trail-agent');
  only.hidden = agentFilter === undefined;
  if (agentFilter !== undefined) {
    byId('trail-agent-words').textContent =
      `Only “${agentFilter.name}”: ${count} action${count === 1 ? '' : 's'} shown, ${refused} refused.`;
    if (reset) void agentMoney(ctx, agentFilter);
  }
  status.textContent =
    count === 0 && result.stopped_early === true
      ? 'Nothing matches in the most recent entries; "Load more" looks further back.'
      : count === 0
        ? args.scope === 'business'
          ? 'No business action yet. When an agent changes something, it appears here.'
          : 'Nothing matches these filters.'
        : `${count} action${count === 1 ? '' : 's'} shown${cursor !== null ? '; more below' : ''}.`;
}

function whyNotRevertible(ctx: DashboardContext, entry: TrailEntry): string | undefined {
  if (!ctx.has('audit.revert')) return 'Undo is not available on this server.';
  if (!ctx.canUse('audit.revert')) return 'Your role cannot undo actions.';
  if (entry.reverted_by_audit_id !== null && entry.reverted_by_audit_id !== undefined)
    return `Already undone (receipt #${entry.reverted_by_audit_id}).`;
  if (entry.status !== 'completed')
    return `Only completed actions can be undone (this one is ${STATUS_WORDS[entry.status] ?? entry.status}).`;
  if (entry.consent_class === 'READ' || entry.consent_class === null || entry.consent_class === undefined)
    return 'A read changes nothing; there is nothing to undo.';
  if (entry.action === 'audit.revert') return 'This action is itself an undo.';
  if (entry.revertible !== true) return 'This action cannot be undone: it has no undo step.';
  return undefined;
}

function consentPath(entry: TrailEntry): string {
  // Who consented, where and when, as recorded with the row (e.g. "Typed by Jane Ruiz (owner) on
  // the approval page, 10:14 UTC"; "Confirmed by the agent").
  if (typeof entry.consent_words === 'string' && entry.consent_words !== '') return entry.consent_words;
  const cls = entry.consent_class ?? 'none';
  const parts: string[] = [];
  if (cls === 'READ') parts.push('a read: no consent needed');
  else if (cls === 'WRITE_REVERSIBLE') parts.push('a reversible change: confirmed');
  else if (cls === 'WRITE_FINANCIAL' || cls === 'IRREVERSIBLE')
    parts.push(`${cls === 'WRITE_FINANCIAL' ? 'money moved' : 'cannot be undone'}: typed phrase`);
  else parts.push(cls);
  if (entry.approved_by !== null && entry.approved_by !== undefined)
    parts.push(
      `approved by user ${entry.approved_by}${entry.approved_at ? ` at ${localTime(entry.approved_at)}` : ''}`,
    );
  if (entry.self_approved === true) parts.push('the requester approved their own request');
  return parts.join('; ');
}

/** Render one receipt. */
function renderReceipt(ctx: DashboardContext, entry: TrailEntry, receipt: SignedReceipt | undefined): void {
  byId('receipt-empty').hidden = true;
  byId('receipt').hidden = false;
  byId('receipt').dataset.auditId = String(entry.audit_id);
  const outcome = STATUS_WORDS[entry.status] ?? entry.status;
  byId('receipt-sentence').textContent =
    `${localTime(entry.timestamp)}: ${who(entry.actor, entry.role, entry.agent_type, agentName(entry))} — ${what(ctx, entry)}: ${outcome}${entry.reason ? ` (${entry.reason})` : ''}.`;
  const fields = byId('receipt-fields');
  const pair = (k: string, v: Node | string, key?: string): Node[] => [
    el('dt', {}, k),
    el('dd', key ? { 'data-field': key } : {}, v),
  ];
  const args = argumentWords(entry.arguments);
  fields.replaceChildren(
    ...pair('Receipt', `#${entry.audit_id}`),
    ...pair('What', el('span', {}, `${ctx.title(entry.action)} `, el('code', {}, entry.action))),
    ...pair('Who', who(entry.actor, entry.role, null), 'who'),
    ...pair('Agent', entry.agent_type ?? 'unknown', 'agent'),
    ...pair('When', el('time', { datetime: entry.timestamp }, localTime(entry.timestamp)), 'when'),
    ...(args.length === 0
      ? pair('Arguments', 'none')
      : pair(
          'Arguments',
          el(
            'dl',
            { class: 'fields inner' },
            ...args.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]),
          ),
          'arguments',
        )),
    ...pair('Outcome', `${outcome}${entry.reason ? ` (${entry.reason})` : ''}`, 'outcome'),
    ...resultPair(receipt, pair),
    ...(entry.entity_type ? pair('On', `${entry.entity_type} ${entry.entity_id ?? ''}`.trim()) : []),
    ...pair('Consent', consentPath(entry), 'consent'),
    ...pair('Self-approved', entry.self_approved === true ? 'yes' : 'no', 'self_approved'),
    ...(entry.seq !== undefined ? pair('Chain position', String(entry.seq)) : []),
    ...(entry.reverted_by_audit_id
      ? pair(
          'Undone',
          el(
            'a',
            { href: `#/receipt/${entry.reverted_by_audit_id}` },
            `receipt #${entry.reverted_by_audit_id}`,
          ),
        )
      : []),
  );
  byId('receipt-verdict').textContent = '';
  byId('receipt-verdict').removeAttribute('data-valid');
  byId('receipt-signature-actions').hidden = receipt === undefined;
  const att = receipt?.attestation;
  byId('receipt-signature-text').replaceChildren(
    ...(receipt === undefined
      ? [noReceiptWords(entry)]
      : [
          `Signed with key `,
          el('code', {}, att?.kid ?? '?'),
          ` over audit log row ${att?.seq ?? '?'} (hash `,
          el('code', {}, `${(att?.row_hash ?? '').slice(0, 12)}…`),
          ').',
        ]),
  );
  const button = byId<HTMLButtonElement>('receipt-revert');
  const why = whyNotRevertible(ctx, entry);
  button.hidden = why !== undefined;
  button.disabled = false;
  // No undo step, but another verb undoes it (a charge: its refund), prefilled from the receipt.
  const by = why === undefined ? undefined : undoneBy(ctx, entry, receipt);
  const other = byId<HTMLButtonElement>('receipt-undo-by');
  other.hidden = by === undefined;
  other.disabled = false;
  if (by !== undefined) {
    other.textContent = by.label;
    other.dataset.verb = by.verb;
  }
  byId('receipt-status').textContent = by !== undefined ? `${by.label} instead: ${by.words}` : (why ?? '');
}

/**
 * The other verb that undoes an action without a revert (its catalogue `undone_by`), with its
 * arguments taken from the signed receipt, when the action completed, the receipt carries every
 * argument and the signed-in role may call that verb; else undefined.
 */
function undoneBy(
  ctx: DashboardContext,
  entry: TrailEntry,
  receipt: SignedReceipt | undefined,
): { verb: string; label: string; args: Record<string, unknown>; words: string } | undefined {
  const spec = ctx.entry(entry.action)?.undone_by;
  if (spec === undefined || spec === null || receipt === undefined || entry.status !== 'completed')
    return undefined;
  if (!ctx.canUse(spec.verb)) return undefined;
  const args: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(spec.args)) {
    const v = receipt[member];
    if (v === undefined || v === null) return undefined;
    args[name] = v;
  }
  const target = ctx.entry(spec.verb);
  const gate =
    target?.consent_class === 'WRITE_FINANCIAL' || target?.consent_class === 'IRREVERSIBLE'
      ? ' You confirm it by typing its phrase.'
      : '';
  return {
    verb: spec.verb,
    label: spec.label,
    args,
    words: `this action has no undo step of its own; “${ctx.title(spec.verb)}” undoes it with ${argumentWords(
      args,
    )
      .map(([k, v]) => `${k.toLowerCase()} ${v}`)
      .join(', ')}.${gate}`,
  };
}

/** The verb's own result members of a receipt, in words (empty when there is none). */
function resultPair(
  receipt: SignedReceipt | undefined,
  pair: (k: string, v: Node | string, key?: string) => Node[],
): Node[] {
  if (receipt === undefined) return [];
  const own = Object.fromEntries(Object.entries(receipt).filter(([k]) => !RECEIPT_META.has(k)));
  const words = argumentWords(own);
  if (words.length === 0) return [];
  return pair(
    'Result',
    el('dl', { class: 'fields inner' }, ...words.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])),
    'result',
  );
}

/** Why an attempt has no signed receipt, in one sentence. */
function noReceiptWords(entry: TrailEntry): string {
  if (entry.consent_class === 'READ' || entry.consent_class === null || entry.consent_class === undefined)
    return 'A read changes nothing, so it has no signed receipt.';
  if (entry.status !== 'completed')
    return `Only completed actions have a signed receipt (this one is ${STATUS_WORDS[entry.status] ?? entry.status}).`;
  if (entry.transaction_id)
    return `This step is signed in its transaction's receipt${entry.parent_id ? ` (#${entry.parent_id})` : ''}.`;
  return 'No signed receipt is kept for this action.';
}

/** The signed receipt of a completed write, when the role may read it. */
async function fetchReceipt(ctx: DashboardContext, entry: TrailEntry): Promise<SignedReceipt | undefined> {
  if (entry.status !== 'completed' || entry.consent_class === 'READ' || !entry.consent_class)
    return undefined;
  if (!ctx.canUse('audit.receipt')) return undefined;
  const { envelope } = await ctx.call('audit.receipt', { audit_id: entry.audit_id });
  if (!envelope.ok) return undefined;
  return (envelope.result as { data: { receipt: SignedReceipt } }).data.receipt;
}

/** Verify the shown receipt with the server's keys and log; say the verdict in one sentence. */
async function verifyShown(ctx: DashboardContext): Promise<void> {
  const receipt = signed;
  const verdict = byId('receipt-verdict');
  if (receipt === undefined) return;
  verdict.textContent = 'Checking the signature…';
  const { envelope } = await ctx.call('audit.verify_receipt', { receipt });
  if (!envelope.ok) {
    verdict.textContent = `Could not verify: ${describeError(envelope)}`;
    return;
  }
  const d = (
    envelope.result as {
      data: {
        valid: boolean;
        signature: { valid: boolean; kid: string | null; errors: string[] };
        log: { status: string; message: string } | null;
        timestamp: string | null;
      };
    }
  ).data;
  verdict.dataset.valid = String(d.valid);
  const when = d.timestamp === null ? '' : `, for the action recorded at ${localTime(d.timestamp)}`;
  verdict.textContent = d.valid
    ? `Signature valid — signed by key ${d.signature.kid ?? '(none)'}${when}. The audit log still holds this row unchanged.`
    : `Not valid: ${[...d.signature.errors, ...(d.log !== null && d.log.status !== 'present' ? [d.log.message] : [])].join('; ') || 'unknown reason'}.`;
}

/** Save the shown signed receipt as receipt-{audit_id}.json. */
function downloadShown(): void {
  const receipt = signed;
  if (receipt === undefined) return;
  const blob = new Blob([`${JSON.stringify(receipt, null, 2)}\n`], { type: 'application/json' });
  const url = URL.createObjectURL(blob);
  const a = el('a', { href: url, download: `receipt-${receipt.audit_id}.json`, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  byId('receipt-verdict').textContent = `Saved receipt-${receipt.audit_id}.json.`;
}

/** Open the receipt of one audit row (the #/receipt/{id} view). */
export async function openReceipt(ctx: DashboardContext, auditId: number | undefined): Promise<void> {
  const status = byId('receipt-status');
  if (auditId === undefined || !Number.isSafeInteger(auditId) || auditId < 1) {
    byId('receipt').hidden = true;
    byId('receipt-empty').hidden = false;
    return;
  }
  byId<HTMLInputElement>('receipt-find').querySelector('input')!.value = String(auditId);
  if (!ctx.canUse('audit.trail')) {
    status.textContent = 'Receipts are not available to your role.';
    return;
  }
  const { envelope } = await ctx.call('audit.trail', { audit_id: auditId, limit: 1 });
  const entry = envelope.ok ? (envelope.result as { entries: TrailEntry[] }).entries[0] : undefined;
  if (entry === undefined) {
    byId('receipt').hidden = true;
    byId('receipt-empty').hidden = false;
    byId('receipt-empty').textContent = envelope.ok
      ? `There is no receipt #${auditId} for this business.`
      : `Could not load the receipt: ${describeError(envelope)}`;
    return;
  }
  current = entry;
  signed = await fetchReceipt(ctx, entry);
  renderReceipt(ctx, entry, signed);
}

let active: DashboardContext | undefined;
let current: TrailEntry | undefined;
let signed: SignedReceipt | undefined;

/** Wire the filters, "Show more", the receipt finder and Undo (once), for this session's context. */
export function setupTrail(context: DashboardContext): void {
  const first = active === undefined;
  active = context;
  current = undefined;
  signed = undefined;
  byId('receipt').hidden = true;
  if (!first) return;
  const ctx = (): DashboardContext => active!;
  const form = byId<HTMLFormElement>('trail-filters');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void loadTrail(ctx(), true);
  });
  form.addEventListener('reset', () => {
    agentFilter = undefined;
    setTimeout(() => void loadTrail(ctx(), true), 0);
  });
  byId('trail-more').addEventListener('click', () => void loadTrail(ctx(), false));
  // One agent's view: what it did and what was refused (audit.trail key_id).
  byId('trail-list').addEventListener('click', (event) => {
    const button = (event.target as HTMLElement).closest<HTMLButtonElement>('button.agent-only');
    if (button === null) return;
    const name = button.getAttribute('aria-label')?.match(/“(.*)”/)?.[1] ?? button.dataset.keyId!;
    agentFilter = { key_id: button.dataset.keyId!, name };
    void loadTrail(ctx(), true).then(() => byId('trail-agent-all').focus());
  });
  byId('trail-agent-all').addEventListener('click', () => {
    agentFilter = undefined;
    void loadTrail(ctx(), true);
  });
  byId('receipt-verify').addEventListener('click', () => void verifyShown(ctx()));
  byId('receipt-download').addEventListener('click', downloadShown);
  byId<HTMLFormElement>('receipt-find').addEventListener('submit', (event) => {
    event.preventDefault();
    const v = Number(new FormData(event.target as HTMLFormElement).get('audit_id'));
    location.hash = `#/receipt/${v}`;
  });
  // A charge's refund (undone_by): the other verb through its own consent gate — for a refund,
  // the typed phrase the signed-in human types in the dialog.
  byId('receipt-undo-by').addEventListener('click', async () => {
    const entry = current;
    if (entry === undefined) return;
    const by = undoneBy(ctx(), entry, signed);
    if (by === undefined) return;
    const status = byId('receipt-status');
    const button = byId<HTMLButtonElement>('receipt-undo-by');
    button.disabled = true;
    status.textContent = `${by.label}…`;
    const { envelope, declined } = await ctx().call(by.verb, by.args);
    button.disabled = false;
    if (declined) {
      status.textContent = 'Cancelled; no money moved.';
      return;
    }
    if (!envelope.ok) {
      status.textContent = `Refused: ${describeError(envelope)}`;
      return;
    }
    // Show the charge as it is now, then say what happened, linking the refund's own receipt.
    await openReceipt(ctx(), entry.audit_id);
    byId<HTMLButtonElement>('receipt-undo-by').hidden = true;
    byId('receipt-status').replaceChildren(
      `Done: ${ctx().title(by.verb)} (`,
      el('a', { href: `#/receipt/${envelope.audit_id}` }, `receipt #${envelope.audit_id}`),
      ').',
    );
  });
  byId('receipt-revert').addEventListener('click', async () => {
    const entry = current;
    if (entry === undefined) return;
    const status = byId('receipt-status');
    const button = byId<HTMLButtonElement>('receipt-revert');
    button.disabled = true;
    status.textContent = `Undoing #${entry.audit_id}…`;
    const { envelope, declined } = await ctx().call('audit.revert', { audit_id: entry.audit_id });
    button.disabled = false;
    if (declined) {
      status.textContent = 'Undo cancelled; nothing was changed.';
      return;
    }
    if (!envelope.ok) {
      status.textContent = `Undo refused: ${describeError(envelope)}`;
      return;
    }
    const result = envelope.result as {
      reverted?: boolean;
      revert_action?: string;
      message?: string;
      reason?: string;
      revert_audit_id?: number;
    };
    const said =
      result.reverted === true
        ? `Reverted: ${result.revert_action ?? 'done'}${result.revert_audit_id !== undefined ? ` (receipt #${result.revert_audit_id})` : ''}.`
        : `Not reverted: ${result.message ?? result.reason ?? 'no reason given'}.`;
    // Show the receipt as it is now (undone), then say what happened.
    await openReceipt(ctx(), entry.audit_id);
    byId<HTMLButtonElement>('receipt-revert').hidden = true;
    byId('receipt-status').textContent = said;
  });
}

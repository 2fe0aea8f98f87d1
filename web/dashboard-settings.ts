/**
 * View "Settings", per role: daily caps per consent class (limit, used today, next reset, local
 * time) and the blocked verb names (tenant.settings, admin and owner), where typed phrases go,
 * and this session's key. A role below tenant.settings' floor is told who manages them (the verb
 * is not called: no `role_denied` row).
 *
 * The owner edits them here: a cap per class (tenant.caps_set; empty = the default), block and
 * unblock a verb name (tenant.blocklist_add / _remove), where a typed phrase counts
 * (tenant.phrase_channel_set). Each change is dispatched like any other write — the confirmation
 * dialog, the audit row (agent_type `dashboard`), undo from its receipt — and the view says what
 * changed with a link to the receipt. Other roles see the same figures read-only.
 *
 * API keys (api_keys.list, admin and owner): the tenant's keys with their role, agent and dates.
 * The owner creates one (name, a role up to the own; api_keys.create, confirmation) and sees the
 * key once, with a Copy button and the warning that it is not shown again (it comes in the
 * envelope's `secret` member, kept nowhere: spec/envelope.md §secret), and revokes one
 * (api_keys.revoke, typed phrase). Roles below admin see nothing of it and call nothing for it.
 */
import { byId, el } from './element.ts';
import { describeError, ROLE_RANK, type DashboardContext } from './dashboard-context.ts';
import { localTime, setBusinessTimeZone } from './dashboard-words.ts';
import type { CapView as Cap } from '../src/verbs/tenant-settings.ts';

const CLASS_WORDS: Readonly<Record<string, string>> = {
  WRITE_REVERSIBLE: 'Reversible changes',
  WRITE_FINANCIAL: 'Money moved',
  IRREVERSIBLE: 'Cannot be undone',
};

/** Run one settings change as the signed-in owner; say what happened, then reload the view. */
async function change(
  ctx: DashboardContext,
  verb: string,
  args: Record<string, unknown>,
  done: string,
): Promise<void> {
  const status = byId('settings-status');
  status.textContent = 'Saving…';
  const { envelope, declined } = await ctx.call(verb, args);
  if (declined) {
    status.textContent = 'Cancelled; nothing was changed.';
    return;
  }
  if (!envelope.ok) {
    status.textContent = `Not changed: ${describeError(envelope)}`;
    return;
  }
  await loadSettings(ctx);
  byId('settings-status').replaceChildren(
    `${done} `,
    el('a', { href: `#/receipt/${envelope.audit_id}` }, `Receipt #${envelope.audit_id}`),
    '.',
  );
}

/** A one-field form: label, input, submit button. */
function inlineForm(
  labelText: string,
  input: HTMLInputElement,
  button: string,
  onSubmit: (value: string) => void,
): HTMLFormElement {
  const form = el(
    'form',
    { class: 'inline-form' },
    el('label', {}, labelText, input),
    el('button', { type: 'submit' }, button),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    onSubmit(input.value.trim());
  });
  return form;
}

/** The owner's "Change a daily cap" form: kind, new limit (empty: the default), Set. */
function capForm(ctx: DashboardContext, caps: Record<string, Cap>): HTMLFormElement {
  const kind = el(
    'select',
    { name: 'consent_class' },
    ...Object.keys(caps).map((cls) => el('option', { value: cls }, CLASS_WORDS[cls] ?? cls)),
  );
  const limit = el('input', { type: 'number', name: 'limit', min: 0, max: 1000000, inputmode: 'numeric' });
  const form = el(
    'form',
    { class: 'inline-form', 'aria-label': 'Change a daily cap' },
    el('label', {}, 'Kind', kind),
    el('label', {}, 'New daily limit (empty: the default)', limit),
    el('button', { type: 'submit' }, 'Set'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const cls = kind.value;
    const words = CLASS_WORDS[cls] ?? cls;
    const v = limit.value.trim();
    void change(
      ctx,
      'tenant.caps_set',
      { consent_class: cls, limit: v === '' ? null : Number(v) },
      v === ''
        ? `The daily cap of ${words} is back to its default (${caps[cls]?.default ?? ''}).`
        : `The daily cap of ${words} is now ${Number(v)}.`,
    );
  });
  return form;
}

/** One key as api_keys.list answers it (src/verbs/api-keys.ts ApiKeyView). */
interface KeyRow {
  key_id: string;
  name: string;
  role: string;
  agent_type: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

const ROLE_WORDS: Readonly<Record<string, string>> = {
  read_only: 'Read only',
  employee: 'Employee',
  admin: 'Admin',
  owner: 'Owner',
};

/** The panel that shows a new key once: the key, Copy, and the warning. */
function revealKey(apiKey: string, name: string): HTMLElement {
  const field = el('input', {
    type: 'text',
    readonly: true,
    value: apiKey,
    id: 'new-api-key',
    'aria-describedby': 'new-api-key-warning',
    spellcheck: 'false',
    autocomplete: 'off',
  });
  const copied = el('span', { role: 'status', class: 'muted' });
  const copy = el('button', { type: 'button' }, 'Copy');
  copy.addEventListener('click', () => {
    field.select();
    void navigator.clipboard?.writeText(apiKey).then(
      () => (copied.textContent = 'Copied.'),
      () => (copied.textContent = 'Select the key and copy it yourself.'),
    );
  });
  return el(
    'div',
    { class: 'new-key', 'data-new-key': '' },
    el('label', { for: 'new-api-key' }, `New key "${name}"`),
    el('div', { class: 'new-key-row' }, field, copy, copied),
    el(
      'p',
      { class: 'note', id: 'new-api-key-warning' },
      'Copy this key now and keep it somewhere safe: it will not be shown again. If you lose it, revoke it and create another.',
    ),
  );
}

/** The "API keys" panel (admin and owner); null for the roles that cannot list keys. */
async function apiKeysSection(ctx: DashboardContext): Promise<HTMLElement | null> {
  if (!ctx.canUse('api_keys.list')) return null;
  const panel = section('API keys');
  panel.id = 'api-keys';
  const status = el('p', { role: 'status', id: 'api-keys-status' });
  const { envelope } = await ctx.call('api_keys.list', {});
  if (!envelope.ok) {
    panel.append(el('p', {}, `Could not load the keys: ${describeError(envelope)}`));
    return panel;
  }
  const keys = (envelope.result as { data: { keys: KeyRow[] } }).data.keys;
  const canRevoke = ctx.canUse('api_keys.revoke');
  const rows = keys.map((k) => {
    let action: Node | string = '';
    if (k.revoked_at === null && canRevoke) {
      const b = el(
        'button',
        { type: 'button', class: 'secondary', 'aria-label': `Revoke key ${k.name || k.key_id}` },
        'Revoke',
      );
      b.addEventListener('click', () => {
        void (async () => {
          status.textContent = 'Revoking…';
          const { envelope: env, declined } = await ctx.call('api_keys.revoke', { key_id: k.key_id });
          if (declined) {
            status.textContent = 'Cancelled; the key still works.';
            return;
          }
          if (!env.ok) {
            status.textContent = `Not revoked: ${describeError(env)}`;
            return;
          }
          await loadSettings(ctx);
          byId('api-keys-status').replaceChildren(
            `Key ${k.name || k.key_id} is revoked; calls with it are refused. `,
            el('a', { href: `#/receipt/${env.audit_id}` }, `Receipt #${env.audit_id}`),
            '.',
          );
        })();
      });
      action = b;
    }
    return el(
      'tr',
      { 'data-key-id': k.key_id },
      el('th', { scope: 'row' }, k.name || '—', el('br'), el('code', {}, k.key_id)),
      el('td', {}, ROLE_WORDS[k.role] ?? k.role),
      el('td', {}, k.agent_type),
      el('td', {}, localTime(k.created_at)),
      el('td', {}, k.last_used_at === null ? '—' : localTime(k.last_used_at)),
      el(
        'td',
        {},
        k.revoked_at === null ? 'Active' : `Revoked ${localTime(k.revoked_at)}`,
        k.key_id === ctx.session.key_id ? ' (this session)' : '',
      ),
      el('td', {}, action),
    );
  });
  panel.append(
    el(
      'div',
      { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'API keys (scrolls sideways)' },
      el(
        'table',
        {},
        el('caption', {}, 'Keys agents and people sign in with'),
        el(
          'thead',
          {},
          el(
            'tr',
            {},
            ...['Name', 'Role', 'Agent', 'Created', 'Last used', 'Status', 'Action'].map((h) =>
              el('th', { scope: 'col' }, h),
            ),
          ),
        ),
        el('tbody', {}, ...rows),
      ),
    ),
  );
  if (ctx.canUse('api_keys.create')) {
    const own = ROLE_RANK[ctx.session.role] ?? 0;
    const name = el('input', {
      type: 'text',
      name: 'name',
      maxlength: 100,
      autocomplete: 'off',
      required: true,
    });
    const role = el(
      'select',
      { name: 'role' },
      ...Object.keys(ROLE_WORDS)
        .filter((r) => (ROLE_RANK[r] ?? 0) <= own)
        .map((r) => el('option', { value: r, selected: r === 'employee' }, ROLE_WORDS[r]!)),
    );
    const form = el(
      'form',
      { class: 'inline-form', 'aria-label': 'Create an API key' },
      el('label', {}, 'Name', name),
      el('label', {}, 'Role', role),
      el('button', { type: 'submit' }, 'Create key'),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const n = name.value.trim();
      if (n === '') {
        status.textContent = 'Give the key a name: what it is for.';
        return;
      }
      void (async () => {
        status.textContent = 'Creating…';
        const { envelope: env, declined } = await ctx.call('api_keys.create', { name: n, role: role.value });
        if (declined) {
          status.textContent = 'Cancelled; no key was created.';
          return;
        }
        const secret = (env as { secret?: { api_key?: unknown } }).secret?.api_key;
        if (!env.ok || typeof secret !== 'string') {
          status.textContent = env.ok
            ? 'The key was created but not shown (a repeated request): revoke it and create another.'
            : `Not created: ${describeError(env)}`;
          return;
        }
        await loadSettings(ctx);
        byId('api-keys').append(revealKey(secret, n));
        byId('api-keys-status').replaceChildren(
          `Key "${n}" created. `,
          el('a', { href: `#/receipt/${env.audit_id}` }, `Receipt #${env.audit_id}`),
          '.',
        );
        byId('new-api-key').focus();
      })();
    });
    panel.append(form);
  } else {
    panel.append(el('p', { class: 'muted' }, 'Only the owner creates and revokes keys.'));
  }
  panel.append(status);
  return panel;
}

function section(title: string, ...children: Array<Node | string | null>): HTMLElement {
  return el('section', { class: 'panel', 'aria-label': title }, el('h2', {}, title), ...children);
}

/** (Re)load the settings view. */
/**
 * "Deliveries": outbox messages (emails, webhooks) waiting and dead letters — messages that failed
 * their last attempt and are never retried (system.telemetry's queues; docs/authoring.md
 * §8(c)). Null when the verb is not callable here.
 */
async function deliveriesSection(ctx: DashboardContext): Promise<HTMLElement | null> {
  if (!ctx.canUse('system.telemetry')) return null;
  const { envelope } = await ctx.call('system.telemetry', {});
  if (!envelope.ok) return null;
  const q = (
    envelope.result as {
      queues: {
        outbox_pending: number;
        outbox_dead?: number;
        dead_letters?: Array<{
          outbox_id: number;
          kind: string;
          attempts: number;
          last_error: string | null;
        }>;
      };
    }
  ).queues;
  const dead = q.dead_letters ?? [];
  return section(
    'Deliveries',
    el(
      'p',
      { 'data-outbox-dead': String(q.outbox_dead ?? 0) },
      `${q.outbox_pending} waiting to be sent; ${q.outbox_dead ?? 0} dead letter${q.outbox_dead === 1 ? '' : 's'} (failed every attempt, not retried).`,
    ),
    dead.length === 0
      ? null
      : el(
          'ul',
          { class: 'dead-letters', 'aria-label': 'Newest dead letters' },
          ...dead.map((d) =>
            el(
              'li',
              {},
              el('code', {}, `#${d.outbox_id} ${d.kind}`),
              ` after ${d.attempts} attempts: ${d.last_error ?? 'no error recorded'}`,
            ),
          ),
        ),
  );
}

export async function loadSettings(ctx: DashboardContext): Promise<void> {
  // Loading: the panels shown are the previous ones until the new answer is in (aria-busy).
  const body = byId('settings-body');
  body.setAttribute('aria-busy', 'true');
  try {
    await renderSettings(ctx);
  } finally {
    body.removeAttribute('aria-busy');
  }
}

async function renderSettings(ctx: DashboardContext): Promise<void> {
  const body = byId('settings-body');
  const status = byId('settings-status');
  const session = section(
    'Your session',
    el(
      'dl',
      { class: 'fields' },
      el('dt', {}, 'Role'),
      el('dd', {}, ctx.session.role),
      el('dt', {}, 'API key'),
      el('dd', {}, ctx.session.key_id ?? '—'),
      el('dt', {}, 'Session ends'),
      el('dd', {}, localTime(ctx.session.expires_at)),
    ),
  );
  const phrase = section(
    'Typed phrases',
    el(
      'p',
      {},
      'Charges, refunds and actions that cannot be undone wait in "Waiting for you" until an admin or the owner types the phrase shown on the card.',
    ),
  );
  if (!ctx.canUse('tenant.settings')) {
    body.replaceChildren(session, phrase);
    status.textContent = 'Caps and the blocklist are managed by an admin or the owner.';
    return;
  }
  const { envelope } = await ctx.call('tenant.settings', {});
  if (!envelope.ok) {
    body.replaceChildren(session, phrase);
    status.textContent = `Could not load the settings: ${describeError(envelope)}`;
    return;
  }
  const data = (
    envelope.result as {
      data: {
        caps: Record<string, Cap>;
        blocklist: { default: string[]; tenant: string[] };
        phrase_channel?: 'any' | 'human';
        time_zone?: string;
        business_day?: { day: string; start: string; end: string };
      };
    }
  ).data;
  // Where a typed phrase counts (spec/consent.md §phrase-channel); changed with `solid tenant phrase-channel`.
  phrase.append(
    el(
      'p',
      { 'data-phrase-channel': data.phrase_channel ?? 'any' },
      data.phrase_channel === 'human'
        ? "Phrases count only when a person types them: here, at a terminal prompt, in an MCP client's form or in a page dialog. An agent sending a phrase itself is refused."
        : 'Phrases count from any channel, agents included. The owner can require a person.',
    ),
  );
  setBusinessTimeZone(data.time_zone);
  const zoneNow = data.time_zone ?? 'UTC';
  // The business's time zone: where its day, and so its daily caps, begin. A signed-in person only
  // (tenant.time_zone_set refuses an agent's key): moving midnight moves the cap boundary.
  const zoneInput = el('input', {
    type: 'text',
    name: 'time_zone',
    autocomplete: 'off',
    spellcheck: 'false',
    maxlength: 64,
    list: 'time-zones',
    placeholder: 'e.g. Europe/Berlin',
  });
  const zones =
    typeof (Intl as { supportedValuesOf?: (k: string) => string[] }).supportedValuesOf === 'function'
      ? (Intl as unknown as { supportedValuesOf: (k: string) => string[] }).supportedValuesOf('timeZone')
      : [];
  const zone = section(
    'Time zone',
    el(
      'p',
      { 'data-time-zone': zoneNow },
      `This business keeps time in ${zoneNow}: its day, and its daily caps, begin at midnight there${data.business_day ? ` (today is ${data.business_day.day})` : ''}. Every time on this dashboard is shown in it.`,
    ),
    ctx.canUse('tenant.time_zone_set')
      ? inlineForm('New time zone', zoneInput, 'Set time zone', (v) => {
          if (v === '') return;
          void change(ctx, 'tenant.time_zone_set', { time_zone: v }, `The business now keeps time in ${v}.`);
        })
      : null,
    el('datalist', { id: 'time-zones' }, ...zones.map((z) => el('option', { value: z }))),
  );
  const owner = ctx.canUse('tenant.caps_set');
  const caps = section(
    'Daily caps',
    el(
      'div',
      { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'Daily caps (scrolls sideways)' },
      el(
        'table',
        {},
        el('caption', {}, 'Actions allowed per day, per kind'),
        el(
          'thead',
          {},
          el(
            'tr',
            {},
            ...['Kind', 'Limit', 'Used today', 'Resets'].map((h) => el('th', { scope: 'col' }, h)),
          ),
        ),
        el(
          'tbody',
          {},
          ...Object.entries(data.caps).map(([cls, c]) =>
            el(
              'tr',
              { 'data-class': cls },
              el('th', { scope: 'row' }, CLASS_WORDS[cls] ?? cls),
              el('td', {}, `${c.limit}${c.custom ? '' : ' (default)'}`),
              el('td', {}, String(c.used_today)),
              el('td', {}, localTime(c.resets_at)),
            ),
          ),
        ),
      ),
    ),
    owner ? capForm(ctx, data.caps) : null,
  );
  const blocked = [...data.blocklist.tenant];
  const canBlock = ctx.canUse('tenant.blocklist_add');
  const blocklist = section(
    'Blocked verbs',
    blocked.length === 0
      ? el('p', {}, 'This business blocks no verb of its own.')
      : el(
          'ul',
          { class: 'blocked', 'aria-label': 'Verbs this business blocks' },
          ...blocked.map((name) =>
            el(
              'li',
              { 'data-blocked': name },
              el('code', {}, name),
              ctx.canUse('tenant.blocklist_remove')
                ? (() => {
                    const b = el('button', { type: 'button', class: 'secondary' }, `Unblock ${name}`);
                    b.addEventListener(
                      'click',
                      () =>
                        void change(
                          ctx,
                          'tenant.blocklist_remove',
                          { name },
                          `${name} is no longer blocked.`,
                        ),
                    );
                    return b;
                  })()
                : null,
            ),
          ),
        ),
    canBlock
      ? inlineForm(
          'Block a verb name',
          el('input', {
            type: 'text',
            name: 'name',
            autocomplete: 'off',
            spellcheck: 'false',
            maxlength: 200,
          }),
          'Block',
          (v) =>
            void change(
              ctx,
              'tenant.blocklist_add',
              { name: v },
              `${v} is now blocked for every agent and person.`,
            ),
        )
      : null,
    el('p', { class: 'muted' }, `Always blocked: ${data.blocklist.default.join(', ') || 'none'}.`),
  );
  if (ctx.canUse('tenant.phrase_channel_set')) {
    const current = data.phrase_channel ?? 'any';
    const radio = (value: 'any' | 'human', text: string): HTMLLabelElement =>
      el(
        'label',
        { class: 'check' },
        el('input', { type: 'radio', name: 'phrase_channel', value, checked: current === value }),
        ` ${text}`,
      );
    const form = el(
      'form',
      { class: 'phrase-form' },
      el(
        'fieldset',
        {},
        el('legend', {}, 'Where a typed phrase counts'),
        radio('any', 'From any channel, agents included'),
        radio('human', 'Only when a person types it'),
      ),
      el('button', { type: 'submit' }, 'Save'),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const v = String(new FormData(form).get('phrase_channel') ?? current);
      if (v === current) return;
      void change(
        ctx,
        'tenant.phrase_channel_set',
        { phrase_channel: v },
        v === 'human'
          ? 'Typed phrases now count only from a person.'
          : 'Typed phrases now count from any channel.',
      );
    });
    phrase.append(form);
  }
  const keys = await apiKeysSection(ctx);
  const deliveries = await deliveriesSection(ctx);
  body.replaceChildren(
    zone,
    caps,
    blocklist,
    phrase,
    ...(keys === null ? [] : [keys]),
    ...(deliveries === null ? [] : [deliveries]),
    session,
  );
  status.textContent = owner ? '' : 'Only the owner can change caps and the blocklist.';
}

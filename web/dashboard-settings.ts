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
 */
import { byId, el } from './element.ts';
import { describeError, type DashboardContext } from './dashboard-context.ts';
import { localTime } from './dashboard-words.ts';
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

function section(title: string, ...children: Array<Node | string | null>): HTMLElement {
  return el('section', { class: 'panel', 'aria-label': title }, el('h2', {}, title), ...children);
}

/** (Re)load the settings view. */
export async function loadSettings(ctx: DashboardContext): Promise<void> {
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
  const owner = ctx.canUse('tenant.caps_set');
  const caps = section(
    'Daily caps',
    el(
      'div',
      { class: 'table-wrap' },
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
  body.replaceChildren(caps, blocklist, phrase, session);
  status.textContent = owner ? '' : 'Only the owner can change caps and the blocklist.';
}

/**
 * View "Settings", per role: daily caps per consent class (limit, used today, next reset, local
 * time) and the blocked verb names (tenant.settings, admin and owner), where typed phrases go,
 * and this session's key. A role below tenant.settings' floor is told who manages them (the verb
 * is not called: no `role_denied` row).
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
        : 'Phrases count from any channel, agents included. The owner can require a person with `solid tenant phrase-channel human`.',
    ),
  );
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
  );
  const blocked = [...data.blocklist.tenant];
  const blocklist = section(
    'Blocked verbs',
    el(
      'p',
      {},
      blocked.length === 0
        ? 'This business blocks no verb of its own.'
        : `This business blocks: ${blocked.join(', ')}.`,
    ),
    el('p', { class: 'muted' }, `Always blocked: ${data.blocklist.default.join(', ') || 'none'}.`),
  );
  body.replaceChildren(caps, blocklist, phrase, session);
  status.textContent =
    ctx.session.role === 'owner' ? '' : 'Only the owner can change caps and the blocklist.';
}

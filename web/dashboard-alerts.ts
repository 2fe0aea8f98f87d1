/**
 * The banner (#alerts, above the views, admins and owners): what needs the owner's attention now,
 * from audit.alerts — a daily cap used up today ("resets at 00:00, Europe/Berlin") and an agent
 * whose refusals burst (named by its key's name, with its refusals in words), each linking to the
 * activity that explains it. Re-read with every view and with the approvals queue.
 * Spec: spec/audit.md §refusal-bursts, spec/consent.md §caps.
 */
import { byId, el } from './element.ts';
import type { DashboardContext } from './dashboard-context.ts';
import { clockTime, setBusinessTimeZone, words } from './dashboard-words.ts';

interface Alerts {
  time_zone: string;
  caps: Array<{ consent_class: string; cap: number; used: number; resets_at: string }>;
  bursts: Array<{
    key_id: string;
    key_name: string | null;
    agent_type: string;
    refusals: number;
    window_start: string;
    window_end: string;
    reasons: Array<{ reason: string; count: number }>;
  }>;
  threshold: { refusals: number; window_minutes: number };
}

/** What each capped class is, for the owner. */
const CLASS_WORDS: Readonly<Record<string, string>> = {
  WRITE_FINANCIAL: 'money actions (charges, refunds)',
  IRREVERSIBLE: 'actions that cannot be undone',
  WRITE_REVERSIBLE: 'changes that can be undone',
};

/** Load and show the banner; hidden when nothing needs attention or the role cannot read it. */
export async function loadAlerts(ctx: DashboardContext): Promise<void> {
  const box = byId('alerts');
  if (!ctx.canUse('audit.alerts')) {
    box.hidden = true;
    return;
  }
  const { envelope } = await ctx.call('audit.alerts', {});
  if (!envelope.ok) {
    box.hidden = true;
    return;
  }
  const a = (envelope.result as { data: Alerts }).data;
  setBusinessTimeZone(a.time_zone);
  const items: HTMLElement[] = [];
  for (const c of a.caps) {
    items.push(
      el(
        'li',
        { 'data-alert': 'cap', 'data-class': c.consent_class },
        el('strong', {}, 'Daily limit reached: '),
        `${c.used} of ${c.cap} ${CLASS_WORDS[c.consent_class] ?? words(c.consent_class)} today. Agents are refused more until ${clockTime(c.resets_at)} (${a.time_zone}). `,
        el('a', { href: '#/settings' }, 'Change the limit'),
      ),
    );
  }
  for (const b of a.bursts) {
    const name = b.key_name !== null && b.key_name !== '' ? `“${b.key_name}”` : `key ${b.key_id}`;
    const why = b.reasons
      .slice(0, 3)
      .map((r) => `${r.count} × ${words(r.reason)}`)
      .join(', ');
    items.push(
      el(
        'li',
        { 'data-alert': 'burst', 'data-key': b.key_id },
        el('strong', {}, 'An agent keeps being refused: '),
        `${name} (${b.agent_type}) was refused ${b.refusals} times between ${clockTime(b.window_start)} and ${clockTime(b.window_end)} (${why}). It may be probing what it may do. `,
        el('a', { href: '#/activity' }, 'See what it tried'),
      ),
    );
  }
  if (items.length === 0) {
    box.hidden = true;
    box.replaceChildren();
    return;
  }
  box.replaceChildren(el('h2', { class: 'visually-hidden' }, 'Needs your attention'), el('ul', {}, ...items));
  box.hidden = false;
}

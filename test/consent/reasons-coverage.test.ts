/**
 * Every consent reason (the §consent table of spec/reasons.md, plus role_denied, blocked_verb and
 * identity_override) is produced by the runtime and leaves an audit row with that reason — one
 * scenario walks through all of them, so a reason the gates can no longer produce turns this red.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { consentHarness, pendingOf } from './support.ts';

function consentSectionReasons(): string[] {
  const page = readFileSync(new URL('../../spec/reasons.md', import.meta.url), 'utf8');
  const section = page.slice(page.indexOf('## §consent'), page.indexOf('## §idempotency'));
  return [...section.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]!);
}

test('every consent reason is produced by a dispatch and audited with that reason', async (t) => {
  const h = await consentHarness(t);
  const wanted = [...consentSectionReasons(), 'role_denied', 'blocked_verb', 'identity_override'];
  assert.ok(wanted.length >= 13);
  const args = { invoice_id: 1, amount_cents: 100 };
  const phrase = 'CHARGE $1.00 to invoice #1';
  const got = new Map<string, string | undefined>();
  const note = (label: string, reason: string | undefined) => got.set(label, reason);

  const c = pendingOf(await h.call('admin', 'charge_invoice', args)); // dispatch_pending
  note(
    'nonce_required',
    (await h.call('admin', 'charge_invoice', args, { confirm: true, typed_phrase: phrase })).error?.reason,
  );
  note(
    'nonce_invalid',
    (
      await h.call(
        'admin',
        'charge_invoice',
        { ...args, amount_cents: 2 },
        { confirm: true, nonce: c.nonce, typed_phrase: phrase },
      )
    ).error?.reason,
  );
  note(
    'phrase_mismatch',
    (
      await h.call('admin', 'charge_invoice', args, {
        confirm: true,
        nonce: c.nonce,
        typed_phrase: phrase.toLowerCase(),
      })
    ).error?.reason,
  );
  note('role_denied', (await h.call('employee', 'charge_invoice', args)).error?.reason);
  note('blocked_verb', (await h.call('owner', 'customer_delete', {})).error?.reason);
  note(
    'identity_override',
    (await h.call('admin', 'charge_invoice', { ...args, company_id: 3 })).error?.reason,
  );
  note(
    'approval_not_found',
    (await h.callAsHuman('owner', 'approvals.approve', { approval_id: 'apv_none', typed_phrase: phrase }))
      .error?.reason,
  );
  const rejected = pendingOf(await h.call('admin', 'charge_invoice', { ...args, invoice_id: 2 }));
  assert.equal(
    (
      await h.rt.dispatch({ surface: 'cli', principal: h.human('owner') }, 'approvals.reject', {
        approval_id: rejected.approval_id,
      })
    ).ok,
    true,
  );
  note(
    'approval_not_pending',
    (
      await h.rt.dispatch({ surface: 'cli', principal: h.human('owner') }, 'approvals.reject', {
        approval_id: rejected.approval_id,
      })
    ).error?.reason,
  );
  note(
    'approval_rejected',
    (
      await h.call(
        'admin',
        'charge_invoice',
        { ...args, invoice_id: 2 },
        { confirm: true, nonce: rejected.nonce },
      )
    ).error?.reason,
  );
  assert.equal(
    (await h.call('admin', 'charge_invoice', args, { confirm: true, nonce: c.nonce, typed_phrase: phrase }))
      .ok,
    true,
  );
  note(
    'nonce_replayed',
    (await h.call('admin', 'charge_invoice', args, { confirm: true, nonce: c.nonce, typed_phrase: phrase }))
      .error?.reason,
  );
  // The same charge done on a second nonce supersedes the first attempt's approval and nonce.
  const sixth = { ...args, invoice_id: 6 };
  const stale = pendingOf(await h.call('admin', 'charge_invoice', sixth));
  const fresh = pendingOf(await h.call('admin', 'charge_invoice', sixth));
  const phrase6 = 'CHARGE $1.00 to invoice #6';
  assert.equal(
    (
      await h.call('admin', 'charge_invoice', sixth, {
        confirm: true,
        nonce: fresh.nonce,
        typed_phrase: phrase6,
      })
    ).ok,
    true,
  );
  note(
    'approval_superseded',
    (
      await h.call('admin', 'charge_invoice', sixth, {
        confirm: true,
        nonce: stale.nonce,
        typed_phrase: phrase6,
      })
    ).error?.reason,
  );
  // An agent holding the owner's key cannot change consent settings: only a signed-in human can.
  const ttl = { consent_class: 'WRITE_FINANCIAL', minutes: 60 };
  const settingsPending = pendingOf(await h.call('owner', 'tenant.approval_ttl_set', ttl));
  note(
    'human_required',
    (await h.call('owner', 'tenant.approval_ttl_set', ttl, { confirm: true, nonce: settingsPending.nonce }))
      .error?.reason,
  );
  const late = pendingOf(await h.call('admin', 'charge_invoice', { ...args, invoice_id: 4 }));
  await h.setSettings({ caps: { WRITE_FINANCIAL: 1 } });
  // A used-up cap refuses the preflight itself (no nonce is handed out).
  note(
    'daily_cap_exceeded',
    (await h.call('admin', 'charge_invoice', { ...args, invoice_id: 3 })).error?.reason,
  );
  h.clock.ms += 300_000;
  note(
    'nonce_expired',
    (
      await h.call(
        'admin',
        'charge_invoice',
        { ...args, invoice_id: 4 },
        { confirm: true, nonce: late.nonce, typed_phrase: late.typed_phrase },
      )
    ).error?.reason,
  );
  await h.setSettings({ phrase_channel: 'human' });
  const agentPhrase = pendingOf(await h.call('admin', 'charge_invoice', { ...args, invoice_id: 5 }));
  note(
    'phrase_channel_human',
    (
      await h.call(
        'admin',
        'charge_invoice',
        { ...args, invoice_id: 5 },
        { confirm: true, nonce: agentPhrase.nonce, typed_phrase: 'CHARGE $1.00 to invoice #5' },
      )
    ).error?.reason,
  );

  for (const [label, reason] of got) assert.equal(reason, label);
  const audited = new Set((await h.audit()).map((r) => r.reason).filter((r): r is string => r !== null));
  const missing = wanted.filter((r) => !audited.has(r));
  assert.deepEqual(missing, [], 'consent reasons never produced/audited');
});

/**
 * UCP under the tenant setting `phrase_channel: human` (spec/consent.md §phrase-channel): a UCP
 * request never carries a typed phrase and is an agent channel, so its pending answer omits the
 * phrase; a human approval (dashboard, marked human) lets the signed re-call with the nonce run,
 * and the same approval sent by a key over the API is refused.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createUcpHarness } from './harness.ts';
import type { Envelope } from '../../../src/spec/types.ts';

const CHARGE = 'com.example.ar.notes_charge';
const PHRASE = 'CHARGE 500 CENTS';

it('UCP human: the pending answer hides the phrase; only a human approval lets the nonce run', async (t) => {
  const u = await createUcpHarness(t);
  await u.configure({
    platforms: [{ profile: u.platform.url, role: 'admin', max_class: 'WRITE_REVERSIBLE' }],
  });
  const row = await u.h.rt.store.read((q) =>
    q.get<{ settings: string }>('SELECT settings FROM tenants WHERE company_id = ?', [u.h.companyId]),
  );
  const settings = { ...(JSON.parse(row!.settings) as Record<string, unknown>), phrase_channel: 'human' };
  await u.h.rt.store.write((tx) =>
    tx.run('UPDATE tenants SET settings = ? WHERE company_id = ?', [JSON.stringify(settings), u.h.companyId]),
  );
  u.h.rt.tenants.invalidate();

  const first = await u.call(CHARGE, { amount_cents: 500 });
  assert.equal(first.status, 202, first.text);
  assert.ok(!first.text.includes(PHRASE), 'the phrase is not in the UCP answer');
  const pending = first.json<Envelope>();
  assert.equal(pending.consent!.phrase_channel, 'human');
  const approvalId = pending.consent!.approval_id!;

  const byKey = await u.h.rt.dispatch(
    { surface: 'http', principal: u.h.principal('owner') },
    'approvals.approve',
    {
      approval_id: approvalId,
      typed_phrase: PHRASE,
    },
  );
  assert.equal(byKey.error?.reason, 'human_required');
  const byHuman = await u.h.rt.dispatch(
    { surface: 'http', principal: u.h.human('owner') },
    'approvals.approve',
    { approval_id: approvalId, typed_phrase: PHRASE },
  );
  assert.equal(byHuman.ok, true, JSON.stringify(byHuman.error));
  const done = await u.call(
    CHARGE,
    { amount_cents: 500 },
    { headers: { 'solid-consent-nonce': pending.consent!.nonce } },
  );
  assert.equal(done.status, 200, done.text);
});

/**
 * An agent probing the guard rails (issue 32 row 10, spec/audit.md §refusal-bursts): when one
 * agent credential collects REFUSAL_BURST.refusals refusals within one window, the refusal that
 * reaches the threshold queues one `refusals.burst` webhook event (not one per refusal after it,
 * and none for another key below the threshold), and audit.alerts names the key by its name for
 * the dashboard's banner, together with a daily cap used up today.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { createTestRuntime } from '../support/runtime.ts';
import { REFUSAL_BURST } from '../../src/runtime/ledger/write/refusal-burst.ts';
import { WEBHOOK_KIND } from '../../src/runtime/ledger/write/webhook-endpoints.ts';
import { dispatchAs } from '../support/keyed.ts';

test('a burst of refusals of one agent key queues refusals.burst once and shows in audit.alerts by key name', async (t) => {
  const clock = { ms: Date.parse('2026-12-07T10:01:00.000Z') };
  const h = await createTestRuntime(t, { clock: () => new Date(clock.ms) });
  const owner = { surface: 'http' as const, principal: h.human('owner') };
  const add = { url: 'https://hooks.example.com/solid', events: ['refusals.burst', 'cap.reached'] };
  const pending = await h.rt.dispatch(owner, 'webhooks.add', add);
  const added = await h.rt.dispatch(owner, 'webhooks.add', add, {
    confirm: true,
    nonce: pending.consent!.nonce,
  });
  assert.equal(added.ok, true, JSON.stringify(added.error));
  // A named key that probes: a read_only key asking for a write verb again and again.
  const made = await h.rt.createApiKey({
    company_id: h.companyId,
    user_id: 4,
    role: 'read_only',
    agent_type: 'claude-desktop',
    name: 'Night-shift bot',
  });
  const probe = () =>
    dispatchAs(h.rt, { surface: 'http', apiKey: made }, 'api_keys.create', { name: 'x', role: 'owner' });
  const bursts = async () =>
    (
      await h.rt.store.read((q) =>
        q.all<{ payload: unknown }>('SELECT payload FROM outbox WHERE kind = ? ORDER BY outbox_id', [
          WEBHOOK_KIND,
        ]),
      )
    )
      .map((r) => (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload))
      .filter((p) => p.type === 'refusals.burst');
  for (let i = 1; i < REFUSAL_BURST.refusals; i++) assert.equal((await probe()).error?.reason, 'role_denied');
  assert.equal((await bursts()).length, 0, 'below the threshold: no alert');
  // Another key's few refusals do not add up with this one's.
  await dispatchAs(h.rt, { surface: 'http', apiKey: h.keys.employee }, 'api_keys.create', {
    name: 'y',
    role: 'owner',
  });
  assert.equal((await bursts()).length, 0);
  await probe(); // the threshold
  await probe(); // past it, same window: no second event
  const sent = await bursts();
  assert.equal(sent.length, 1);
  assert.equal(sent[0].data.key_name, 'Night-shift bot');
  assert.equal(sent[0].data.agent_type, 'claude-desktop');
  assert.equal(sent[0].data.refusals, REFUSAL_BURST.refusals);
  assert.equal(sent[0].data.last_reason, 'role_denied');
  assert.equal(sent[0].data.window_start, '2026-12-07T10:00:00.000Z');

  const alerts = await h.rt.dispatch({ surface: 'http', principal: h.human('admin') }, 'audit.alerts', {});
  assert.equal(alerts.ok, true, JSON.stringify(alerts.error));
  const d = (alerts.result as { data: Record<string, any> }).data; // eslint-disable-line @typescript-eslint/no-explicit-any
  assert.equal(d.bursts.length, 1);
  assert.equal(d.bursts[0].key_name, 'Night-shift bot');
  assert.equal(d.bursts[0].refusals, REFUSAL_BURST.refusals + 1);
  assert.deepEqual(d.bursts[0].reasons, [{ reason: 'role_denied', count: REFUSAL_BURST.refusals + 1 }]);
  assert.deepEqual(d.caps, []);
  // The next window still shows it (the previous window), the one after no longer.
  clock.ms += REFUSAL_BURST.window_minutes * 60_000;
  const next = await h.rt.dispatch({ surface: 'http', principal: h.human('admin') }, 'audit.alerts', {});
  assert.equal((next.result as { data: { bursts: unknown[] } }).data.bursts.length, 1);
  clock.ms += REFUSAL_BURST.window_minutes * 60_000;
  const later = await h.rt.dispatch({ surface: 'http', principal: h.human('admin') }, 'audit.alerts', {});
  assert.equal((later.result as { data: { bursts: unknown[] } }).data.bursts.length, 0);
});

test('audit.alerts shows a daily cap used up today, with its reset in the tenant time zone', async (t) => {
  const clock = { ms: Date.parse('2026-12-07T10:00:00.000Z') };
  const h = await createTestRuntime(t, { clock: () => new Date(clock.ms) });
  await h.rt.store.write((tx) =>
    tx.run('UPDATE tenants SET settings = ? WHERE company_id = ?', [
      JSON.stringify({ caps: { WRITE_REVERSIBLE: 0 }, time_zone: 'Europe/Berlin' }),
      h.companyId,
    ]),
  );
  h.rt.tenants.invalidate();
  const alerts = await h.rt.dispatch({ surface: 'http', principal: h.human('owner') }, 'audit.alerts', {});
  const d = (alerts.result as { data: Record<string, any> }).data; // eslint-disable-line @typescript-eslint/no-explicit-any
  assert.equal(d.time_zone, 'Europe/Berlin');
  assert.deepEqual(d.caps, [
    { consent_class: 'WRITE_REVERSIBLE', cap: 0, used: 0, resets_at: '2026-12-07T23:00:00.000Z' },
  ]);
  const agent = await dispatchAs(h.rt, { surface: 'http', apiKey: h.keys.employee }, 'audit.alerts', {});
  assert.equal(agent.error?.reason, 'role_denied');
});

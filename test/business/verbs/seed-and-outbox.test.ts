/**
 * The pack's seed and its email delivery: the seed creates only the tenants that are missing,
 * stores the historical events through the ledger with per-tenant seq, hands out working keys
 * per role and does nothing on a second run; `openLocal` remembers the pack on the database; an
 * email queued by a verb is delivered after commit by the pack's outbox handler, and a revert
 * recalls it only while it is still queued.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import pino from 'pino';
import { DEMO_TENANTS, demoPack, type DemoSeedFacts } from '../../../src/business/pack.ts';
import { DEMO_FIXTURES } from '../../../src/business/seed.ts';
import { createRuntime, type Runtime } from '../../../src/runtime/runtime.ts';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.ts';
import { openLocal } from '../../../src/transports/cli/local.ts';
import { systemVerbs } from '../../../src/verbs/index.ts';
import { DEMO_NOW, installPack, openDemoRuntime } from '../../support/demo.ts';

async function emptyRuntime(t: TestContext): Promise<Runtime> {
  const dir = mkdtempSync(join(tmpdir(), 'solid-demo-seed-'));
  const rt = await createRuntime({
    store: new SqliteStore({ path: join(dir, 'db.sqlite') }),
    logger: pino({ level: 'silent' }),
    sandboxCompanyId: 1,
    maintenanceIntervalMs: 0,
    clock: () => DEMO_NOW,
  });
  rt.register(...systemVerbs);
  await installPack(rt, demoPack);
  t.after(async () => {
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return rt;
}

test('the seed creates the three tenants, their events with per-tenant seq, keys per role; a second run does nothing', async (t) => {
  const rt = await emptyRuntime(t);
  let last = [0, 0];
  const facts = (await demoPack.seed!(rt, {
    now: DEMO_NOW,
    onProgress: (done, total) => (last = [done, total]),
  })) as DemoSeedFacts;
  assert.equal(facts.seeded, true);
  assert.ok(last[1]! > 1000 && last[0] === last[1], 'progress reaches its total');
  assert.deepEqual(facts.fixtures, DEMO_FIXTURES, 'the main company was seeded first into empty tables');
  const tenants = await rt.store.read((q) =>
    q.all<{ company_id: number; name: string; tier: string }>(
      'SELECT company_id, name, tier FROM tenants ORDER BY company_id',
    ),
  );
  assert.deepEqual(
    tenants.map((x) => ({ company_id: Number(x.company_id), name: x.name, tier: x.tier })),
    Object.values(DEMO_TENANTS)
      .map((x) => ({ company_id: x.company_id, name: x.name, tier: x.tier }))
      .sort((a, b) => a.company_id - b.company_id),
  );
  for (const c of [1, 2, 3]) {
    const seqs = await rt.store.read((q) =>
      q.get<{ n: number; lo: number; hi: number }>(
        'SELECT COUNT(*) AS n, MIN(seq) AS lo, MAX(seq) AS hi FROM events WHERE company_id = ?',
        [c],
      ),
    );
    const head = await rt.store.read((q) =>
      q.get<{ event_seq: number }>('SELECT event_seq FROM tenant_heads WHERE company_id = ?', [c]),
    );
    assert.ok(Number(seqs!.n) > 100, `company ${c} has its history`);
    assert.deepEqual(
      [Number(seqs!.lo), Number(seqs!.hi)],
      [1, Number(seqs!.n)],
      `company ${c}: seq 1..n without gaps`,
    );
    assert.equal(Number(head!.event_seq), Number(seqs!.n), `company ${c}: the head knows the last seq`);
  }
  const users = {
    owner: DEMO_FIXTURES.owner_user_id,
    admin: DEMO_FIXTURES.admin_user_id,
    employee: DEMO_FIXTURES.employee_user_id,
    read_only: DEMO_FIXTURES.read_only_user_id,
  };
  for (const [role, key] of Object.entries(facts.keys!)) {
    const p = await rt.tenants.authenticate(key);
    assert.deepEqual(
      { company_id: p.company_id, role: p.role, user_id: p.user_id },
      { company_id: DEMO_TENANTS.main.company_id, role, user_id: users[role as keyof typeof users] },
    );
  }
  assert.equal(facts.owner_api_key, facts.keys!.owner);
  assert.equal(
    (await rt.tenants.authenticate(facts.second_business_owner_key!)).company_id,
    DEMO_TENANTS.second.company_id,
  );

  const count = () =>
    rt.store.read((q) =>
      q.get<{ c: number; e: number; k: number }>(
        'SELECT (SELECT COUNT(*) FROM contacts) AS c, (SELECT COUNT(*) FROM events) AS e, (SELECT COUNT(*) FROM api_keys) AS k',
      ),
    );
  const before = await count();
  const again = (await demoPack.seed!(rt, {})) as DemoSeedFacts;
  assert.equal(again.seeded, false);
  assert.equal(again.owner_api_key, undefined, 'no new key');
  assert.deepEqual(await count(), before);
});

test('the seed keeps tenants that already exist (e.g. after solid init) and fills them', async (t) => {
  const rt = await emptyRuntime(t);
  await rt.createTenant({ company_id: 1, name: 'My Sandbox', tier: 'starter' });
  await rt.createTenant({ company_id: 2, name: 'My Plumbing Co', tier: 'enterprise' });
  const facts = (await demoPack.seed!(rt, { now: DEMO_NOW })) as DemoSeedFacts;
  assert.equal(facts.seeded, true);
  const tenants = await rt.store.read((q) =>
    q.all<{ company_id: number; name: string; tier: string }>(
      'SELECT company_id, name, tier FROM tenants ORDER BY company_id',
    ),
  );
  assert.deepEqual(
    tenants.map((x) => [Number(x.company_id), x.name, x.tier]),
    [
      [1, 'My Sandbox', 'starter'],
      [2, 'My Plumbing Co', 'enterprise'],
      [3, DEMO_TENANTS.second.name, DEMO_TENANTS.second.tier],
    ],
  );
  const contacts = await rt.store.read((q) =>
    q.get<{ n: number }>('SELECT COUNT(*) AS n FROM contacts WHERE company_id = 2'),
  );
  assert.equal(Number(contacts!.n), 200);
  const plan = await rt.store.read((q) =>
    q.get<{ tier: string }>('SELECT tier FROM plan_subscriptions WHERE company_id = 2'),
  );
  assert.equal(plan?.tier, 'enterprise', "the business's own plan follows the existing tenant's tier");
});

test('openLocal enables the demo pack on a database and every later process serves it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'solid-demo-local-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const db = join(dir, 'solid.db');
  const first = await openLocal({ db, create: true, packs: ['demo'], logLevel: 'silent' });
  assert.deepEqual(
    first.packs.map((p) => p.name),
    ['demo'],
  );
  assert.ok(first.rt.registry.get('customer.full_context'));
  await first.close();
  const second = await openLocal({ db, logLevel: 'silent' });
  t.after(() => second.close());
  assert.deepEqual(
    second.packs.map((p) => p.name),
    ['demo'],
    'the database remembers its packs',
  );
  assert.ok(second.rt.registry.get('infrastructure_diagnose'));
});

test('email_send queues in the write and the outbox delivers after commit; a revert then cannot recall it', async (t) => {
  const d = await openDemoRuntime(t);
  const env = await d.commit('employee', 'email_send', {
    contact_id: d.fixtures.customer_id,
    subject: 'Your visit on Thursday',
    body: 'See you at 3:30 pm.',
  });
  assert.equal(env.ok, true, JSON.stringify(env.error));
  const id = Number(env.result!.email_id);
  await d.rt.deliverOutbox();
  const email = await d.rt.store.read((q) =>
    q.get<{ status: string; sent_at: string | null; to_address: string }>(
      'SELECT status, sent_at, to_address FROM email_outbox WHERE id = ?',
      [id],
    ),
  );
  assert.equal(email?.status, 'sent');
  assert.ok(email?.sent_at);
  const events = await d.rt.store.read((q) =>
    q.all<{ type: string; actor: string; audit_id: number | null }>(
      `SELECT type, actor, audit_id FROM events WHERE company_id = ? AND entity_type = 'email' AND entity_id = ? ORDER BY seq`,
      [d.companyId, String(id)],
    ),
  );
  assert.deepEqual(
    events.map((e) => [e.type, e.actor]),
    [
      ['email.queued', `user:${d.fixtures.employee_user_id} via demo`],
      ['email.sent', 'system:mailer'],
    ],
  );
  assert.equal(Number(events[1]!.audit_id), env.audit_id, 'the delivery points at the write that queued it');
  const revert = await d.commit('employee', 'audit.revert', { audit_id: env.audit_id });
  assert.equal(revert.ok, true);
  assert.equal(revert.result!.reverted, false);
  assert.equal(revert.result!.reason, 'already_delivered');
});

test('a revert before delivery recalls the email; the delivery then leaves it alone', async (t) => {
  const d = await openDemoRuntime(t);
  const handler = d.rt.outboxHandlers.get('email')!;
  d.rt.outboxHandlers.delete('email'); // hold deliveries back
  const env = await d.commit('employee', 'invoices.send_reminder', {
    invoice_id: d.fixtures.open_invoice.id,
  });
  assert.equal(env.ok, true, JSON.stringify(env.error));
  const id = Number(env.result!.email_id);
  const revert = await d.commit('employee', 'audit.revert', { audit_id: env.audit_id });
  assert.equal(revert.result!.reverted, true, JSON.stringify(revert));
  d.rt.outboxHandlers.set('email', handler);
  await d.rt.deliverOutbox();
  const email = await d.rt.store.read((q) =>
    q.get<{ status: string; error: string | null }>('SELECT status, error FROM email_outbox WHERE id = ?', [
      id,
    ]),
  );
  assert.deepEqual({ ...email }, { status: 'failed', error: 'cancelled' });
});

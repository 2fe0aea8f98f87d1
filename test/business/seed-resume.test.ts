/**
 * An interrupted first run of `solid serve --demo` is finished by the next one: the tenants may
 * exist without data (interrupted before the data committed) or the data without keys
 * (interrupted before the keys were made). Spec: docs/demo.md; issue 5 §6.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createRuntime } from '../../src/runtime/runtime.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { systemVerbs } from '../../src/verbs/index.ts';
import { demoPack, seedDemoBusiness } from '../../src/business/pack.ts';
import { dispatchAs } from '../support/keyed.ts';

it('finishes a seed interrupted before its data, and makes keys when the data exists without them', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'solid-seed-resume-'));
  const rt = await createRuntime({
    store: new SqliteStore({ path: join(dir, 'd.db') }),
    logger: pino({ level: 'silent' }),
    sandboxCompanyId: 1,
  });
  t.after(async () => {
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  });
  rt.register(...systemVerbs, ...demoPack.verbs);
  // Interrupted after the tenants were created, before the data transaction committed.
  await rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
  await rt.createTenant({ company_id: 2, name: 'Summit Plumbing & HVAC', tier: 'professional' });
  const first = await seedDemoBusiness(rt, { now: new Date('2026-05-23T14:00:00Z') });
  assert.equal(first.seeded, true);
  assert.match(String(first.owner_api_key), /^sk_solid_/);
  const ctx = await dispatchAs(rt, { surface: 'cli', apiKey: first.owner_api_key }, 'customer.full_context', {
    customer_id: 42,
  });
  assert.equal(ctx.ok, true, JSON.stringify(ctx.error));
  // Interrupted after the data committed, before the keys: the next run makes keys, seeds nothing.
  await rt.store.write((tx) => tx.run('DELETE FROM api_keys WHERE company_id = 2'));
  rt.tenants.invalidate();
  const contactsBefore = await rt.store.read((q) =>
    q.get<{ n: number }>('SELECT COUNT(*) AS n FROM contacts'),
  );
  const second = await seedDemoBusiness(rt, {});
  assert.equal(second.seeded, false);
  assert.match(String(second.owner_api_key), /^sk_solid_/);
  assert.equal(
    (
      await dispatchAs(rt, { surface: 'cli', apiKey: second.owner_api_key }, 'customer.full_context', {
        customer_id: 42,
      })
    ).ok,
    true,
  );
  const contactsAfter = await rt.store.read((q) =>
    q.get<{ n: number }>('SELECT COUNT(*) AS n FROM contacts'),
  );
  assert.equal(contactsAfter!.n, contactsBefore!.n, 'nothing seeded twice');
  // A complete database: nothing to do, and the hint says how to get another key.
  const third = await seedDemoBusiness(rt, {});
  assert.equal(third.owner_api_key, undefined);
  assert.match(String(third.hint), /solid api-keys create/);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  getDroplet,
  requireCompanyDroplet,
  resizeDroplet,
  scaleWorkers,
} from '../../src/business/data/infrastructure.ts';
import { DEMO_FIXTURES as F } from '../../src/business/seed.ts';
import { MAIN, NOW, OTHER, openBusinessStore, openSeededStore } from './seeded-store.ts';

const LATER = new Date(NOW.getTime() + 60_000);

test("the main company's droplet carries the upstream diagnose example's values", async (t) => {
  const { store } = await openSeededStore(t);
  const d = (await store.read((q) => getDroplet(q, MAIN)))!;
  assert.deepEqual(
    [
      d.id,
      d.size,
      d.size_slug,
      d.region,
      d.ip,
      d.health,
      d.cpu_pct,
      d.memory_pct,
      d.disk_pct,
      d.queue_depth,
      d.workers,
    ],
    [
      F.droplet_id,
      'SMALL',
      's-2vcpu-4gb',
      'nyc1',
      '10.0.0.42',
      { backend: true, frontend: true, database: true, redis: true, mcp: true },
      12.5,
      45.2,
      61.0,
      3,
      2,
    ],
  );
  const other = (await store.read((q) => getDroplet(q, OTHER)))!;
  assert.equal(other.health.redis, false, 'the second company has something to diagnose');
});

test('resizeDroplet returns the previous size and refuses the same size, unknown sizes and too many workers', async (t) => {
  const { store } = await openSeededStore(t);
  const up = await store.write((tx) => resizeDroplet(tx, MAIN, F.droplet_id, 'MEDIUM', LATER));
  assert.deepEqual(
    [up.previous_size, up.previous_size_slug, up.droplet.size, up.droplet.size_slug],
    ['SMALL', 's-2vcpu-4gb', 'MEDIUM', 's-4vcpu-8gb'],
  );
  await assert.rejects(
    store.write((tx) => resizeDroplet(tx, MAIN, F.droplet_id, 'MEDIUM', LATER)),
    { code: 'same_size', message: /already MEDIUM/ },
  );
  await assert.rejects(
    store.write((tx) => resizeDroplet(tx, MAIN, F.droplet_id, 'HUGE' as never, LATER)),
    { code: 'invalid_input', message: /^size/ },
  );
  await assert.rejects(
    store.write((tx) => resizeDroplet(tx, MAIN, 999_999, 'LARGE', LATER)),
    { code: 'not_found', message: 'droplet 999999 not found' },
  );
  await store.write((tx) => scaleWorkers(tx, MAIN, F.droplet_id, 4, LATER));
  await assert.rejects(
    store.write((tx) => resizeDroplet(tx, MAIN, F.droplet_id, 'SMALL', LATER)),
    { code: 'workers_out_of_range', hint: /Scale workers down to 4/ },
  );
  await store.write((tx) => scaleWorkers(tx, MAIN, F.droplet_id, -2, LATER));
  const down = await store.write((tx) => resizeDroplet(tx, MAIN, F.droplet_id, up.previous_size, LATER));
  assert.deepEqual(
    [down.droplet.size, down.droplet.size_slug, down.droplet.workers],
    ['SMALL', 's-2vcpu-4gb', 4],
  );
});

test('scaleWorkers keeps workers within 1..max of the size and returns the previous count', async (t) => {
  const { store } = await openSeededStore(t);
  const more = await store.write((tx) => scaleWorkers(tx, MAIN, F.droplet_id, 2, LATER));
  assert.deepEqual([more.previous_workers, more.droplet.workers], [2, 4]);
  await assert.rejects(
    store.write((tx) => scaleWorkers(tx, MAIN, F.droplet_id, 1, LATER)),
    { code: 'workers_out_of_range', message: /runs 1\.\.4/ },
  );
  await assert.rejects(
    store.write((tx) => scaleWorkers(tx, MAIN, F.droplet_id, -4, LATER)),
    { code: 'workers_out_of_range' },
  );
  await assert.rejects(
    store.write((tx) => scaleWorkers(tx, MAIN, F.droplet_id, 0, LATER)),
    { code: 'invalid_input' },
  );
  const back = await store.write((tx) => scaleWorkers(tx, MAIN, F.droplet_id, -2, LATER));
  assert.equal(back.droplet.workers, 2);
});

test('a company without a droplet gets no_managed_droplet', async (t) => {
  const { store } = await openBusinessStore(t);
  await assert.rejects(
    store.read((q) => requireCompanyDroplet(q, 5)),
    { name: 'DomainError', code: 'no_managed_droplet' },
  );
});

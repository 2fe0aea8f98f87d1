import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  adjustStock,
  getPart,
  listAppointmentPartUsage,
  listLowStockParts,
  recordPartUsage,
  searchParts,
} from '../../src/business/data/inventory.ts';
import { DEMO_FIXTURES as F } from '../../src/business/seed.ts';
import { MAIN, NOW, openSeededStore } from './seeded-store.ts';

const LATER = new Date(NOW.getTime() + 60_000);

test('adjustStock adds and removes units, returns the previous quantity, and never goes below zero', async (t) => {
  const { store } = await openSeededStore(t);
  const part = (await store.read((q) => getPart(q, MAIN, F.low_stock_part_id)))!;
  assert.ok(part.low_stock);
  const restock = await store.write((tx) => adjustStock(tx, MAIN, part.id, 40, LATER));
  assert.deepEqual(
    [restock.previous_quantity, restock.part.quantity_on_hand, restock.part.low_stock],
    [part.quantity_on_hand, part.quantity_on_hand + 40, false],
  );
  assert.ok(!(await store.read((q) => listLowStockParts(q, MAIN))).some((p) => p.id === part.id));
  const revert = await store.write((tx) => adjustStock(tx, MAIN, part.id, -40, LATER));
  assert.equal(revert.part.quantity_on_hand, part.quantity_on_hand);
  await assert.rejects(
    store.write((tx) => adjustStock(tx, MAIN, part.id, -(part.quantity_on_hand + 1), LATER)),
    {
      code: 'insufficient_stock',
      message: new RegExp(`has ${part.quantity_on_hand} on hand`),
    },
  );
  await assert.rejects(
    store.write((tx) => adjustStock(tx, MAIN, part.id, 0, LATER)),
    { code: 'invalid_input' },
  );
  await assert.rejects(
    store.write((tx) => adjustStock(tx, MAIN, part.id, 1.5, LATER)),
    { code: 'invalid_input' },
  );
  await assert.rejects(
    store.write((tx) => adjustStock(tx, MAIN, 999_999, 1, LATER)),
    { code: 'not_found', message: 'part 999999 not found' },
  );
  assert.equal((await store.read((q) => getPart(q, MAIN, part.id)))!.quantity_on_hand, part.quantity_on_hand);
});

test('recordPartUsage takes parts out of stock for an appointment, or refuses and writes nothing', async (t) => {
  const { store } = await openSeededStore(t);
  const stocked = (await store.read((q) => searchParts(q, MAIN, { limit: 200 }))).items.find(
    (p) => p.quantity_on_hand >= 3,
  )!;
  const used = await store.write((tx) =>
    recordPartUsage(
      tx,
      MAIN,
      { appointment_id: F.upcoming_appointment_id, part_id: stocked.id, quantity: 2 },
      LATER,
    ),
  );
  assert.deepEqual(
    [used.previous_quantity, used.part.quantity_on_hand, used.usage.quantity],
    [stocked.quantity_on_hand, stocked.quantity_on_hand - 2, 2],
  );
  assert.deepEqual(await store.read((q) => listAppointmentPartUsage(q, MAIN, F.upcoming_appointment_id)), [
    used.usage,
  ]);
  await assert.rejects(
    store.write((tx) =>
      recordPartUsage(
        tx,
        MAIN,
        {
          appointment_id: F.upcoming_appointment_id,
          part_id: stocked.id,
          quantity: stocked.quantity_on_hand,
        },
        LATER,
      ),
    ),
    { code: 'insufficient_stock' },
  );
  await assert.rejects(
    store.write((tx) =>
      recordPartUsage(tx, MAIN, { appointment_id: 999_999, part_id: stocked.id, quantity: 1 }, LATER),
    ),
    { code: 'not_found', message: 'appointment 999999 not found' },
  );
  assert.equal(
    (await store.read((q) => listAppointmentPartUsage(q, MAIN, F.upcoming_appointment_id))).length,
    1,
  );
});

test('searchParts matches name or SKU and low-stock parts come emptiest first', async (t) => {
  const { store } = await openSeededStore(t);
  await store.read(async (q) => {
    const valves = await searchParts(q, MAIN, { query: 'VALVE', limit: 200 });
    assert.ok(valves.total > 0 && valves.items.every((p) => p.name.toLowerCase().includes('valve')));
    const bySku = await searchParts(q, MAIN, { query: valves.items[0]!.sku });
    assert.deepEqual(
      bySku.items.map((p) => p.id),
      [valves.items[0]!.id],
    );
    const low = await listLowStockParts(q, MAIN);
    assert.deepEqual(
      low.map((p) => p.id).sort(),
      (await searchParts(q, MAIN, { low_stock: true, limit: 200 })).items.map((p) => p.id).sort(),
    );
    for (let i = 1; i < low.length; i++)
      assert.ok(
        low[i - 1]!.quantity_on_hand - low[i - 1]!.reorder_point <=
          low[i]!.quantity_on_hand - low[i]!.reorder_point,
      );
  });
});

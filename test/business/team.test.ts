import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  getEmployee,
  listEmployees,
  listTechnicians,
  setEmployeeActive,
  setEmployeeRole,
} from '../../src/business/data/team.ts';
import { DEMO_FIXTURES as F } from '../../src/business/seed.ts';
import { MAIN, NOW, openSeededStore } from './seeded-store.ts';

const LATER = new Date(NOW.getTime() + 60_000);

test('setEmployeeRole and setEmployeeActive return the previous value and protect the last owner', async (t) => {
  const { store } = await openSeededStore(t);
  const promoted = await store.write((tx) => setEmployeeRole(tx, MAIN, F.employee_user_id, 'admin', LATER));
  assert.deepEqual([promoted.previous_role, promoted.employee.role], ['employee', 'admin']);
  await assert.rejects(
    store.write((tx) => setEmployeeRole(tx, MAIN, F.employee_user_id, 'admin', LATER)),
    { code: 'no_change' },
  );
  await assert.rejects(
    store.write((tx) => setEmployeeRole(tx, MAIN, F.employee_user_id, 'superuser' as never, LATER)),
    { code: 'invalid_input' },
  );
  await assert.rejects(
    store.write((tx) => setEmployeeRole(tx, MAIN, F.owner_user_id, 'admin', LATER)),
    { code: 'last_owner' },
  );
  await assert.rejects(
    store.write((tx) => setEmployeeActive(tx, MAIN, F.owner_user_id, false, LATER)),
    { code: 'last_owner' },
  );
  await store.write((tx) => setEmployeeRole(tx, MAIN, F.admin_user_id, 'owner', LATER));
  const demoted = await store.write((tx) => setEmployeeRole(tx, MAIN, F.owner_user_id, 'admin', LATER));
  assert.equal(demoted.previous_role, 'owner');

  const techs = await store.read((q) => listTechnicians(q, MAIN));
  const off = await store.write((tx) => setEmployeeActive(tx, MAIN, F.technician_user_id, false, LATER));
  assert.deepEqual([off.previous_active, off.employee.active], [true, false]);
  assert.deepEqual(
    (await store.read((q) => listTechnicians(q, MAIN))).map((e) => e.user_id),
    techs.map((e) => e.user_id).filter((id) => id !== F.technician_user_id),
  );
  await assert.rejects(
    store.write((tx) => setEmployeeActive(tx, MAIN, F.technician_user_id, false, LATER)),
    { code: 'no_change' },
  );
  await assert.rejects(
    store.write((tx) => setEmployeeActive(tx, MAIN, 777, false, LATER)),
    { code: 'not_found', message: 'employee 777 not found' },
  );
});

test('listEmployees filters by role, title and active flag', async (t) => {
  const { store } = await openSeededStore(t);
  await store.read(async (q) => {
    assert.equal((await listEmployees(q, MAIN)).length, 12);
    assert.ok((await listEmployees(q, MAIN, { role: 'admin' })).every((e) => e.role === 'admin'));
    assert.equal((await listEmployees(q, MAIN, { title: 'technician' })).length, 6);
    assert.equal((await listEmployees(q, MAIN, { active: false })).length, 0);
    assert.equal((await getEmployee(q, MAIN, F.owner_user_id))?.title, 'owner');
  });
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  cancelAppointment,
  getAppointment,
  listContactAppointments,
  recordAppointmentOutcome,
  reinstateAppointment,
  rescheduleAppointment,
  scheduleAppointment,
  searchAppointments,
  technicianAvailability,
  type NewAppointment,
} from '../../src/business/data/appointments.ts';
import { setEmployeeActive } from '../../src/business/data/team.ts';
import { DEMO_FIXTURES as F } from '../../src/business/seed.ts';
import { MAIN, NOW, openSeededStore } from './seeded-store.ts';

const DAY = 86_400_000;
const LATER = new Date(NOW.getTime() + 60_000);
/** Beyond the seeded 45-day schedule: every technician is free that day. */
const FREE_DAY = '2026-08-10';
const visit = (start: string, end: string, overrides: Partial<NewAppointment> = {}): NewAppointment => ({
  contact_id: F.customer_id,
  technician_user_id: F.technician_user_id,
  service: 'Leak repair',
  starts_at: `${FREE_DAY}T${start}-06:00`,
  ends_at: `${FREE_DAY}T${end}-06:00`,
  ...overrides,
});

test('scheduleAppointment books a free slot, stores UTC, and availability shows it', async (t) => {
  const { store } = await openSeededStore(t);
  const booked = await store.write((tx) =>
    scheduleAppointment(tx, MAIN, visit('09:00:00', '11:00:00', { notes: 'Side door' }), LATER),
  );
  assert.deepEqual(
    [booked.starts_at, booked.ends_at, booked.status, booked.notes, booked.created_at],
    [`${FREE_DAY}T15:00:00.000Z`, `${FREE_DAY}T17:00:00.000Z`, 'scheduled', 'Side door', LATER.toISOString()],
  );
  assert.ok(
    (await store.read((q) => listContactAppointments(q, MAIN, F.customer_id))).some(
      (a) => a.id === booked.id,
    ),
  );
  const [avail] = await store.read((q) =>
    technicianAvailability(q, MAIN, {
      from: `${FREE_DAY}T00:00:00-06:00`,
      to: `${FREE_DAY}T23:59:00-06:00`,
      technician_user_id: F.technician_user_id,
    }),
  );
  assert.deepEqual(
    avail!.busy.map((b) => [b.appointment_id, b.starts_at, b.ends_at]),
    [[booked.id, booked.starts_at, booked.ends_at]],
  );
  assert.deepEqual(avail!.free, [
    { starts_at: `${FREE_DAY}T06:00:00.000Z`, ends_at: booked.starts_at },
    { starts_at: booked.ends_at, ends_at: '2026-08-11T05:59:00.000Z' },
  ]);
});

test('a technician is never double-booked; adjacent, other-technician and cancelled slots are fine', async (t) => {
  const { store } = await openSeededStore(t);
  const first = await store.write((tx) =>
    scheduleAppointment(tx, MAIN, visit('09:00:00', '11:00:00'), LATER),
  );
  for (const [start, end] of [
    ['09:00:00', '11:00:00'],
    ['10:59:00', '12:00:00'],
    ['08:00:00', '09:01:00'],
    ['09:30:00', '10:00:00'],
    ['08:00:00', '12:00:00'],
  ] as const) {
    await assert.rejects(
      store.write((tx) => scheduleAppointment(tx, MAIN, visit(start, end), LATER)),
      {
        name: 'DomainError',
        code: 'double_booked',
        message: new RegExp(`appointment ${first.id}`),
      },
    );
  }
  const count = () =>
    store.read((q) =>
      searchAppointments(q, MAIN, {
        technician_user_id: F.technician_user_id,
        from: `${FREE_DAY}T00:00:00-06:00`,
        to: `${FREE_DAY}T23:59:00-06:00`,
      }),
    );
  assert.equal((await count()).total, 1, 'refused bookings wrote nothing');
  await store.write((tx) => scheduleAppointment(tx, MAIN, visit('11:00:00', '12:00:00'), LATER));
  await store.write((tx) => scheduleAppointment(tx, MAIN, visit('08:00:00', '09:00:00'), LATER));
  await store.write((tx) =>
    scheduleAppointment(
      tx,
      MAIN,
      visit('09:00:00', '11:00:00', { technician_user_id: F.technician_user_id + 1 }),
      LATER,
    ),
  );
  await store.write((tx) => cancelAppointment(tx, MAIN, first.id, 'moved', LATER));
  await store.write((tx) => scheduleAppointment(tx, MAIN, visit('09:30:00', '10:30:00'), LATER));
  assert.equal((await count()).total, 4);
});

test('scheduleAppointment refuses the past, bad times and unavailable technicians', async (t) => {
  const { store } = await openSeededStore(t);
  await assert.rejects(
    store.write((tx) =>
      scheduleAppointment(tx, MAIN, visit('09:00:00', '10:00:00'), new Date('2026-08-10T15:00:00Z')),
    ),
    { code: 'appointment_in_past' },
  );
  await assert.rejects(
    store.write((tx) =>
      scheduleAppointment(
        tx,
        MAIN,
        visit('09:00:00', '10:00:00', {
          starts_at: '2026-05-01T09:00:00-06:00',
          ends_at: '2026-05-01T10:00:00-06:00',
        }),
        LATER,
      ),
    ),
    { code: 'appointment_in_past' },
  );
  await assert.rejects(
    store.write((tx) => scheduleAppointment(tx, MAIN, visit('10:00:00', '10:00:00'), LATER)),
    { code: 'invalid_input', message: /^ends_at/ },
  );
  await assert.rejects(
    store.write((tx) => scheduleAppointment(tx, MAIN, visit('06:00:00', '19:00:00'), LATER)),
    { code: 'invalid_input', message: /12 hours/ },
  );
  await assert.rejects(
    store.write((tx) =>
      scheduleAppointment(
        tx,
        MAIN,
        { ...visit('09:00:00', '10:00:00'), starts_at: '2026-08-10 09:00' },
        LATER,
      ),
    ),
    {
      code: 'invalid_input',
      message: /^starts_at: .*offset/,
    },
  );
  await assert.rejects(
    store.write((tx) =>
      scheduleAppointment(
        tx,
        MAIN,
        visit('09:00:00', '10:00:00', { technician_user_id: F.employee_user_id }),
        LATER,
      ),
    ),
    {
      code: 'technician_unavailable',
    },
  );
  await assert.rejects(
    store.write((tx) =>
      scheduleAppointment(tx, MAIN, visit('09:00:00', '10:00:00', { technician_user_id: 777 }), LATER),
    ),
    {
      code: 'not_found',
      message: 'technician 777 not found',
    },
  );
  await assert.rejects(
    store.write((tx) =>
      scheduleAppointment(tx, MAIN, visit('09:00:00', '10:00:00', { contact_id: 999_999 }), LATER),
    ),
    { code: 'not_found', message: 'contact 999999 not found' },
  );
  await assert.rejects(
    store.write((tx) =>
      scheduleAppointment(tx, MAIN, visit('09:00:00', '10:00:00', { deal_id: 999_999 }), LATER),
    ),
    { code: 'not_found', message: 'deal 999999 not found' },
  );
  await store.write((tx) => setEmployeeActive(tx, MAIN, F.technician_user_id, false, LATER));
  await assert.rejects(
    store.write((tx) => scheduleAppointment(tx, MAIN, visit('09:00:00', '10:00:00'), LATER)),
    { code: 'technician_unavailable', message: /inactive/ },
  );
});

test('rescheduleAppointment keeps the duration, returns the previous slot, and refuses clashes', async (t) => {
  const { store } = await openSeededStore(t);
  const original = (await store.read((q) => getAppointment(q, MAIN, F.upcoming_appointment_id)))!;
  const moved = await store.write((tx) =>
    rescheduleAppointment(tx, MAIN, original.id, { starts_at: `${FREE_DAY}T13:00:00-06:00` }, LATER),
  );
  assert.deepEqual(moved.previous, {
    starts_at: original.starts_at,
    ends_at: original.ends_at,
    technician_user_id: original.technician_user_id,
  });
  assert.equal(
    Date.parse(moved.appointment.ends_at) - Date.parse(moved.appointment.starts_at),
    Date.parse(original.ends_at) - Date.parse(original.starts_at),
  );
  const shifted = await store.write((tx) =>
    rescheduleAppointment(tx, MAIN, original.id, { starts_at: `${FREE_DAY}T13:30:00-06:00` }, LATER),
  );
  assert.equal(
    shifted.appointment.starts_at,
    `${FREE_DAY}T19:30:00.000Z`,
    'overlapping its own old slot is not a clash',
  );
  const other = await store.write((tx) =>
    scheduleAppointment(
      tx,
      MAIN,
      visit('16:00:00', '17:00:00', { technician_user_id: original.technician_user_id }),
      LATER,
    ),
  );
  await assert.rejects(
    store.write((tx) =>
      rescheduleAppointment(tx, MAIN, original.id, { starts_at: `${FREE_DAY}T15:45:00-06:00` }, LATER),
    ),
    {
      code: 'double_booked',
      message: new RegExp(`appointment ${other.id}`),
    },
  );
  await assert.rejects(
    store.write((tx) =>
      rescheduleAppointment(tx, MAIN, original.id, { starts_at: shifted.appointment.starts_at }, LATER),
    ),
    { code: 'no_change' },
  );
  await assert.rejects(
    store.write((tx) =>
      rescheduleAppointment(tx, MAIN, original.id, { starts_at: '2026-05-01T09:00:00Z' }, LATER),
    ),
    { code: 'appointment_in_past' },
  );
  const back = await store.write((tx) => rescheduleAppointment(tx, MAIN, original.id, moved.previous, LATER));
  assert.deepEqual(
    [back.appointment.starts_at, back.appointment.ends_at, back.appointment.technician_user_id],
    [original.starts_at, original.ends_at, original.technician_user_id],
  );
  const done = (await store.read((q) => searchAppointments(q, MAIN, { status: 'completed', limit: 1 })))
    .items[0]!;
  await assert.rejects(
    store.write((tx) =>
      rescheduleAppointment(tx, MAIN, done.id, { starts_at: `${FREE_DAY}T08:00:00-06:00` }, LATER),
    ),
    { code: 'appointment_not_active' },
  );
});

test("cancel and reinstate are each other's revert; reinstating into a taken slot is refused", async (t) => {
  const { store } = await openSeededStore(t);
  const original = (await store.read((q) => getAppointment(q, MAIN, F.upcoming_appointment_id)))!;
  const cancelled = await store.write((tx) =>
    cancelAppointment(tx, MAIN, original.id, 'Customer travelling', LATER),
  );
  assert.deepEqual(cancelled.previous, { status: 'scheduled', notes: original.notes });
  assert.equal(cancelled.appointment.status, 'cancelled');
  assert.match(cancelled.appointment.notes ?? '', /Cancelled: Customer travelling$/);
  await assert.rejects(
    store.write((tx) => cancelAppointment(tx, MAIN, original.id, null, LATER)),
    { code: 'appointment_not_active' },
  );
  const reinstated = await store.write((tx) =>
    reinstateAppointment(tx, MAIN, original.id, LATER, cancelled.previous.notes),
  );
  assert.deepEqual(
    [reinstated.previous_status, reinstated.appointment.status, reinstated.appointment.notes],
    ['cancelled', 'scheduled', original.notes],
  );
  await assert.rejects(
    store.write((tx) => reinstateAppointment(tx, MAIN, original.id, LATER)),
    { code: 'appointment_not_active' },
  );

  await store.write((tx) => cancelAppointment(tx, MAIN, original.id, null, LATER));
  const taker = await store.write((tx) =>
    scheduleAppointment(
      tx,
      MAIN,
      {
        ...visit('00:00:00', '01:00:00'),
        technician_user_id: original.technician_user_id,
        starts_at: original.starts_at,
        ends_at: original.ends_at,
      },
      LATER,
    ),
  );
  await assert.rejects(
    store.write((tx) => reinstateAppointment(tx, MAIN, original.id, LATER)),
    { code: 'double_booked', message: new RegExp(`appointment ${taker.id}`) },
  );
  await assert.rejects(
    store.write((tx) =>
      reinstateAppointment(tx, MAIN, original.id, new Date(Date.parse(original.starts_at) + DAY)),
    ),
    { code: 'appointment_in_past' },
  );
});

test('recordAppointmentOutcome closes a visit that has started, not one ahead', async (t) => {
  const { store } = await openSeededStore(t);
  const a = (await store.read((q) => getAppointment(q, MAIN, F.upcoming_appointment_id)))!;
  await assert.rejects(
    store.write((tx) => recordAppointmentOutcome(tx, MAIN, a.id, 'completed', LATER)),
    { code: 'invalid_input', message: /not started/ },
  );
  const after = new Date(Date.parse(a.ends_at) + 60_000);
  const done = await store.write((tx) => recordAppointmentOutcome(tx, MAIN, a.id, 'completed', after));
  assert.deepEqual([done.previous_status, done.appointment.status], ['scheduled', 'completed']);
  await assert.rejects(
    store.write((tx) => recordAppointmentOutcome(tx, MAIN, a.id, 'no_show', after)),
    { code: 'appointment_not_active' },
  );
});

test('technician availability partitions the range into busy and free intervals', async (t) => {
  const { store } = await openSeededStore(t);
  const from = '2026-05-25T00:00:00-06:00';
  const to = '2026-05-30T00:00:00-06:00';
  const all = await store.read((q) => technicianAvailability(q, MAIN, { from, to }));
  assert.equal(all.length, 6);
  let busyTotal = 0;
  for (const tech of all) {
    const intervals = [
      ...tech.busy.map((b) => [b.starts_at, b.ends_at] as const),
      ...tech.free.map((f) => [f.starts_at, f.ends_at] as const),
    ].sort();
    assert.equal(intervals[0]![0], '2026-05-25T06:00:00.000Z');
    assert.equal(intervals[intervals.length - 1]![1], '2026-05-30T06:00:00.000Z');
    for (let i = 1; i < intervals.length; i++)
      assert.equal(intervals[i]![0], intervals[i - 1]![1], `${tech.name}: intervals touch without overlap`);
    assert.ok(tech.busy.every((b) => b.status !== 'cancelled'));
    busyTotal += tech.busy.length;
  }
  assert.ok(busyTotal > 0, 'the seeded schedule has visits that week');
  await store.read(async (q) => {
    await assert.rejects(technicianAvailability(q, MAIN, { from: to, to: from }), { code: 'invalid_input' });
    await assert.rejects(technicianAvailability(q, MAIN, { from, to: '2026-07-30T00:00:00-06:00' }), {
      code: 'invalid_input',
      message: /31 days/,
    });
    await assert.rejects(technicianAvailability(q, MAIN, { from, to, technician_user_id: F.owner_user_id }), {
      code: 'technician_unavailable',
    });
  });
});

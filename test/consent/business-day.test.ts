/**
 * The business day (issue 32 row 5, spec/consent.md §caps): a tenant's day is the calendar day in
 * its time zone. Daily caps reset at the tenant's midnight, not UTC's; tenant.settings names the
 * zone and the reset; and the zone, which moves the cap boundary, is changed only by a human —
 * an agent's owner key is refused human_required (it could otherwise reset its own cap by
 * moving midnight), the set and its revert alike. One module decides the day; both engines.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { consentHarness, expectDenied, pendingOf, type ConsentHarness } from './support.ts';
import { businessDay, businessDayOf } from '../../src/runtime/consent/business-day.ts';
import type { Envelope } from '../../src/spec/types.ts';

async function charge(h: ConsentHarness, n: number): Promise<Envelope> {
  const args = { invoice_id: n, amount_cents: 100 };
  const first = await h.call('admin', 'charge_invoice', args);
  if (first.error?.reason !== 'dispatch_pending') return first;
  const c = pendingOf(first);
  return h.call('admin', 'charge_invoice', args, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: c.typed_phrase,
  });
}

/** Set the time zone as a signed-in human owner would (confirmation round trip). */
async function setZoneAsHuman(h: ConsentHarness, zone: string): Promise<Envelope> {
  const first = await h.callAsHuman('owner', 'tenant.time_zone_set', { time_zone: zone });
  const c = pendingOf(first);
  return h.callAsHuman(
    'owner',
    'tenant.time_zone_set',
    { time_zone: zone },
    { confirm: true, nonce: c.nonce },
  );
}

test('a business day runs from midnight to midnight in its zone, across clock changes', () => {
  assert.deepEqual(businessDay(new Date('2026-12-08T04:30:00Z'), 'America/New_York'), {
    day: '2026-12-07',
    start: '2026-12-07T05:00:00.000Z',
    end: '2026-12-08T05:00:00.000Z',
    time_zone: 'America/New_York',
  });
  // 23 and 25 hour days.
  const spring = businessDay(new Date('2026-03-08T12:00:00Z'), 'America/New_York');
  assert.equal(Date.parse(spring.end) - Date.parse(spring.start), 23 * 3600_000);
  const fall = businessDay(new Date('2026-11-01T12:00:00Z'), 'America/New_York');
  assert.equal(Date.parse(fall.end) - Date.parse(fall.start), 25 * 3600_000);
  // Midnight itself skipped (Santiago springs from 00:00 to 01:00): the day starts after the gap.
  assert.equal(
    businessDay(new Date('2026-09-06T12:00:00Z'), 'America/Santiago').start,
    '2026-09-06T04:00:00.000Z',
  );
  // Half-hour zones; no zone = UTC; the date's own day.
  assert.equal(businessDay(new Date('2026-12-07T23:30:00Z'), 'Asia/Kolkata').day, '2026-12-08');
  assert.equal(businessDay(new Date('2026-12-07T23:30:00Z')).time_zone, 'UTC');
  assert.equal(businessDayOf('2026-12-07', 'Europe/Berlin')?.start, '2026-12-06T23:00:00.000Z');
  assert.equal(businessDayOf('2026-02-30', 'Europe/Berlin'), undefined);
});

test('every write asks the business day: asked again the same day it builds no formatter, one Intl call at most', () => {
  // The daily cap asks businessDay on every preflight and confirm; building an Intl.DateTimeFormat
  // per call cost ~0.5 ms a write (a 4x slower confirmed write). The work per call is bounded.
  const Original = Intl.DateTimeFormat;
  const formatToParts = Original.prototype.formatToParts;
  let built = 0;
  let formatted = 0;
  const start = Date.parse('2026-06-15T03:30:00Z'); // 23:30 the day before in New York
  for (const zone of [undefined, 'UTC', 'Europe/Berlin', 'america/new_york'])
    businessDay(new Date(start), zone);
  const Counting = function (this: unknown, ...a: ConstructorParameters<typeof Intl.DateTimeFormat>) {
    built++;
    return new Original(...a);
  } as unknown as typeof Intl.DateTimeFormat;
  Intl.DateTimeFormat = Counting;
  Original.prototype.formatToParts = function (this: Intl.DateTimeFormat, d?: Date | number) {
    formatted++;
    return formatToParts.call(this, d);
  };
  try {
    const answers = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const at = new Date(start + i * 60_000);
      answers.add(JSON.stringify(businessDay(at)));
      answers.add(JSON.stringify(businessDay(at, 'UTC')));
      answers.add(JSON.stringify(businessDay(at, 'Europe/Berlin')));
      answers.add(JSON.stringify(businessDay(at, 'america/new_york')));
    }
    assert.equal(built, 0, 'no Intl.DateTimeFormat built for a zone and day asked before');
    // One per answer in a named zone (none in UTC), plus working out New York's next day once.
    assert.ok(formatted <= 400 + 16, `${formatted} Intl calls for 400 answers in named zones`);
    // Still the right days: UTC (with no zone, the same), Berlin, New York before and after its midnight.
    assert.deepEqual([...answers].map((a) => JSON.parse(a).day).sort(), [
      '2026-06-14',
      '2026-06-15',
      '2026-06-15',
      '2026-06-15',
    ]);
  } finally {
    Intl.DateTimeFormat = Original;
    Original.prototype.formatToParts = formatToParts;
  }
  // The same instant at a day's end bound is the next day (a cached day is never stretched).
  const ny = businessDay(new Date('2026-06-15T12:00:00Z'), 'America/New_York');
  assert.equal(businessDay(new Date(ny.end), 'America/New_York').day, '2026-06-16');
  assert.equal(businessDay(new Date(Date.parse(ny.end) - 1), 'America/New_York').day, '2026-06-15');
});

test("the cap resets at the tenant's midnight, not UTC's; the refusal and tenant.settings name the zone", async (t) => {
  // 22:30 in New York on 10 March = 02:30 UTC on 11 March: the same business day as 12:00 New York.
  const h = await consentHarness(t, { start: '2026-03-10T16:00:00.000Z' });
  await h.setSettings({ caps: { WRITE_FINANCIAL: 1 }, time_zone: 'America/New_York' });
  assert.equal((await charge(h, 1)).ok, true);
  h.clock.ms = Date.parse('2026-03-11T02:30:00.000Z'); // past UTC midnight, still 10 March in New York
  const over = await charge(h, 2);
  await expectDenied(h, over, 'daily_cap_exceeded');
  assert.deepEqual(over.error!.details, {
    cap: 1,
    consent_class: 'WRITE_FINANCIAL',
    resets_at: '2026-03-11T04:00:00.000Z',
    time_zone: 'America/New_York',
  });
  assert.match(over.error!.hint!, /time zone America\/New_York/);
  const settings = await h.callAsHuman('admin', 'tenant.settings', {});
  const d = (settings.result as { data: Record<string, any> }).data; // eslint-disable-line @typescript-eslint/no-explicit-any
  assert.equal(d.time_zone, 'America/New_York');
  assert.equal(d.business_day.day, '2026-03-10');
  assert.equal(d.caps.WRITE_FINANCIAL.used_today, 1);
  assert.equal(d.caps.WRITE_FINANCIAL.resets_at, '2026-03-11T04:00:00.000Z');
  h.clock.ms = Date.parse('2026-03-11T04:00:00.000Z'); // New York's midnight
  assert.equal((await charge(h, 3)).ok, true);
});

test('only a human changes the time zone: an agent owner key is refused human_required, set and revert alike', async (t) => {
  const h = await consentHarness(t, { start: '2026-03-10T23:30:00.000Z' });
  await h.setSettings({ caps: { WRITE_FINANCIAL: 1 } });
  assert.equal((await charge(h, 1)).ok, true);
  await expectDenied(h, await charge(h, 2), 'daily_cap_exceeded');
  // The agent tries to move midnight so its used-up cap starts a fresh day (Tokyo is already 11 March).
  const first = await h.call('owner', 'tenant.time_zone_set', { time_zone: 'Asia/Tokyo' });
  const agent =
    first.error?.reason === 'dispatch_pending'
      ? await h.call(
          'owner',
          'tenant.time_zone_set',
          { time_zone: 'Asia/Tokyo' },
          {
            confirm: true,
            nonce: pendingOf(first).nonce,
          },
        )
      : first;
  await expectDenied(h, agent, 'human_required');
  await expectDenied(h, await charge(h, 2), 'daily_cap_exceeded');
  // Unknown zones are bad input, with the field named.
  const bad = await setZoneAsHuman(h, 'Mars/Olympus');
  assert.equal(bad.error?.reason, 'invalid_input');
  assert.equal(bad.error?.path, '/time_zone');
  // The human may: the result names the zone and the business day it is now in.
  const set = await setZoneAsHuman(h, 'Asia/Tokyo');
  assert.equal(set.ok, true, JSON.stringify(set.error));
  const r = set.result as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  assert.equal(r.time_zone, 'Asia/Tokyo');
  assert.equal(r.previous_time_zone, 'UTC');
  assert.equal(r.business_day.day, '2026-03-11');
  // Reverting moves midnight back: an agent's key is refused that too.
  const revertFirst = await h.call('owner', 'audit.revert', { audit_id: set.audit_id });
  const revert =
    revertFirst.error?.reason === 'dispatch_pending'
      ? await h.call(
          'owner',
          'audit.revert',
          { audit_id: set.audit_id },
          {
            confirm: true,
            nonce: pendingOf(revertFirst).nonce,
          },
        )
      : revertFirst;
  assert.equal(revert.ok, false);
  assert.equal(revert.error?.reason, 'human_required');
  const zone = await h.rt.store.read((q) =>
    q.get<{ settings: string }>('SELECT settings FROM tenants WHERE company_id = ?', [h.companyId]),
  );
  const stored = typeof zone?.settings === 'string' ? JSON.parse(zone.settings) : zone?.settings;
  assert.equal(stored.time_zone, 'Asia/Tokyo');
});

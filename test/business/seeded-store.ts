/**
 * Test support for the business pack: a temp-file SqliteStore with the pack's migrations, and
 * the same store seeded with two tenants (the main company 1 and the smaller company 2).
 * Each call builds its own store in os.tmpdir() and removes it with `t.after`.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { BUSINESS_SCOPE, businessMigrations } from '../../src/business/schema.ts';
import { seedDemo, type SeedCompany, type SeedOptions, type SeedResult } from '../../src/business/seed.ts';
import type { DomainEvent } from '../../src/business/domain-event.ts';

export const MAIN = 1;
export const OTHER = 2;

export const COMPANIES: SeedCompany[] = [
  { company_id: MAIN, name: 'Summit Plumbing & Heating', tier: 'professional' },
  { company_id: OTHER, name: 'Boise Valley HVAC', tier: 'starter' },
];

/** The clock the tests seed with (the fetched_at of the upstream customer.full_context example). */
export const NOW = new Date('2026-05-23T14:00:00Z');

/** A fresh, migrated, empty store that is closed and deleted after the test. */
export async function openBusinessStore(t: TestContext): Promise<{ store: SqliteStore; path: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'solid-business-'));
  const path = join(dir, 'business.db');
  const store = new SqliteStore({ path });
  t.after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await store.migrate(BUSINESS_SCOPE, businessMigrations);
  return { store, path };
}

export interface SeededStore {
  store: SqliteStore;
  result: SeedResult;
  events: Array<{ companyId: number; event: DomainEvent }>;
}

async function seedInto(
  store: SqliteStore,
  options: Partial<SeedOptions>,
): Promise<Omit<SeededStore, 'store'>> {
  const events: SeededStore['events'] = [];
  const result = await store.write((tx) =>
    seedDemo(tx, {
      companies: COMPANIES,
      now: NOW,
      emit: (companyId, event) => {
        events.push({ companyId, event });
      },
      ...options,
    }),
  );
  return { result, events };
}

/** One seeding with the default options per test process; tests get their own copy of its file. */
let template: Promise<{ path: string } & Omit<SeededStore, 'store'>> | undefined;

function defaultTemplate(): NonNullable<typeof template> {
  template ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'solid-business-template-'));
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'business.db');
    const store = new SqliteStore({ path });
    await store.migrate(BUSINESS_SCOPE, businessMigrations);
    const seeded = await seedInto(store, {});
    store.rawDatabase.pragma('wal_checkpoint(TRUNCATE)');
    await store.close();
    return { path, ...seeded };
  })();
  return template;
}

/**
 * A fresh store seeded with COMPANIES at NOW. Without options it is a private copy of a file
 * seeded once per process (the seed is deterministic, so the copy is what a seeding would write);
 * with options (another seed, clock, progress callback) it is seeded for the test.
 */
export async function openSeededStore(
  t: TestContext,
  options: Partial<SeedOptions> = {},
): Promise<SeededStore> {
  if (Object.keys(options).length > 0) return openFreshlySeededStore(t, options);
  const seeded = await defaultTemplate();
  const dir = mkdtempSync(join(tmpdir(), 'solid-business-'));
  const path = join(dir, 'business.db');
  copyFileSync(seeded.path, path);
  const store = new SqliteStore({ path });
  t.after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { store, result: structuredClone(seeded.result), events: structuredClone(seeded.events) };
}

/** A fresh store seeded for this test (never a copy): for tests of the seeding itself. */
export async function openFreshlySeededStore(
  t: TestContext,
  options: Partial<SeedOptions> = {},
): Promise<SeededStore> {
  const { store } = await openBusinessStore(t);
  return { store, ...(await seedInto(store, options)) };
}

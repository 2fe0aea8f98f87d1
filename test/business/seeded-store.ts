/**
 * Test support for the business pack: a temp-file SqliteStore with the pack's migrations, and
 * the same store seeded with two tenants (the main company 1 and the smaller company 2).
 * Each call builds its own store in os.tmpdir() and removes it with `t.after`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
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

/** A fresh store seeded with COMPANIES at NOW (options override). */
export async function openSeededStore(t: TestContext, options: Partial<SeedOptions> = {}): Promise<SeededStore> {
  const { store } = await openBusinessStore(t);
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
  return { store, result, events };
}

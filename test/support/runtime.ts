/**
 * createTestRuntime(): a runtime on a fresh store with the system verbs, a sandbox tenant and a
 * main tenant with one key per role. Cleans up with t.after.
 *
 * Engine: a temp-file SQLite store by default; with SOLID_TEST_ENGINE=postgres (and
 * SOLID_TEST_DATABASE_URL, see .ci/postgres.sh) a PostgresStore on a fresh schema, dropped after
 * the test (`npm run test:postgres`). An explicit `store` or `path` option always wins.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import pino from 'pino';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.ts';
import type { RuntimeOptions } from '../../src/runtime/options.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { systemVerbs } from '../../src/verbs/index.ts';
import type { Store } from '../../src/store/store.ts';
import { createTestPostgresStore, dropSchema, PG_SKIP_REASON, TEST_DATABASE_URL } from './postgres.ts';
import type { Principal, Role, Tier } from '../../src/spec/types.ts';
import { agentPrincipal, humanPrincipal, onChannel } from '../../src/identity/principal.ts';

export interface TestRuntime {
  rt: Runtime;
  dir: string;
  dbPath: string;
  sandboxId: number;
  companyId: number;
  otherCompanyId: number;
  keys: Record<Role, string>;
  otherOwnerKey: string;
  principal(role: Role, companyId?: number): Principal;
  /** The same user as a person signed in to the dashboard (a human principal, src/identity). */
  human(role: Role, companyId?: number): Principal;
}

/** createTestRuntime options: runtime options plus the tier of the main tenant, a SQLite path, or a forced engine. */
export type TestRuntimeOptions = Partial<RuntimeOptions> & {
  tier?: Tier;
  path?: string;
  /** Force an engine: 'sqlite' for tests that open the database file itself (tamper, CLI --db, query plans). */
  engine?: 'sqlite' | 'postgres';
  /**
   * The main tenant's `phrase_channel` (default `any`: the owner's explicit choice, so tests of
   * other rules can type phrases as the agent; `human` is the product's default, spec/consent.md
   * §channels, and the tests of the channel rules ask for it).
   */
  phraseChannel?: 'any' | 'human';
};

export async function createTestRuntime(
  t: TestContext | undefined,
  options: TestRuntimeOptions = {},
): Promise<TestRuntime> {
  const dir = mkdtempSync(join(tmpdir(), 'solid-test-'));
  const dbPath = options.path ?? join(dir, 'test.db');
  let store: Store;
  let schema: string | undefined;
  if (options.store !== undefined) store = options.store;
  else if (options.path === undefined && (options.engine ?? testEngine()) === 'postgres') {
    const pgStore = createTestPostgresStore(t, { keep: true });
    schema = pgStore.schema;
    store = pgStore;
  } else store = new SqliteStore({ path: dbPath });
  const rt = await createRuntime({
    store,
    logger: pino({ level: process.env.SOLID_TEST_LOG ?? 'silent' }),
    validateOutputs: true,
    sandboxCompanyId: 1,
    ...options,
  });
  rt.register(...systemVerbs);
  const sandbox = await rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
  const main = await rt.createTenant({
    company_id: 2,
    name: 'Main Co',
    tier: options.tier ?? 'professional',
    settings: { phrase_channel: options.phraseChannel ?? 'any' },
  });
  const other = await rt.createTenant({
    company_id: 3,
    name: 'Other Co',
    tier: 'enterprise',
    settings: { phrase_channel: options.phraseChannel ?? 'any' },
  });
  const keys = {} as Record<Role, string>;
  const users: Record<Role, number> = { owner: 1, admin: 2, employee: 3, read_only: 4 };
  for (const role of ['owner', 'admin', 'employee', 'read_only'] as Role[]) {
    keys[role] = await rt.createApiKey({
      company_id: main.company_id,
      user_id: users[role],
      role,
      agent_type: 'test',
    });
  }
  const otherOwnerKey = await rt.createApiKey({
    company_id: other.company_id,
    user_id: 1,
    role: 'owner',
    agent_type: 'test',
  });
  t?.after(async () => {
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
    if (schema !== undefined) await dropSchema(schema);
  });
  return {
    rt,
    dir,
    dbPath,
    sandboxId: sandbox.company_id,
    companyId: main.company_id,
    otherCompanyId: other.company_id,
    keys,
    otherOwnerKey,
    principal(role: Role, companyId = main.company_id): Principal {
      return agentPrincipal({
        company_id: companyId,
        user_id: users[role],
        role,
        tier: companyId === main.company_id ? (options.tier ?? 'professional') : 'enterprise',
        agent_type: 'test',
      });
    },
    human(role: Role, companyId = main.company_id): Principal {
      const facts = {
        company_id: companyId,
        user_id: users[role],
        role,
        tier: companyId === main.company_id ? (options.tier ?? 'professional') : 'enterprise',
        agent_type: 'test',
      } as const;
      return onChannel(humanPrincipal(facts, { user_name: `Test ${role}` }), 'dashboard', 'dashboard');
    },
  };
}

/** The engine test runtimes use: SOLID_TEST_ENGINE=postgres|sqlite (default sqlite). */
export function testEngine(): 'sqlite' | 'postgres' {
  const e = process.env.SOLID_TEST_ENGINE ?? 'sqlite';
  if (e === 'postgres') {
    if (TEST_DATABASE_URL === undefined) throw new Error(`SOLID_TEST_ENGINE=postgres but ${PG_SKIP_REASON}`);
    return 'postgres';
  }
  if (e !== 'sqlite')
    throw new Error(`SOLID_TEST_ENGINE must be sqlite or postgres (got ${JSON.stringify(e)})`);
  return 'sqlite';
}

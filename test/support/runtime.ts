/**
 * createTestRuntime(): a runtime on a fresh temp-file SQLite store with the system verbs, a
 * sandbox tenant and a main tenant with one key per role. Cleans up with t.after.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import pino from 'pino';
import { createRuntime, type Runtime, type RuntimeOptions } from '../../src/runtime/runtime.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { systemVerbs } from '../../src/verbs/index.ts';
import type { Principal, Role, Tier } from '../../src/spec/types.ts';

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
}

export async function createTestRuntime(t: TestContext | undefined, options: Partial<RuntimeOptions> & { tier?: Tier; path?: string } = {}): Promise<TestRuntime> {
  const dir = mkdtempSync(join(tmpdir(), 'solid-test-'));
  const dbPath = options.path ?? join(dir, 'test.db');
  const store = options.store ?? new SqliteStore({ path: dbPath });
  const rt = await createRuntime({
    store,
    logger: pino({ level: process.env.SOLID_TEST_LOG ?? 'silent' }),
    validateOutputs: true,
    sandboxCompanyId: 1,
    ...options,
  });
  rt.register(...systemVerbs);
  const sandbox = await rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
  const main = await rt.createTenant({ company_id: 2, name: 'Main Co', tier: options.tier ?? 'professional' });
  const other = await rt.createTenant({ company_id: 3, name: 'Other Co', tier: 'enterprise' });
  const keys = {} as Record<Role, string>;
  const users: Record<Role, number> = { owner: 1, admin: 2, employee: 3, read_only: 4 };
  for (const role of ['owner', 'admin', 'employee', 'read_only'] as Role[]) {
    keys[role] = await rt.createApiKey({ company_id: main.company_id, user_id: users[role], role, agent_type: 'test' });
  }
  const otherOwnerKey = await rt.createApiKey({ company_id: other.company_id, user_id: 1, role: 'owner', agent_type: 'test' });
  t?.after(async () => {
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
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
      return { company_id: companyId, user_id: users[role], role, tier: companyId === main.company_id ? (options.tier ?? 'professional') : 'enterprise', agent_type: 'test' };
    },
  };
}

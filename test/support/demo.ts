/**
 * openDemoRuntime(): a runtime serving the demo business pack (src/business/pack.ts), seeded
 * like `solid serve --demo`: tenants 1 (sandbox), 2 (Summit Plumbing & HVAC, professional) and
 * 3 (a second business, starter), the system verbs, and API keys per role of company 2.
 *
 * The seeding runs once per test process (a template SQLite file, ~2 s); every call gets its own
 * copy of that file and its own runtime, cleaned up with `t.after`, so tests never share state.
 * All runtimes of the process share one Secrets object (the tenants' signing keys in the copied
 * file are encrypted with its master key). The clock starts at DEMO_NOW and moves with real time;
 * `advance(ms)` jumps it forward (nonce expiry, "tomorrow"). validateOutputs is on.
 *
 * With SOLID_TEST_ENGINE=postgres (and SOLID_TEST_DATABASE_URL, `source .ci/postgres.sh`) each
 * call seeds its own fresh PostgreSQL schema instead (slower; no file to copy).
 *
 * For the MCP, HTTP, WebMCP and UCP suites too: `demo.rt` is a plain Runtime.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import pino from 'pino';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.ts';
import { Secrets } from '../../src/runtime/secrets.ts';
import type { Pack } from '../../src/runtime/pack.ts';
import type { Envelope, Role, Surface } from '../../src/spec/types.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { systemVerbs } from '../../src/verbs/index.ts';
import type { Store } from '../../src/store/store.ts';
import { createTestPostgresStore } from './postgres.ts';
import { testEngine } from './runtime.ts';
import { DEMO_TENANTS, demoPack, type DemoSeedFacts } from '../../src/business/pack.ts';
import type { DemoFixtures } from '../../src/business/seed.ts';
import type { DispatchOptions } from '../../src/runtime/core.ts';
import { pendingPhrase } from '../../src/runtime/steps/consent.ts';
import { operatorAtTerminal } from '../../src/identity/principal.ts';
import { dispatchAs } from './keyed.ts';

/** The clock the demo is seeded with (the fetched_at of the upstream customer.full_context example). */
export const DEMO_NOW = new Date('2026-05-23T14:00:00Z');

export interface DemoRuntime {
  rt: Runtime;
  dbPath: string;
  sandboxId: number;
  companyId: number;
  secondCompanyId: number;
  /** Keys of company 2 per role (users: fixtures.owner_user_id…). */
  keys: Record<Role, string>;
  /** Owner key of company 3. */
  secondOwnerKey: string;
  fixtures: DemoFixtures;
  /** Move the clock forward. */
  advance(ms: number): void;
  /** One dispatch with a role's key (company 2) or an explicit key; surface http unless told. */
  call(
    who: Role | { apiKey: string | null },
    verb: string,
    args?: Record<string, unknown>,
    options?: DispatchOptions & { surface?: Surface | 'internal' },
  ): Promise<Envelope>;
  /**
   * A write through its consent gate, like a human who agrees: the pending answer first, then the
   * confirmation with its nonce and (typed-phrase classes) the exact phrase shown. Reads and
   * failures of the first call are returned as they are.
   */
  commit(
    who: Role | { apiKey: string | null },
    verb: string,
    args?: Record<string, unknown>,
    options?: { surface?: Surface | 'internal'; idempotency_key?: string },
  ): Promise<Envelope>;
}

/** Register a pack on a runtime the way openLocal does (migrations, reasons, verbs, outbox handlers). */
export async function installPack(rt: Runtime, pack: Pack): Promise<void> {
  await rt.store.migrate(pack.name, pack.migrations);
  if (pack.reasons) rt.registry.reasons.declare(pack.name, pack.reasons);
  rt.register(...pack.verbs);
  for (const [kind, handler] of Object.entries(pack.outboxHandlers ?? {}))
    rt.outboxHandlers.set(kind, handler);
}

const secrets = Secrets.ephemeral();

interface Template {
  path: string;
  facts: DemoSeedFacts;
}

let template: Promise<Template> | undefined;

function seededTemplate(): Promise<Template> {
  template ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'solid-demo-template-'));
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'demo.db');
    const store = new SqliteStore({ path });
    const rt = await createRuntime({
      store,
      secrets,
      logger: pino({ level: 'silent' }),
      sandboxCompanyId: DEMO_TENANTS.sandbox.company_id,
      clock: () => DEMO_NOW,
      maintenanceIntervalMs: 0,
    });
    rt.register(...systemVerbs);
    await installPack(rt, demoPack);
    const facts = (await demoPack.seed!(rt, { now: DEMO_NOW })) as DemoSeedFacts;
    await rt.auditBuffer.flush();
    store.rawDatabase.pragma('wal_checkpoint(TRUNCATE)');
    await rt.close();
    return { path, facts };
  })();
  return template;
}

/** A fresh runtime on a private copy of the seeded demo database (or a freshly seeded PostgreSQL schema). */
export async function openDemoRuntime(t: TestContext): Promise<DemoRuntime> {
  const postgres = testEngine() === 'postgres';
  const seeded = postgres ? undefined : await seededTemplate();
  const dir = mkdtempSync(join(tmpdir(), 'solid-demo-'));
  const dbPath = join(dir, 'demo.db');
  let store: Store;
  if (seeded !== undefined) {
    copyFileSync(seeded.path, dbPath);
    store = new SqliteStore({ path: dbPath });
  } else {
    store = createTestPostgresStore(t);
  }
  const started = performance.now();
  let skew = 0;
  const clock = () => new Date(DEMO_NOW.getTime() + Math.floor(performance.now() - started) + skew);
  const rt = await createRuntime({
    store,
    secrets,
    clock,
    logger: pino({ level: process.env.SOLID_TEST_LOG ?? 'silent' }),
    validateOutputs: true,
    sandboxCompanyId: DEMO_TENANTS.sandbox.company_id,
    maintenanceIntervalMs: 0,
  });
  rt.register(...systemVerbs);
  await installPack(rt, demoPack);
  t.after(async () => {
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const facts = seeded?.facts ?? ((await demoPack.seed!(rt, { now: DEMO_NOW })) as DemoSeedFacts);
  const keys = facts.keys!;
  const keyOf = (who: Role | { apiKey: string | null }): string | null =>
    typeof who === 'string' ? keys[who] : who.apiKey;
  const call: DemoRuntime['call'] = (who, verb, args = {}, options = {}) => {
    const { surface = 'http', ...dispatchOptions } = options;
    return dispatchAs(rt, { apiKey: keyOf(who), surface }, verb, structuredClone(args), dispatchOptions);
  };
  return {
    rt,
    dbPath,
    sandboxId: DEMO_TENANTS.sandbox.company_id,
    companyId: DEMO_TENANTS.main.company_id,
    secondCompanyId: DEMO_TENANTS.second.company_id,
    keys,
    secondOwnerKey: facts.second_business_owner_key!,
    fixtures: facts.fixtures!,
    advance(ms) {
      skew += ms;
    },
    call,
    async commit(who, verb, args = {}, options = {}) {
      const surface = options.surface ?? 'http';
      const first = await call(who, verb, args, {
        surface,
        ...(options.idempotency_key !== undefined ? { idempotency_key: options.idempotency_key } : {}),
      });
      if (first.ok || first.error?.reason !== 'dispatch_pending' || first.consent === undefined) return first;
      const confirmed = {
        confirm: true,
        nonce: first.consent.nonce,
        ...(options.idempotency_key !== undefined ? { idempotency_key: options.idempotency_key } : {}),
      };
      if (first.consent.gate !== 'typed_phrase') return call(who, verb, args, { surface, ...confirmed });
      // The demo tenant counts a typed phrase only from a human (the default, spec/consent.md
      // §channels): the test consents as the operator at the terminal of the local database.
      const principal = operatorAtTerminal(await rt.tenants.authenticate(keyOf(who)));
      const phrase = pendingPhrase(first) ?? first.consent.typed_phrase;
      return rt.dispatch({ principal, surface }, verb, structuredClone(args), {
        ...confirmed,
        ...(phrase !== undefined ? { typed_phrase: phrase } : {}),
      });
    },
  };
}

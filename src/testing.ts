/**
 * `solid-verbs/testing`: test a pack the way agents will use it, in a few lines and without a
 * server. `createTestBusiness({ packs })` opens a runtime on an in-memory SQLite database with the
 * system verbs and your packs (checked and migrated as `solid serve` would), one tenant with a key
 * per role, and output validation ON: a handler whose result breaks its shape's schema fails here
 * with `internal_error` instead of reaching an MCP client that rejects it.
 *
 *     import { test } from 'node:test';
 *     import assert from 'node:assert/strict';
 *     import { createTestBusiness } from 'solid-verbs/testing';
 *     import bookshop from '../bookshop.mjs';
 *
 *     test('a title goes on the shelf', async (t) => {
 *       const shop = await createTestBusiness({ packs: [bookshop] });
 *       t.after(() => shop.close());
 *       const added = await shop.call('bookshop.title_add', { title: 'Dune' }); // consents as a human
 *       assert.equal(added.ok, true);
 *       assert.equal((await shop.verifyAudit()).ok, true);
 *     });
 *
 * Spec: spec/manifest.md §packs (loading), spec/consent.md §protocol (what `call` answers).
 */
import pino from 'pino';
import { createRuntime, type Runtime } from './runtime/runtime.ts';
import { checkPacks, installPack, type Pack } from './runtime/pack.ts';
import type { DispatchOptions } from './runtime/dispatch.ts';
import { verifyStoreChain, type AuditVerifyReport } from './runtime/ledger/verify/verify.ts';
import { SqliteStore } from './store/sqlite/sqlite-store.ts';
import { runtimeMigrations } from './store/migrations/runtime.ts';
import { systemVerbs } from './verbs/index.ts';
import type { Envelope, Role, Surface, Tier } from './spec/types.ts';

export interface TestBusinessOptions {
  /** The packs under test (definePack objects), installed in order. */
  packs: readonly Pack[];
  /** The tenant's subscription tier (default `professional`). */
  tier?: Tier;
  /** A fixed clock for the runtime (default: the real one). */
  clock?: () => Date;
  /** pino level of the runtime's logger (default `silent`; `SOLID_TEST_LOG` overrides). */
  logLevel?: string;
}

export interface CallOptions extends DispatchOptions {
  /** Whose key calls (default `owner`). */
  role?: Role;
  /** The transport surface the call claims (default `cli`). */
  surface?: Surface;
  /**
   * `call` only: answer a `dispatch_pending` as a consenting human would — confirm with the nonce
   * and type the exact phrase shown (default true). false returns the pending envelope.
   */
  consent?: boolean;
}

export interface TestBusiness {
  /** The runtime (register more verbs, read the store, flush the audit buffer…). */
  readonly rt: Runtime;
  /** The tenant under test. */
  readonly companyId: number;
  /** One API key per role in that tenant. */
  readonly keys: Readonly<Record<Role, string>>;
  /**
   * Dispatch `verb` with `args` as `role`; a pending answer is confirmed as a human would (the
   * nonce, and the typed phrase shown) unless `consent: false`. Resolves to the final envelope —
   * denials are envelopes too (`ok: false`, `error.reason`), never throws for a refusal.
   */
  call(verb: string, args?: Record<string, unknown>, options?: CallOptions): Promise<Envelope>;
  /** One raw dispatch, no consent answered (the first step of the protocol). */
  dispatch(verb: string, args?: Record<string, unknown>, options?: CallOptions): Promise<Envelope>;
  /** Flush buffered read rows and verify the tenant's hash-chained audit log (spec/audit.md §verify). */
  verifyAudit(): Promise<AuditVerifyReport>;
  /** Close the runtime and its in-memory database. */
  close(): Promise<void>;
}

const ROLES: readonly Role[] = ['owner', 'admin', 'employee', 'read_only'];

/**
 * Open a throwaway business for tests: in-memory SQLite, ephemeral secrets, system verbs, the given
 * packs (checkPacks then installPack: a bad pack throws PackError naming the pack, verb and
 * field), a sandbox tenant 1 and the tenant under test with an `owner`, `admin`, `employee` and
 * `read_only` key. Outputs are validated against their schemas.
 */
export async function createTestBusiness(options: TestBusinessOptions): Promise<TestBusiness> {
  checkPacks(options.packs, {
    registered: systemVerbs.map((v) => v.name),
    reservedMigrations: runtimeMigrations,
  });
  const rt = await createRuntime({
    store: new SqliteStore({ path: ':memory:' }),
    logger: pino({ level: process.env.SOLID_TEST_LOG ?? options.logLevel ?? 'silent' }),
    validateOutputs: true,
    sandboxCompanyId: 1,
    readAuditFlushMs: 5,
    maintenanceIntervalMs: 0,
    ...(options.clock !== undefined ? { clock: options.clock } : {}),
  });
  try {
    rt.register(...systemVerbs);
    for (const pack of options.packs) await installPack(rt, pack);
    await rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
    const tenant = await rt.createTenant({ name: 'Test Business', tier: options.tier ?? 'professional' });
    const keys = {} as Record<Role, string>;
    for (const [i, role] of ROLES.entries())
      keys[role] = await rt.createApiKey({
        company_id: tenant.company_id,
        user_id: i + 1,
        role,
        agent_type: 'test',
        name: `${role} (solid-verbs/testing)`,
      });
    const dispatch = (verb: string, args: Record<string, unknown> = {}, o: CallOptions = {}) => {
      const { role = 'owner', surface = 'cli', consent: _consent, ...dispatchOptions } = o;
      return rt.dispatch({ apiKey: keys[role], surface }, verb, args, dispatchOptions);
    };
    return {
      rt,
      companyId: tenant.company_id,
      keys,
      dispatch,
      async call(verb, args = {}, o = {}) {
        const first = await dispatch(verb, args, o);
        if (o.consent === false || first.error?.reason !== 'dispatch_pending' || first.consent === undefined)
          return first;
        return dispatch(verb, args, {
          ...o,
          confirm: true,
          nonce: first.consent.nonce,
          ...(first.consent.typed_phrase !== undefined ? { typed_phrase: first.consent.typed_phrase } : {}),
        });
      },
      async verifyAudit() {
        await rt.auditBuffer.flush();
        // A live test runtime signs no checkpoint until it closes, and tests move its clock: its
        // unsigned tail is expected, so only the chain itself is checked here.
        return verifyStoreChain(rt.store, {
          tenant: tenant.company_id,
          maxUnsignedSeconds: Infinity,
          maxUnsignedRows: Infinity,
        });
      },
      close: () => rt.close(),
    };
  } catch (err) {
    await rt.close().catch(() => {});
    throw err;
  }
}

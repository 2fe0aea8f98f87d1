/**
 * Harness for the consent tests: a runtime with the consent test pack (pack.ts), an injectable
 * clock, audit queries, and an in-process CLI runner on the same database.
 */
import type { TestContext } from 'node:test';
import { strict as assert } from 'node:assert';
import { consentTestPack } from './pack.ts';
import { loadSecrets } from '../../src/runtime/secrets.ts';
import type { Store } from '../../src/store/store.ts';
import { toAuditRow, type AuditRow } from '../../src/runtime/ledger/write/audit.ts';
import type { Envelope, Role } from '../../src/spec/types.ts';
import type { DispatchOptions } from '../../src/runtime/core.ts';
import { runCli } from '../../src/transports/cli/main.ts';
import type { Io } from '../../src/transports/cli/output.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { dispatchAs } from '../support/keyed.ts';

export interface ConsentHarness extends TestRuntime {
  /** Mutable test clock (ms since epoch) read by the runtime. */
  clock: { ms: number };
  call(role: Role | string, verb: string, args?: unknown, options?: DispatchOptions): Promise<Envelope>;
  /** The same call by that user signed in as a person (a human principal: approvals, settings). */
  callAsHuman(role: Role, verb: string, args?: unknown, options?: DispatchOptions): Promise<Envelope>;
  /** Committed effects of the test verbs (optionally of one verb). */
  effects(verb?: string): Promise<number>;
  /** Audit rows of the main tenant, oldest first, filtered by equality on columns. */
  audit(filter?: Partial<Record<keyof AuditRow, unknown>>): Promise<AuditRow[]>;
  lastAudit(filter?: Partial<Record<keyof AuditRow, unknown>>): Promise<AuditRow>;
  /** Set a tenant setting directly (and forget the cache). */
  setSettings(settings: Record<string, unknown>, companyId?: number): Promise<void>;
  /** Run the CLI in-process on this database. */
  cli(
    argv: string[],
    opts?: { apiKey?: string; tty?: boolean; prompt?: (q: string) => Promise<string> },
  ): Promise<{ code: number; stdout: string; stderr: string }>;
}

/**
 * A runtime on a temp-file database (or on `store`, e.g. PostgreSQL) with the consent test pack, a
 * mutable clock (start 2026-03-10T12:00:00Z) and persisted secrets so the CLI (another runtime on
 * the same file) verifies this runtime's nonces.
 */
export async function consentHarness(
  t: TestContext,
  options: { start?: string; store?: Store } = {},
): Promise<ConsentHarness> {
  const clock = { ms: Date.parse(options.start ?? '2026-03-10T12:00:00.000Z') };
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'solid-consent-'));
  const path = join(dir, 'solid.db');
  const { secrets } = loadSecrets({ keyfilePath: `${path}.keys.json`, create: true, env: {} });
  const h = await createTestRuntime(t, {
    path,
    secrets,
    clock: () => new Date(clock.ms),
    maintenanceIntervalMs: 0,
    ...(options.store ? { store: options.store } : {}),
  });
  t.after(async () => {
    const { rmSync } = await import('node:fs');
    rmSync(dir, { recursive: true, force: true });
  });
  await h.rt.store.migrate(consentTestPack.name, consentTestPack.migrations);
  h.rt.register(...consentTestPack.verbs);
  await h.rt.store.write((tx) =>
    tx.run(`INSERT INTO runtime_meta (key, value) VALUES ('packs', ?)`, [JSON.stringify(['consent-test'])]),
  );
  const keyOf = (role: string) =>
    role === 'other_owner' ? h.otherOwnerKey : (h.keys as Record<string, string>)[role]!;
  const audit = async (filter: Partial<Record<keyof AuditRow, unknown>> = {}) => {
    const where = ['company_id = ?'];
    const params: unknown[] = [filter.company_id ?? h.companyId];
    for (const [k, v] of Object.entries(filter)) {
      if (k === 'company_id') continue;
      if (!/^[a-z_]+$/.test(k)) throw new Error(k);
      where.push(v === null ? `${k} IS NULL` : `${k} = ?`);
      if (v !== null) params.push(v);
    }
    await h.rt.auditBuffer.flush();
    const rows = await h.rt.store.read((q) =>
      q.all<Record<string, unknown>>(
        `SELECT * FROM audit_log WHERE ${where.join(' AND ')} ORDER BY audit_id`,
        params,
      ),
    );
    return rows.map(toAuditRow);
  };
  return {
    ...h,
    clock,
    call: (role, verb, args, opts) =>
      dispatchAs(h.rt, { surface: 'cli', apiKey: keyOf(role) }, verb, args, opts),
    callAsHuman: (role, verb, args, opts) =>
      h.rt.dispatch({ surface: 'http', principal: h.human(role) }, verb, args, opts),
    async effects(verb) {
      const r = await h.rt.store.read((q) =>
        q.get<{ n: number }>(
          `SELECT COUNT(*) AS n FROM consent_effects${verb ? ' WHERE verb = ?' : ''}`,
          verb ? [verb] : [],
        ),
      );
      return Number(r?.n ?? 0);
    },
    audit,
    async lastAudit(filter) {
      const rows = await audit(filter);
      if (rows.length === 0) throw new Error(`no audit row matches ${JSON.stringify(filter)}`);
      return rows[rows.length - 1]!;
    },
    async setSettings(settings, companyId = h.companyId) {
      await h.rt.store.write((tx) =>
        // The harness's tenant lets the agent type phrases (an owner's choice) unless told otherwise.
        tx.run('UPDATE tenants SET settings = ? WHERE company_id = ?', [
          JSON.stringify({ phrase_channel: 'any', ...settings }),
          companyId,
        ]),
      );
      h.rt.tenants.invalidate();
    },
    async cli(argv, opts = {}) {
      const out: string[] = [];
      const err: string[] = [];
      const io: Io = {
        out: (s) => out.push(s),
        err: (s) => err.push(s),
        isTTY: opts.tty ?? false,
        prompt: opts.prompt,
      };
      const args = ['--db', path, ...argv];
      if (opts.apiKey !== undefined) {
        // every command here takes --api-key after its own words
        args.push('--api-key', opts.apiKey);
      }
      const code = await runCli(args, io);
      return { code, stdout: out.join('\n'), stderr: err.join('\n') };
    },
  };
}

/** The pending answer's consent block, asserting it is one. */
export function pendingOf(env: Envelope): NonNullable<Envelope['consent']> {
  if (env.ok || env.error?.reason !== 'dispatch_pending' || env.consent === undefined) {
    throw new Error(`expected dispatch_pending, got ${JSON.stringify(env)}`);
  }
  return env.consent;
}

/**
 * Assert a denial: the envelope carries `reason`, and its audit row (by audit_id) says status
 * denied, the same reason, the caller's role and the attempted args (secret fields redacted).
 */
export async function expectDenied(
  h: ConsentHarness,
  env: Envelope,
  reason: string,
  expected: { role?: string | null; args?: Record<string, unknown>; status?: string } = {},
): Promise<AuditRow> {
  assert.equal(env.ok, false, `expected a denial, got ${JSON.stringify(env)}`);
  assert.equal(env.error?.reason, reason, `expected ${reason}, got ${JSON.stringify(env.error)}`);
  assert.equal(typeof env.audit_id, 'number', 'a denial carries its audit_id');
  const rows = await h.rt.store.read((q) =>
    q.all<Record<string, unknown>>('SELECT * FROM audit_log WHERE audit_id = ?', [env.audit_id]),
  );
  assert.equal(rows.length, 1);
  const row = toAuditRow(rows[0]!);
  assert.equal(row.status, expected.status ?? 'denied');
  assert.equal(row.reason, reason);
  if (expected.role !== undefined) assert.equal(row.role, expected.role);
  if (expected.args !== undefined) assert.deepEqual(row.request_data, expected.args);
  return row;
}

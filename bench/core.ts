/**
 * Core benchmark (issue 2): a read verb and a write verb through `dispatch` against the same
 * handler work done bare, in the same run. Bare = the handler's own SQL on the same store
 * (store.read / one store.write transaction), without registry, validation, consent, audit,
 * events, idempotency or receipt signing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createRuntime } from '../src/runtime/runtime.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { defineVerb } from '../src/runtime/verb.ts';
import type { Queryable } from '../src/store/store.ts';
import { opsPerSecond, paired, ratioResult, type BenchResult } from './harness.ts';
import { searchWork, seedContactsBench } from './contacts.ts';

const GET_SQL = 'SELECT id, name, email, phone FROM contacts WHERE company_id = ? AND id = ?';
const UPDATE_SQL = 'UPDATE contacts SET phone = ? WHERE company_id = ? AND id = ?';

async function updateWork(q: Queryable, companyId: number, id: number, phone: string) {
  const before = await q.get<{ phone: string }>(GET_SQL, [companyId, id]);
  await q.run(UPDATE_SQL, [phone, companyId, id]);
  return { contact_id: id, previous_phone: before?.phone ?? null, phone };
}

export async function benchCore(options: { ms?: number; runs?: number } = {}): Promise<BenchResult[]> {
  const ms = options.ms ?? 1500;
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-'));
  const store = new SqliteStore({ path: join(dir, 'bench.db') });
  const rt = await createRuntime({ store, logger: pino({ level: 'silent' }), sandboxCompanyId: 1 });
  try {
    // The daily cap of WRITE_REVERSIBLE (default 100) would refuse all but the first writes.
    const key = await seedContactsBench(rt, { caps: { WRITE_REVERSIBLE: 1_000_000_000 } });
    const principal = await rt.tenants.authenticate(key);
    rt.register(
      defineVerb({
        name: 'bench.set_phone_ungated',
        description: 'Set a phone (no gate, for the pipeline-without-consent figure).',
        shape: 'receipt',
        category: 'crm',
        consent: 'WRITE_REVERSIBLE',
        input: {
          type: 'object',
          properties: { id: { type: 'integer' }, phone: { type: 'string' } },
          required: ['id', 'phone'],
          additionalProperties: false,
        },
        handler: async (ctx, a: { id: number; phone: string }) => {
          const r = await updateWork(ctx.db, ctx.principal.company_id, a.id, a.phone);
          ctx.setRollback(`crm:phone:${a.id}`, { previous: r.previous_phone });
          return r;
        },
      }),
    );
    const caller = { surface: 'cli' as const, principal };
    let i = 0;
    const read = await paired(
      () => opsPerSecond(() => rt.dispatch(caller, 'bench.search', { q: 'smith' }), ms),
      () => opsPerSecond(() => store.read((q) => searchWork(q, 2, 'smith')), ms),
      options.runs ?? 3,
    );
    // The write path with its confirmation: preflight once per nonce is part of the protocol, so
    // measure the executing call: a confirm with a fresh nonce each time would double the work of
    // the consent step; instead measure the execute step with a prepared nonce per call.
    const write = await paired(
      async () => {
        const nonces: string[] = [];
        for (let k = 0; k < 4000; k++) {
          const p = await rt.dispatch(caller, 'bench.set_phone_ungated', {
            id: (k % 200) + 1,
            phone: `+1${k}`,
          });
          if (p.consent === undefined) throw new Error(`bench preflight failed: ${JSON.stringify(p.error)}`);
          nonces.push(p.consent!.nonce);
        }
        let k = 0;
        return opsPerSecond(
          async () => {
            const n = k++;
            if (n >= nonces.length) throw new Error('bench ran out of nonces; lower ms');
            const env = await rt.dispatch(
              caller,
              'bench.set_phone_ungated',
              { id: (n % 200) + 1, phone: `+1${n}` },
              { confirm: true, nonce: nonces[n] },
            );
            if (!env.ok) throw new Error(`bench write failed: ${JSON.stringify(env.error)}`);
          },
          Math.min(ms, 1000),
          0,
        );
      },
      () =>
        opsPerSecond(
          () => store.write((tx) => updateWork(tx, 2, (i++ % 200) + 1, `+2${i}`)),
          Math.min(ms, 1000),
        ),
      options.runs ?? 3,
    );
    await rt.auditBuffer.flush();
    return [
      ratioResult(
        'core.read',
        'read verb (contact search, 200 rows) through dispatch vs the same query bare',
        read,
        'ops/s',
        0.8,
      ),
      ratioResult(
        'core.write',
        'write verb (confirmed contact update) through dispatch vs the same UPDATE in one bare store transaction',
        write,
        'ops/s',
        0.5,
        'dispatch includes nonce verify + burn, daily cap, audit row (hash chain), event-free handler, revert data, idempotency record, ES256-signed receipt',
      ),
    ];
  } finally {
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

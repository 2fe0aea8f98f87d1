/**
 * Core benchmark (issue 2): a read verb and a write verb through `dispatch` against the same
 * handler work done bare, in the same run. Bare = the handler's own SQL on the same store
 * (store.read / one store.write transaction), without registry, validation, consent, audit,
 * events, idempotency or receipt signing.
 *
 * core.write_vs_careful (issue 21) compares the confirmed write with what a careful team would
 * write without the runtime, in one transaction: the same UPDATE, one hash-chained audit INSERT
 * (SHA-256 over the previous hash and the row), one idempotency INSERT holding the receipt, and
 * an ES256 signature of the receipt (node:crypto, a P-256 key made once). core.write (vs the bare
 * UPDATE alone) stays as a diagnostic. core.write_wal_pages counts the WAL frames a confirmed
 * write appends (checkpoints off while counting), next to the careful baseline's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import pino from 'pino';
import { createRuntime } from '../src/runtime/runtime.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { defineVerb } from '../src/runtime/verb.ts';
import type { Queryable } from '../src/store/store.ts';
import { opsPerSecond, paired, ratioResult, type BenchResult } from './harness.ts';
import { searchWork, seedContactsBench } from './contacts.ts';

const GET_SQL = 'SELECT id, name, email, phone FROM contacts WHERE company_id = ? AND id = ?';
const UPDATE_SQL = 'UPDATE contacts SET phone = ? WHERE company_id = ? AND id = ?';

/** The write handler's work: read the old phone, UPDATE it (the bare baseline of core.write). */
export async function updateWork(q: Queryable, companyId: number, id: number, phone: string) {
  const before = await q.get<{ phone: string }>(GET_SQL, [companyId, id]);
  await q.run(UPDATE_SQL, [phone, companyId, id]);
  return { contact_id: id, previous_phone: before?.phone ?? null, phone };
}

/** The confirmed-write verb of core.write* (WRITE_REVERSIBLE, no gate beyond the nonce). */
export function setPhoneUngatedVerb() {
  return defineVerb({
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
  });
}

const CAREFUL_SCHEMA = `
CREATE TABLE IF NOT EXISTS careful_audit (id INTEGER PRIMARY KEY, company_id INTEGER NOT NULL, created_at TEXT NOT NULL, action TEXT NOT NULL, data TEXT NOT NULL, prev_hash TEXT NOT NULL, row_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS careful_idempotency (key TEXT PRIMARY KEY, company_id INTEGER NOT NULL, receipt TEXT NOT NULL, created_at TEXT NOT NULL);`;

/**
 * The careful team's write: the handler's SELECT + UPDATE, a chained audit row, an idempotency
 * row with the ES256-signed receipt, all in one store transaction.
 */
function carefulWriter(store: SqliteStore) {
  store.rawDatabase.exec(CAREFUL_SCHEMA);
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return (id: number, phone: string) =>
    store.write(async (tx) => {
      const result = await updateWork(tx, 2, id, phone);
      const last = await tx.get<{ row_hash: string }>(
        'SELECT row_hash FROM careful_audit ORDER BY id DESC LIMIT 1',
      );
      const prev = last?.row_hash ?? '0'.repeat(64);
      const now = new Date().toISOString();
      const data = JSON.stringify({ args: { id, phone }, result });
      const rowHash = createHash('sha256')
        .update(prev)
        .update(`${now}|bench.set_phone|${data}`)
        .digest('hex');
      await tx.run(
        'INSERT INTO careful_audit (company_id, created_at, action, data, prev_hash, row_hash) VALUES (?, ?, ?, ?, ?, ?)',
        [2, now, 'bench.set_phone', data, prev, rowHash],
      );
      const receipt = JSON.stringify({ verb: 'bench.set_phone', result, audit_hash: rowHash, at: now });
      const signature = sign('sha256', Buffer.from(receipt), { key: privateKey, dsaEncoding: 'ieee-p1363' });
      await tx.run(
        'INSERT INTO careful_idempotency (key, company_id, receipt, created_at) VALUES (?, ?, ?, ?)',
        [randomUUID(), 2, JSON.stringify({ receipt, signature: signature.toString('base64url') }), now],
      );
      return result;
    });
}

/** WAL frames appended by `n` calls of `op` (checkpoints off meanwhile), per call. */
async function walFramesPer(
  store: SqliteStore,
  n: number,
  op: (k: number) => Promise<unknown>,
): Promise<number> {
  const db = store.rawDatabase;
  // The background checkpointer (sqlite-store.ts) would reset the WAL under the count.
  return store.withCheckpointsPaused(async () => {
    const auto = db.pragma('wal_autocheckpoint', { simple: true }) as number;
    db.pragma('wal_autocheckpoint = 0');
    try {
      db.pragma('wal_checkpoint(TRUNCATE)');
      for (let k = 0; k < n; k++) await op(k);
      const [r] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>;
      return r!.log / n;
    } finally {
      db.pragma(`wal_autocheckpoint = ${auto}`);
    }
  });
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
    rt.register(setPhoneUngatedVerb());
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
    // Fresh nonces for the careful comparison and the WAL count (preflights outside the timing).
    const preflight = async (count: number, from: number): Promise<string[]> => {
      const out: string[] = [];
      for (let k = 0; k < count; k++) {
        const n = from + k;
        const p = await rt.dispatch(caller, 'bench.set_phone_ungated', {
          id: (n % 200) + 1,
          phone: `+3${n}`,
        });
        if (p.consent === undefined) throw new Error(`bench preflight failed: ${JSON.stringify(p.error)}`);
        out.push(p.consent!.nonce);
      }
      return out;
    };
    const confirmed = (nonces: string[], from: number) => {
      let k = 0;
      return async () => {
        const n = k++;
        if (n >= nonces.length) throw new Error('bench ran out of nonces; lower ms');
        const env = await rt.dispatch(
          caller,
          'bench.set_phone_ungated',
          { id: ((from + n) % 200) + 1, phone: `+3${from + n}` },
          { confirm: true, nonce: nonces[n] },
        );
        if (!env.ok) throw new Error(`bench write failed: ${JSON.stringify(env.error)}`);
      };
    };
    const careful = carefulWriter(store);
    let c = 0;
    let base = 100_000;
    const vsCareful = await paired(
      async () => {
        const from = base;
        base += 4000;
        const nonces = await preflight(4000, from);
        await rt.auditBuffer.flush();
        return opsPerSecond(confirmed(nonces, from), Math.min(ms, 1000), 0);
      },
      () => opsPerSecond(() => careful((c++ % 200) + 1, `+4${c}`), Math.min(ms, 1000)),
      options.runs ?? 3,
    );
    const W = 200;
    const wFrom = base;
    const walNonces = await preflight(W, wFrom);
    await rt.auditBuffer.flush();
    const walOne = confirmed(walNonces, wFrom);
    const pagesPipeline = await walFramesPer(store, W, () => walOne());
    const pagesCareful = await walFramesPer(store, W, (k) => careful((k % 200) + 1, `+5${k}`));
    // The same with 16 concurrent writers (group commit, the default, shares their hot pages).
    const cFrom = wFrom + W;
    const concNonces = await preflight(W, cFrom);
    await rt.auditBuffer.flush();
    const concOne = confirmed(concNonces, cFrom);
    const pagesConcurrent =
      (await walFramesPer(store, 1, async () => {
        let left = W;
        await Promise.all(
          Array.from({ length: 16 }, async () => {
            while (left-- > 0) await concOne();
          }),
        );
      })) / W;
    const pagesBare = await walFramesPer(store, W, (k) =>
      store.write((tx) => updateWork(tx, 2, (k % 200) + 1, `+6${k}`)),
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
        'diagnostic (the bare side is one UPDATE); dispatch includes nonce verify + burn, daily cap, audit row (hash chain), event-free handler, revert data, idempotency record, ES256-signed receipt',
      ),
      ratioResult(
        'core.write_vs_careful',
        'confirmed write verb through dispatch vs what a careful team writes without the runtime: the same SELECT + UPDATE, a SHA-256-chained audit INSERT, an idempotency INSERT holding the receipt and an ES256 receipt signature (node:crypto, P-256), in one transaction',
        vsCareful,
        'ops/s',
        0.7,
        `median of ${options.runs ?? 3} alternating pairs, ${Math.min(ms, 1000)} ms each; the pipeline's nonces are made by preflights outside the timing`,
      ),
      {
        id: 'core.write_wal_pages',
        what: 'WAL frames (pages) appended per confirmed write dispatch, checkpoints off while counting, vs the careful baseline',
        value: Math.round(pagesPipeline * 10) / 10,
        baseline: Math.round(pagesCareful * 10) / 10,
        ratio: Math.round((pagesPipeline / pagesCareful) * 100) / 100,
        unit: 'pages',
        notes: `${W} sequential confirmed writes each; the bare UPDATE alone: ${pagesBare.toFixed(1)} pages per write; ${W} confirmed writes from 16 concurrent callers (group commit): ${pagesConcurrent.toFixed(1)} pages per write`,
      },
    ];
  } finally {
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [ms, runs] = process.argv.slice(2).map(Number);
  console.log(JSON.stringify(await benchCore({ ms: ms || undefined, runs: runs || undefined }), null, 2));
}

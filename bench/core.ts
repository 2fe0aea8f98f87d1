/**
 * Core benchmark (issues 2, 21, 36), on the built package (dist/): a read verb and a confirmed
 * write verb as a client calls them, against what a user would write without the runtime, in
 * the same run, in ABBA rounds (bench/harness.ts `abba`: ≥ 5 rounds, min / median / max).
 *
 * - core.read_keyed: `dispatchWithKey` (exported from dist/index.js: the API key authenticated on
 *   every call, as every transport does) of the contact search `bench.search` ÷ the same SQL on a
 *   raw better-sqlite3 prepared statement (its own connection to the same file), target ≥ 0.9.
 * - core.write_confirmed_vs_careful: what a client sends for a confirmed write — the preflight
 *   (the call that answers the nonce) then the confirm, both keyed, both timed — ÷ what a careful
 *   team writes without the runtime, in one raw better-sqlite3 transaction on its own connection
 *   (WAL, synchronous NORMAL, as the store's default): the same SELECT + UPDATE, a SHA-256-chained
 *   audit INSERT, an idempotency INSERT holding the receipt and an ES256 signature of the receipt
 *   (node:crypto, a P-256 key made once), target ≥ 0.5.
 * - core.write_wal_frames: WAL frames appended per confirmed write, its preflight included
 *   (checkpoints off while counting), target ≤ 10; the careful write's frames are the baseline.
 * - core.write_confirm_only (diagnostic): the confirm alone, nonces made by preflights outside the
 *   timing, ÷ the careful write: the consent step's share of the whole.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createHash, generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import Database from 'better-sqlite3';
import pino from 'pino';
import type { Queryable } from '../src/store/store.ts';
import type { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import {
  abba,
  abbaNote,
  fromDist,
  median,
  opsPerSecond,
  ratioResult,
  type BenchResult,
  type Solid,
} from './harness.ts';
import { SEARCH_SQL, seedContactsBench } from './contacts.ts';

const { createRuntime, SqliteStore: Store, defineVerb, dispatchWithKey } = await fromDist<Solid>('index.js');

const GET_SQL = 'SELECT id, name, email, phone FROM contacts WHERE company_id = ? AND id = ?';
const UPDATE_SQL = 'UPDATE contacts SET phone = ? WHERE company_id = ? AND id = ?';

/** The write handler's work: read the old phone, UPDATE it. */
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
 * The careful team's write on its own better-sqlite3 connection to `path`: the handler's SELECT +
 * UPDATE, a chained audit row, an idempotency row with the ES256-signed receipt, in one
 * transaction (6 statements). Returns the write and the connection (to close, and to pause its
 * checkpoints while WAL frames are counted).
 */
export function carefulWriter(path: string) {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.exec(CAREFUL_SCHEMA);
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const get = db.prepare(GET_SQL);
  const update = db.prepare(UPDATE_SQL);
  const last = db.prepare('SELECT row_hash FROM careful_audit ORDER BY id DESC LIMIT 1');
  const audit = db.prepare(
    'INSERT INTO careful_audit (company_id, created_at, action, data, prev_hash, row_hash) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const idem = db.prepare(
    'INSERT INTO careful_idempotency (key, company_id, receipt, created_at) VALUES (?, ?, ?, ?)',
  );
  const tx = db.transaction((id: number, phone: string) => {
    const before = get.get(2, id) as { phone: string } | undefined;
    update.run(phone, 2, id);
    const result = { contact_id: id, previous_phone: before?.phone ?? null, phone };
    const prev = (last.get() as { row_hash: string } | undefined)?.row_hash ?? '0'.repeat(64);
    const now = new Date().toISOString();
    const data = JSON.stringify({ args: { id, phone }, result });
    const rowHash = createHash('sha256').update(prev).update(`${now}|bench.set_phone|${data}`).digest('hex');
    audit.run(2, now, 'bench.set_phone', data, prev, rowHash);
    const receipt = JSON.stringify({ verb: 'bench.set_phone', result, audit_hash: rowHash, at: now });
    const signature = sign('sha256', Buffer.from(receipt), { key: privateKey, dsaEncoding: 'ieee-p1363' });
    idem.run(randomUUID(), 2, JSON.stringify({ receipt, signature: signature.toString('base64url') }), now);
    return result;
  });
  return { write: (id: number, phone: string) => tx(id, phone), db };
}

/**
 * WAL frames appended by `n` calls of `op` (checkpoints off meanwhile, on the store's connections
 * and on `others`), per call.
 */
async function walFramesPer(
  store: SqliteStore,
  n: number,
  op: (k: number) => Promise<unknown>,
  others: Database.Database[] = [],
): Promise<number> {
  const db = store.rawDatabase;
  // The background checkpointer (sqlite-store.ts) would reset the WAL under the count.
  return store.withCheckpointsPaused(async () => {
    const conns = [db, ...others];
    const auto = conns.map((c) => c.pragma('wal_autocheckpoint', { simple: true }) as number);
    for (const c of conns) c.pragma('wal_autocheckpoint = 0');
    try {
      db.pragma('wal_checkpoint(TRUNCATE)');
      for (let k = 0; k < n; k++) await op(k);
      const [r] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>;
      return r!.log / n;
    } finally {
      conns.forEach((c, i) => c.pragma(`wal_autocheckpoint = ${auto[i]}`));
    }
  });
}

export async function benchCore(options: { ms?: number; runs?: number } = {}): Promise<BenchResult[]> {
  const ms = options.ms ?? 1500;
  const rounds = Math.max(5, options.runs ?? 5);
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-'));
  const path = join(dir, 'bench.db');
  const store = new Store({ path });
  // No maintenance timer: nothing of the runtime writes while the careful side holds its lock.
  const rt = await createRuntime({
    store,
    logger: pino({ level: 'silent' }),
    sandboxCompanyId: 1,
    maintenanceIntervalMs: 0,
  });
  let raw: Database.Database | undefined;
  let careful: ReturnType<typeof carefulWriter> | undefined;
  try {
    // The daily cap of WRITE_REVERSIBLE (default 100) would refuse all but the first writes.
    const key = await seedContactsBench(rt, { caps: { WRITE_REVERSIBLE: 1_000_000_000 } });
    rt.register(setPhoneUngatedVerb());
    // A transport's caller: no principal, the key authenticated by dispatchWithKey on each call.
    const caller = { surface: 'http' as const };
    const VERB = 'bench.set_phone_ungated';

    // core.read_keyed: the read as every transport runs it vs a raw prepared statement.
    raw = new Database(path, { readonly: true });
    const search = raw.prepare(SEARCH_SQL);
    const rawRead = (term: string) => {
      const rows = search.all(2, `%${term}%`);
      return { entity_id: 2, data: { matches: rows.length, contacts: rows } };
    };
    const keyedRead = async () => {
      const env = await dispatchWithKey(rt, caller, key, 'bench.search', { q: 'smith' });
      if (!env.ok) throw new Error(`bench read failed: ${JSON.stringify(env.error)}`);
    };
    const read = await abba(
      () => opsPerSecond(keyedRead, ms),
      () => opsPerSecond(async () => rawRead('smith'), ms),
      rounds,
    );

    // core.write_confirmed_vs_careful: preflight + confirm, both keyed and timed.
    careful = carefulWriter(path);
    let n = 0;
    const confirmedWrite = async (phone: string) => {
      const args = { id: (n++ % 200) + 1, phone };
      const p = await dispatchWithKey(rt, caller, key, VERB, args);
      if (p.consent === undefined) throw new Error(`bench preflight failed: ${JSON.stringify(p.error)}`);
      const env = await dispatchWithKey(rt, caller, key, VERB, args, {
        confirm: true,
        nonce: p.consent.nonce,
      });
      if (!env.ok) throw new Error(`bench write failed: ${JSON.stringify(env.error)}`);
    };
    let c = 0;
    const carefulOne = async () => careful!.write((c++ % 200) + 1, `+4${c}`);
    // The careful side's own connection waits on no lock of ours: the audit rows the system side
    // buffered are written first, so no timed flush of them starts a transaction meanwhile.
    const carefulFor = async (t: number, warm?: number) => {
      await rt.auditBuffer.flush();
      return opsPerSecond(carefulOne, t, warm);
    };
    const writeMs = Math.min(ms, 1000);
    // Process CPU per op of each side (µs), beside the wall-clock rates: the confirmed write
    // yields to the event loop (group commit) where the careful transaction never does, so on a
    // loaded machine its wall time is mostly the scheduler's.
    const cpu = { system: [] as number[], careful: [] as number[] };
    const withCpu = async (into: number[], run: () => Promise<number>, t: number) => {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      const rate = await run();
      const c = process.cpuUsage(c0);
      const ops = (rate * (performance.now() - t0)) / 1000;
      if (ops > 0 && t > 0) into.push((c.user + c.system) / ops);
      return rate;
    };
    const vsCareful = await abba(
      () => withCpu(cpu.system, () => opsPerSecond(() => confirmedWrite(`+3${n}`), writeMs), writeMs),
      () => withCpu(cpu.careful, () => carefulFor(writeMs), writeMs),
      rounds,
    );

    // Diagnostic: the confirm alone (nonces made outside the timing) vs the careful write.
    const preflight = async (
      count: number,
    ): Promise<Array<{ args: { id: number; phone: string }; nonce: string }>> => {
      const out = [];
      for (let k = 0; k < count; k++) {
        const args = { id: (n++ % 200) + 1, phone: `+5${n}` };
        const p = await dispatchWithKey(rt, caller, key, VERB, args);
        if (p.consent === undefined) throw new Error(`bench preflight failed: ${JSON.stringify(p.error)}`);
        out.push({ args, nonce: p.consent.nonce });
      }
      return out;
    };
    const confirmOnly = async () => {
      const pending = await preflight(1500);
      await rt.auditBuffer.flush();
      let k = 0;
      return opsPerSecond(
        async () => {
          const x = pending[k++];
          if (x === undefined) throw new Error('bench ran out of nonces; raise the preflight count');
          const env = await dispatchWithKey(rt, caller, key, VERB, x.args, { confirm: true, nonce: x.nonce });
          if (!env.ok) throw new Error(`bench write failed: ${JSON.stringify(env.error)}`);
        },
        Math.min(writeMs, 300),
        0,
      );
    };
    const confirmVsCareful = await abba(confirmOnly, () => carefulFor(Math.min(writeMs, 300), 0), rounds);

    // core.write_wal_frames: preflight + confirm per write, sequential, checkpoints off.
    const W = 200;
    await rt.auditBuffer.flush();
    const framesPipeline = await walFramesPer(
      store,
      W,
      async (k) => {
        await confirmedWrite(`+6${k}`);
        // The preflight's and the read audit rows buffered in memory land in the count too.
        if (k === W - 1) await rt.auditBuffer.flush();
      },
      [careful.db],
    );
    const framesCareful = await walFramesPer(
      store,
      W,
      (k) => Promise.resolve(careful!.write((k % 200) + 1, `+7${k}`)),
      [careful.db],
    );
    // The same with 16 concurrent writers (group commit, the default, shares their hot pages).
    const framesConcurrent =
      (await walFramesPer(
        store,
        1,
        async () => {
          let left = W;
          await Promise.all(
            Array.from({ length: 16 }, async () => {
              while (left-- > 0) await confirmedWrite(`+8${left}`);
            }),
          );
          await rt.auditBuffer.flush();
        },
        [careful.db],
      )) / W;
    await rt.auditBuffer.flush();
    return [
      ratioResult(
        'core.read_keyed',
        'read verb (contact search, 20 of 200 rows) through dispatchWithKey (API key authenticated on each call, as every transport does) vs the same SQL on a raw better-sqlite3 prepared statement (own connection)',
        read,
        'ops/s',
        0.9,
        abbaNote(read),
      ),
      ratioResult(
        'core.write_confirmed_vs_careful',
        'confirmed write as a client sends it — preflight (answers the nonce) then confirm, both keyed and timed — vs a careful hand-rolled better-sqlite3 transaction: the same SELECT + UPDATE, a SHA-256-chained audit INSERT, an idempotency INSERT holding the receipt, an ES256 receipt signature (node:crypto, P-256)',
        vsCareful,
        'ops/s',
        0.5,
        `${abbaNote(vsCareful)}, ${writeMs} ms each side; process CPU per write ${median(cpu.system).toFixed(0)} µs vs ${median(cpu.careful).toFixed(0)} µs careful (medians over the rounds, warm-up included: CPU ratio ${(median(cpu.careful) / median(cpu.system)).toFixed(2)})`,
      ),
      {
        ...ratioResult(
          'core.write_confirm_only',
          'diagnostic: the confirm call alone (nonces made by keyed preflights outside the timing) vs the careful transaction',
          confirmVsCareful,
          'ops/s',
          0.5,
          abbaNote(confirmVsCareful),
        ),
        target: 'diagnostic',
        met: undefined,
      } as BenchResult,
      {
        id: 'core.write_wal_frames',
        what: 'WAL frames appended per confirmed write, its preflight included (keyed; buffered audit rows flushed into the count), checkpoints off while counting, vs the careful transaction',
        value: Math.round(framesPipeline * 10) / 10,
        baseline: Math.round(framesCareful * 10) / 10,
        ratio: Math.round((framesPipeline / framesCareful) * 100) / 100,
        unit: 'frames',
        target: '≤ 10 frames',
        met: framesPipeline <= 10,
        notes: `${W} sequential preflight + confirm pairs; ${W} pairs from 16 concurrent callers (group commit): ${framesConcurrent.toFixed(1)} frames per write`,
      },
    ];
  } finally {
    raw?.close();
    careful?.db.close();
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [ms, runs] = process.argv.slice(2).map(Number);
  console.log(JSON.stringify(await benchCore({ ms: ms || undefined, runs: runs || undefined }), null, 2));
}

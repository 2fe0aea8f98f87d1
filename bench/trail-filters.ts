/**
 * `trail.worst_filter_1m` (issue 36): audit.trail over every filter the verb accepts, at 1,000,000
 * rows vs 10,000 rows, on the built package (dist/, what users install), through `dispatchWithKey`
 * (the owner's API key authenticated on every call, as a transport does). Each filter set — each filter alone with a value that matches and
 * one that matches nothing (an agent that never called, a verb never run…), the time range, the
 * cursor, the limit, and the combinations the dashboard and agents send — is sampled alternately
 * on the small and the large log (ABBA: the order flips every sample), after a warm-up.
 *
 * Figures:
 * - `trail.worst_filter_1m`: the filter set whose median call slows most with the log's size;
 *   ratio = median process CPU per call at 10k ÷ at 1M (1M ÷ 10k in calls per CPU-second),
 *   target ≥ 0.7. CPU, not wall clock: on a shared machine a call's wall time is mostly the
 *   scheduler's; the wall-clock medians are in the notes.
 * - `trail.max_call_cpu_1m`: the most process CPU one call took at 1M rows over every sample of
 *   every set (ms; target ≤ 20). SQLite runs on the event loop, so a call's CPU bounds how long
 *   it can hold the loop whatever else shares the machine; the loop's own largest delay
 *   (perf_hooks monitorEventLoopDelay) is in the notes, wall-clock and so noisy under load.
 *
 * The logs are generated straight into the table by bench/ledger.ts's seeder (`generateAuditChain`:
 * bulk insert, indexes rebuilt once, a correct hash chain) with a realistic mix — 80 % reads,
 * agents claude / dashboard / cursor, 70 % completed, denials with reasons, an entity on writes —
 * then ANALYZEd.
 *
 *   npm run build && npm run bench -- --only trailfilters
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { Envelope } from '../src/spec/types.ts';
import type { AuditRow } from '../src/runtime/ledger/write/audit.ts';
import { fromDist, median, type BenchResult, type Solid } from './harness.ts';
import { fixture, generateAuditChain, type AuditMix, type Fixture } from './ledger.ts';

const { dispatchWithKey } = await fromDist<Solid>('index.js');

const START_MS = Date.parse('2026-01-01T00:00:00.000Z');
const STEP_MS = 50;
const READS = ['customer.full_context', 'kb.search', 'crm_contact_search', 'deals.list'];
const WRITES = ['crm_contact_update', 'charge_invoice', 'deals.create', 'email.send', 'payments.refund'];
const AGENTS = [
  'claude',
  'claude',
  'claude',
  'claude',
  'claude',
  'claude',
  'claude',
  'dashboard',
  'dashboard',
  'cursor',
];
const STATUSES = [
  'completed',
  'completed',
  'completed',
  'completed',
  'completed',
  'completed',
  'completed',
  'denied',
  'failed',
  'replayed',
];
const REASONS: Record<string, string | null> = {
  completed: null,
  denied: 'role_denied',
  failed: 'invoice_already_paid',
  replayed: null,
};

interface Log {
  f: Fixture;
  rows: number;
  midId: number;
  /** next_cursor of the first page of some filter sets, for the "… page 2" sets. */
  cursors: Record<string, string>;
}

/** The realistic mix of the trail's logs (see the header), by seq. */
const trailMix: AuditMix = (k) => {
  const write = k % 5 === 0;
  const status = STATUSES[(k * 3) % STATUSES.length]! as AuditRow['status'];
  return {
    action_type: write ? WRITES[((k / 5) % WRITES.length) | 0]! : READS[k % READS.length]!,
    status,
    reason: REASONS[status] ?? null,
    agent_type: AGENTS[k % AGENTS.length]!,
    shape: write ? 'receipt' : 'aggregate',
    consent_class: write ? 'WRITE_REVERSIBLE' : 'READ',
    entity_type: write ? (k % 2 === 0 ? 'contact' : 'deal') : null,
    entity_id: write ? String(k % 5000) : null,
    is_reversible: write && status === 'completed' ? 1 : 0,
    request_data: { contact_id: k % 5000 },
  };
};

/** A log of `rows` generated rows (bench/ledger.ts's seeder, the trail's mix), analysed and settled. */
async function makeLog(rows: number): Promise<Log> {
  const f = await fixture();
  await generateAuditChain(f.rt, f.store, 2, rows, { startMs: START_MS, stepMs: STEP_MS, mix: trailMix });
  const db = f.store.rawDatabase;
  const mid = db
    .prepare('SELECT audit_id FROM audit_log WHERE company_id = 2 ORDER BY seq LIMIT 1 OFFSET ?')
    .get(Math.floor(rows / 2)) as { audit_id: number };
  db.exec('ANALYZE');
  db.pragma('wal_checkpoint(TRUNCATE)');
  return { f, rows, midId: mid.audit_id, cursors: {} };
}

/** The filter sets: every argument of audit.trail, alone (a value that matches, one that does not) and combined. */
const SETS: ReadonlyArray<{ name: string; args: Record<string, unknown>; page2?: boolean }> = [
  { name: 'newest page', args: {} },
  { name: 'from (the whole log)', args: { from: 'START' } },
  { name: 'to (the older half)', args: { to: 'MID' } },
  { name: 'one hour, middle of the log', args: { from: 'MID', to: 'MID+1h' } },
  { name: 'verb', args: { verb: 'charge_invoice' } },
  { name: 'verb never called', args: { verb: 'never.called' } },
  { name: 'status denied', args: { status: 'denied' } },
  { name: 'status completed', args: { status: 'completed' } },
  { name: 'status never seen', args: { status: 'rolled_back' } },
  { name: 'actor', args: { actor: 7 } },
  { name: 'actor who never called', args: { actor: 999_999 } },
  { name: 'entity', args: { entity_type: 'contact', entity_id: '42' } },
  { name: 'entity_type', args: { entity_type: 'deal' } },
  { name: 'entity_type never seen', args: { entity_type: 'invoice' } },
  { name: 'reason', args: { reason: 'role_denied' } },
  { name: 'reason never seen', args: { reason: 'no_such_reason' } },
  { name: 'scope business', args: { scope: 'business' } },
  { name: 'scope all', args: { scope: 'all' } },
  { name: 'audit_id', args: { audit_id: 'MIDID' } },
  { name: 'audit_id absent', args: { audit_id: 999_999_999 } },
  { name: 'agent_type', args: { agent_type: 'claude' } },
  { name: 'agent_type rare', args: { agent_type: 'cursor' } },
  { name: 'agent_type that never called', args: { agent_type: 'never-called' } },
  { name: 'agent_type that never called, page 2', args: { agent_type: 'never-called' }, page2: true },
  { name: 'verb, page 2', args: { verb: 'charge_invoice' }, page2: true },
  { name: 'limit 200, agent_type that never called', args: { agent_type: 'never-called', limit: 200 } },
  { name: 'limit 1', args: { limit: 1 } },
  { name: 'verb + status', args: { verb: 'email.send', status: 'failed' } },
  { name: 'verb + actor', args: { verb: 'charge_invoice', actor: 7 } },
  { name: 'verb + agent_type never', args: { verb: 'charge_invoice', agent_type: 'never-called' } },
  { name: 'status completed + scope business', args: { status: 'completed', scope: 'business' } },
  { name: 'scope business + agent_type never', args: { scope: 'business', agent_type: 'never-called' } },
  { name: 'verb in one hour', args: { verb: 'deals.create', from: 'MID', to: 'MID+1h' } },
  { name: 'agent_type never in one hour', args: { agent_type: 'never-called', from: 'MID', to: 'MID+1h' } },
  {
    name: 'everything',
    args: {
      verb: 'charge_invoice',
      status: 'completed',
      actor: 6,
      scope: 'business',
      agent_type: 'claude',
      from: 'START',
      to: 'END',
    },
  },
];

function argsFor(log: Log, set: (typeof SETS)[number]): Record<string, unknown> {
  const mid = START_MS + Math.floor(log.rows / 2) * STEP_MS;
  const a: Record<string, unknown> = { limit: 50, ...set.args };
  const at = (v: unknown) =>
    v === 'START'
      ? new Date(START_MS).toISOString()
      : v === 'END'
        ? new Date(START_MS + (log.rows + 10) * STEP_MS).toISOString()
        : v === 'MID'
          ? new Date(mid).toISOString()
          : v === 'MID+1h'
            ? new Date(mid + 3_600_000).toISOString()
            : v;
  if (a.from !== undefined) a.from = at(a.from);
  if (a.to !== undefined) a.to = at(a.to);
  if (a.audit_id === 'MIDID') a.audit_id = log.midId;
  if (set.page2 === true) a.cursor = log.cursors[set.name];
  return a;
}

/** The parts of an audit.trail page the module reads. */
interface TrailPage {
  next_cursor?: string | null;
  stopped_early?: boolean;
}

/** One audit.trail call as a transport makes it: the owner key authenticated on the call. */
async function call(
  log: Log,
  args: Record<string, unknown>,
): Promise<{ env: Envelope & { result: TrailPage }; ms: number; cpuMs: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const env = await dispatchWithKey(log.f.rt, { surface: 'http' }, log.f.ownerKey, 'audit.trail', args);
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  if (!env.ok)
    throw new Error(`audit.trail ${JSON.stringify(args)}: ${env.error?.reason} ${env.error?.message}`);
  return { env: env as Envelope & { result: TrailPage }, ms, cpuMs: (c.user + c.system) / 1000 };
}

/** Run the module: 10k and 1M rows by default (`--quick`: 100k). */
export async function benchTrailFilters(
  options: { small?: number; large?: number; samples?: number } = {},
): Promise<BenchResult[]> {
  const small = options.small ?? 10_000;
  const large = options.large ?? 1_000_000;
  const samples = options.samples ?? 25;
  const logs = [await makeLog(small), await makeLog(large)];
  try {
    for (const log of logs)
      for (const set of SETS.filter((s) => s.page2 === true)) {
        const first = await call(log, argsFor(log, { ...set, page2: false }));
        if (typeof first.env.result.next_cursor !== 'string')
          throw new Error(`${set.name}: the first page has no next_cursor`);
        log.cursors[set.name] = first.env.result.next_cursor;
      }
    await new Promise((r) => setTimeout(r, 1000));
    const loop = monitorEventLoopDelay({ resolution: 1 });
    const per: Array<{
      name: string;
      ms: [number, number];
      wall: [number, number];
      maxCpu: number;
      stopped: boolean;
    }> = [];
    let maxCpu = { ms: 0, set: '' };
    loop.enable();
    for (const set of SETS) {
      const ms: number[][] = [[], []];
      const wall: number[][] = [[], []];
      let cpu = 0;
      let stopped = false;
      for (let i = 0; i < samples + 5; i++) {
        // ABBA: the order of the two sizes flips every sample.
        for (const k of i % 2 === 0 ? [0, 1] : [1, 0]) {
          const r = await call(logs[k]!, argsFor(logs[k]!, set));
          if (i < 5) continue;
          ms[k]!.push(r.cpuMs);
          wall[k]!.push(r.ms);
          if (k === 1) {
            cpu = Math.max(cpu, r.cpuMs);
            stopped ||= r.env.result.stopped_early === true;
          }
        }
      }
      if (cpu > maxCpu.ms) maxCpu = { ms: cpu, set: set.name };
      per.push({
        name: set.name,
        ms: [median(ms[0]!), median(ms[1]!)],
        wall: [median(wall[0]!), median(wall[1]!)],
        maxCpu: cpu,
        stopped,
      });
    }
    loop.disable();
    const ratioOf = (p: (typeof per)[number]) => p.ms[0] / p.ms[1];
    const worst = per.reduce((a, b) => (ratioOf(b) < ratioOf(a) ? b : a));
    const r2 = (x: number) => Math.round(x * 100) / 100;
    const table = per
      .map(
        (p) =>
          `${p.name}: ${r2(p.ms[0])} → ${r2(p.ms[1])} ms (${r2(ratioOf(p))}${p.stopped ? ', stopped early' : ''})`,
      )
      .join('; ');
    return [
      {
        id: 'trail.worst_filter_1m',
        what: `audit.trail (built package, dispatchWithKey: the owner key authenticated per call, 50 per page) over ${SETS.length} filter sets covering every argument the verb accepts: the set that slows most from ${small.toLocaleString('en-US')} to ${large.toLocaleString('en-US')} rows; ratio = median process CPU per call at ${small.toLocaleString('en-US')} ÷ at ${large.toLocaleString('en-US')} (calls per CPU-second at 1M ÷ at 10k)`,
        value: r2(worst.ms[1]),
        baseline: r2(worst.ms[0]),
        ratio: r2(ratioOf(worst)),
        unit: 'ms',
        notes: `worst: ${worst.name}; ${samples} samples per set and size, ABBA; median CPU ms per call, ${small} → ${large} rows (ratio; wall-clock medians): ${table}`,
      },
      {
        id: 'trail.max_call_cpu_1m',
        what: `the most process CPU one audit.trail call took at ${large.toLocaleString('en-US')} rows, over every sample of every filter set (bounds how long a call holds the event loop)`,
        value: r2(maxCpu.ms),
        unit: 'ms',
        notes: `set: ${maxCpu.set}; the event loop's largest delay over the run (wall clock, shared machine): ${r2(loop.max / 1e6)} ms`,
      },
    ];
  } finally {
    for (const log of logs) await log.f.close();
  }
}

// Run directly: node --import tsx bench/trail-filters.ts [large]
if (import.meta.url === `file://${process.argv[1]}`) {
  const large = process.argv[2] === undefined ? undefined : Number(process.argv[2]);
  for (const r of await benchTrailFilters(large === undefined ? {} : { large }))
    console.log(JSON.stringify(r));
}

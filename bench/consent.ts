/**
 * Consent benchmark (issue 3): the cost of the consent gate on a WRITE_FINANCIAL dispatch.
 *
 * - gated: `charge_invoice` (WRITE_FINANCIAL) confirmed with a valid nonce and the typed phrase —
 *   nonce verification (HMAC, constant time), the phrase comparison, the consumption of the
 *   approval row and the nonce burn in the write transaction, then the same execution.
 * - gate disabled: the same handler registered as a twin under another name whose consent is
 *   delegated with no gate (`consentClass: null`, same admin floor), still counted against the
 *   WRITE_FINANCIAL daily cap — the same pipeline (validation, floors, idempotency, one write
 *   transaction, audit row, signed receipt) with the consent step a no-op.
 * - no consent layer: the twin without the daily cap either (a second, informative figure).
 *
 * Preflights are issued before each timed batch (their rate is reported apart: a human takes
 * seconds between the two calls anyway); then the three variants run interleaved, one dispatch
 * each in rotating order, so load spikes and WAL checkpoints hit all alike. Sequential, one SQLite
 * file. The figure is gated ops/s ÷ gate-disabled ops/s (target ≥ 0.8), with the same ratio in
 * process CPU time beside it (robust when other processes share the machine).
 *
 * `node --import tsx bench/consent.ts [batch] [rounds]` prints the result as JSON.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import type { VerbDefinition } from '../src/runtime/verb.ts';
import type { Envelope } from '../src/spec/types.ts';

import { fromDist } from './harness.ts';

const { createRuntime } = await fromDist<typeof import('../src/runtime/runtime.ts')>('runtime/runtime.js');
const { SqliteStore } = await fromDist<typeof import('../src/store/sqlite/sqlite-store.ts')>(
  'store/sqlite/sqlite-store.js',
);
const { defineVerb } = await fromDist<typeof import('../src/runtime/verb.ts')>('runtime/verb.js');
const { formatCents } = await fromDist<typeof import('../src/runtime/consent/typed-phrase.ts')>(
  'runtime/consent/typed-phrase.js',
);

/** Result row (same members as the other bench modules' rows). */
export interface ConsentBenchResult {
  id: 'consent.gate';
  what: string;
  /** Gated confirmations per second (wall clock). */
  value: number;
  /** Same verb with the gate disabled (daily cap still counted), per second. */
  baseline: number;
  /** value / baseline. */
  ratio: number;
  unit: 'ops/s';
  target: 'ratio ≥ 0.8';
  met: boolean;
  /**
   * The same comparison in process CPU time (user + system, all threads) per dispatch:
   * disabled µs / gated µs. Robust when other processes share the machine; wall-clock ratios are not.
   */
  cpu_ratio: number;
  cpu_us_per_op: { gated: number; gate_disabled: number; no_consent_layer: number };
  /** Gated vs the twin with neither gate nor daily cap (the whole consent layer of a confirm call), wall clock and CPU. */
  ratio_vs_no_consent_layer: number;
  cpu_ratio_vs_no_consent_layer: number;
  /** Preflights (dispatch_pending answers: nonce + approval row + audit row) per second, for reference. */
  preflight_ops_per_s: number;
  /** 1-minute load average per CPU during the run (above ~0.5 the wall-clock figures are noisy). */
  load_per_cpu: number;
  notes: string;
}

interface ChargeArgs {
  invoice_id: number;
  amount_cents: number;
}

const charge: VerbDefinition<ChargeArgs> = defineVerb<ChargeArgs>({
  name: 'charge_invoice',
  description: 'Charge an invoice (bench).',
  shape: 'receipt',
  category: 'payments',
  consent: 'WRITE_FINANCIAL',
  input: {
    type: 'object',
    properties: {
      invoice_id: { type: 'integer', minimum: 1 },
      amount_cents: { type: 'integer', minimum: 1 },
    },
    required: ['invoice_id', 'amount_cents'],
    additionalProperties: false,
  },
  phrase: (a) => `CHARGE ${formatCents(a.amount_cents)} to invoice #${a.invoice_id}`,
  async handler(ctx, a) {
    await ctx.db.run('INSERT INTO bench_charges (company_id, invoice_id, amount_cents) VALUES (?, ?, ?)', [
      ctx.principal.company_id,
      a.invoice_id,
      a.amount_cents,
    ]);
    return { status: 'completed', invoice_id: a.invoice_id, amount_cents: a.amount_cents };
  },
});

/**
 * The twin with the gate disabled: same handler and input, consent delegated with no gate, still
 * counted against the WRITE_FINANCIAL daily cap (the cap is not the gate).
 */
const chargeUngated: VerbDefinition<ChargeArgs> = {
  ...charge,
  name: 'bench.charge_invoice_ungated',
  consent: undefined,
  phrase: undefined,
  delegateConsent: async () => ({
    consentClass: null,
    roleFloor: 'admin',
    summary: 'bench',
    capClass: 'WRITE_FINANCIAL',
  }),
};

/** The twin with no consent layer at all: no gate and no daily cap (for the second figure). */
const chargeBare: VerbDefinition<ChargeArgs> = {
  ...chargeUngated,
  name: 'bench.charge_invoice_bare',
  delegateConsent: async () => ({ consentClass: null, roleFloor: 'admin', summary: 'bench' }),
};

function check(env: Envelope, what: string): void {
  if (!env.ok) throw new Error(`${what}: ${JSON.stringify(env.error)}`);
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** Wall and CPU time spent in one variant's dispatches. */
class Meter {
  wallMs = 0;
  cpuUs = 0;
  n = 0;
  async time(fn: () => Promise<void>): Promise<void> {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await fn();
    this.wallMs += performance.now() - t0;
    const c = process.cpuUsage(c0);
    this.cpuUs += c.user + c.system;
    this.n++;
  }
  get rate(): number {
    return (this.n * 1000) / this.wallMs;
  }
  get cpuPerOp(): number {
    return this.cpuUs / this.n;
  }
}

/**
 * Measure the gate. Each round issues `batch` preflights (untimed), then times `batch` triples of
 * dispatches — one gated confirmation, one with the gate disabled, one with no consent layer — in
 * rotating order, so a load spike or a WAL checkpoint lands on all three alike. Defaults: 8 rounds
 * of 250. Returns ops/s and CPU µs of the variants and their ratios; throws if any dispatch fails.
 */
export async function benchConsent(
  options: { batch?: number; rounds?: number } = {},
): Promise<ConsentBenchResult> {
  const batch = options.batch ?? 250;
  const rounds = options.rounds ?? 8;
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-consent-'));
  const store = new SqliteStore({ path: join(dir, 'bench.db') });
  const rt = await createRuntime({
    store,
    logger: pino({ level: 'silent' }),
    sandboxCompanyId: 1,
    maintenanceIntervalMs: 0,
  });
  try {
    await store.migrate('bench-consent', [
      {
        version: 1,
        name: 'charges',
        sqlite:
          'CREATE TABLE bench_charges (id INTEGER PRIMARY KEY, company_id INTEGER NOT NULL, invoice_id INTEGER NOT NULL, amount_cents INTEGER NOT NULL)',
      },
    ]);
    await rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
    await rt.createTenant({
      company_id: 2,
      name: 'Bench',
      tier: 'enterprise',
      // phrase_channel any (an explicit owner choice): the key's own confirm carries the typed
      // phrase, so one call pays the whole gate (nonce verify, phrase compare, approval burn).
      // Under the default (human) the phrase comes from a signed-in human on the approval page.
      settings: { caps: { WRITE_FINANCIAL: 1_000_000_000 }, phrase_channel: 'any' },
    });
    const key = await rt.createApiKey({ company_id: 2, user_id: 1, role: 'admin', agent_type: 'bench' });
    const caller = { surface: 'http' as const, principal: await rt.tenants.authenticate(key) };
    rt.register(charge, chargeUngated, chargeBare);
    let invoice = 0;
    const nextArgs = (): ChargeArgs => ({ invoice_id: ++invoice, amount_cents: 5000 + (invoice % 100) });
    const preflight = async () => {
      const args = nextArgs();
      const env = await rt.dispatch(caller, 'charge_invoice', args);
      if (env.error?.reason !== 'dispatch_pending' || env.consent === undefined)
        throw new Error(`preflight: ${JSON.stringify(env.error)}`);
      return { args, nonce: env.consent.nonce, phrase: env.consent.typed_phrase! };
    };
    // Let the work queued by the preflights finish (audit checkpoints, observers) and checkpoint
    // the WAL, so their pages are not written back during the timed dispatches.
    const settle = async () => {
      await rt.auditBuffer.flush();
      await new Promise((r) => setTimeout(r, 50));
      store.rawDatabase.pragma('wal_checkpoint(TRUNCATE)');
    };

    // warm-up of every path (JIT, prepared statements, signing key cache)
    for (let i = 0; i < 100; i++) {
      const p = await preflight();
      check(
        await rt.dispatch(caller, 'charge_invoice', p.args, {
          confirm: true,
          nonce: p.nonce,
          typed_phrase: p.phrase,
        }),
        'warm-up',
      );
      check(await rt.dispatch(caller, 'bench.charge_invoice_ungated', nextArgs()), 'warm-up');
      check(await rt.dispatch(caller, 'bench.charge_invoice_bare', nextArgs()), 'warm-up');
    }

    const gated = new Meter();
    const disabled = new Meter();
    const bare = new Meter();
    const pre = new Meter();
    for (let r = 0; r < rounds; r++) {
      const pending: Array<Awaited<ReturnType<typeof preflight>>> = [];
      for (let i = 0; i < batch; i++) await pre.time(async () => void pending.push(await preflight()));
      await settle();
      for (let i = 0; i < batch; i++) {
        const p = pending[i]!;
        const steps = [
          () =>
            gated.time(async () =>
              check(
                await rt.dispatch(caller, 'charge_invoice', p.args, {
                  confirm: true,
                  nonce: p.nonce,
                  typed_phrase: p.phrase,
                }),
                'gated',
              ),
            ),
          () =>
            disabled.time(async () =>
              check(await rt.dispatch(caller, 'bench.charge_invoice_ungated', nextArgs()), 'gate disabled'),
            ),
          () =>
            bare.time(async () =>
              check(await rt.dispatch(caller, 'bench.charge_invoice_bare', nextArgs()), 'no consent layer'),
            ),
        ];
        for (let k = 0; k < 3; k++) await steps[(k + i) % 3]!();
      }
    }
    const load = loadavg()[0]! / Math.max(1, availableParallelism());
    const ratio = gated.rate / disabled.rate;
    const cpuRatio = disabled.cpuPerOp / gated.cpuPerOp;
    return {
      id: 'consent.gate',
      what: 'WRITE_FINANCIAL dispatch confirmed with a valid nonce and typed phrase, vs the same handler with the consent gate disabled',
      value: Math.round(gated.rate),
      baseline: Math.round(disabled.rate),
      ratio: round3(ratio),
      unit: 'ops/s',
      target: 'ratio ≥ 0.8',
      met: ratio >= 0.8,
      cpu_ratio: round3(cpuRatio),
      cpu_us_per_op: {
        gated: Math.round(gated.cpuPerOp),
        gate_disabled: Math.round(disabled.cpuPerOp),
        no_consent_layer: Math.round(bare.cpuPerOp),
      },
      ratio_vs_no_consent_layer: round3(gated.rate / bare.rate),
      cpu_ratio_vs_no_consent_layer: round3(bare.cpuPerOp / gated.cpuPerOp),
      preflight_ops_per_s: Math.round(pre.rate),
      load_per_cpu: Math.round(load * 100) / 100,
      notes: `sequential dispatches on SQLite (WAL, synchronous=NORMAL), ${rounds} rounds of ${batch} interleaved triples (gated / gate disabled / no consent layer). Gate = nonce HMAC verify, phrase compare, single-use burn of the approval row in the write transaction; the gate-disabled twin still counts the daily cap, the no-consent-layer twin does not.`,
    };
  } finally {
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [batch, rounds] = process.argv.slice(2).map(Number);
  console.log(
    JSON.stringify(await benchConsent({ batch: batch || undefined, rounds: rounds || undefined }), null, 2),
  );
}

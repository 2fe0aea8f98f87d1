/**
 * UCP benchmark (issue 9): what RFC 9421 verification costs inside a UCP capability call. The
 * business is createHttpServer + the UCP plugin on a temp SQLite runtime; the platform's profile
 * is served on loopback and cached after the first call (as in production, ≥ 60 s). Each request
 * is freshly signed by the platform (replays are refused), then sent with Fastify's inject() so
 * no socket noise enters the figures; signing happens outside the measured handling.
 *
 * The plugin reports per call (UcpTimings): verify_ms (Signature-Input/Signature and UCP-Agent
 * parsing, coverage, key lookup, Content-Digest over the raw body, ES256 raw r‖s verify, replay
 * check), dispatch_ms (body parse + the pipeline), sign_ms (answer digest + ES256 signature),
 * total_ms (the route). Figures: verification as a share of the route's time, and of the whole
 * request as inject() measures it, for three capabilities: a minimal read (contact search by
 * name: one indexed query), a read of the demo business (customer.full_context on the seeded
 * demo pack), and a WRITE_REVERSIBLE capability whose consent the signature implies (preflight
 * + confirm, signed receipt). The figure is the median of the per-call shares (an audit-buffer
 * flush landing inside an await would otherwise be charged to whichever step was waiting).
 * Target: verification ≤ 20 % of a UCP dispatch's time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import type { KeyObject } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import type { Runtime } from '../src/runtime/runtime.ts';
import type { DemoSeedFacts } from '../src/business/pack.ts';
import type { UcpTimings } from '../src/transports/ucp/ucp-plugin.ts';
import type { ReplayGuard } from '../src/transports/ucp/replay-cache.ts';
import { median, percentile, type BenchResult, fromDist } from './harness.ts';

const { createRuntime } = await fromDist<typeof import('../src/runtime/runtime.ts')>('runtime/runtime.js');
const { systemVerbs } = await fromDist<typeof import('../src/verbs/index.ts')>('verbs/index.js');
const { defineReasons } = await fromDist<typeof import('../src/spec/reasons.ts')>('spec/reasons.js');
const { DEMO_TENANTS, demoPack } =
  await fromDist<typeof import('../src/business/pack.ts')>('business/pack.js');
const { SqliteStore } = await fromDist<typeof import('../src/store/sqlite/sqlite-store.ts')>(
  'store/sqlite/sqlite-store.js',
);
const { defineVerb } = await fromDist<typeof import('../src/runtime/verb.ts')>('runtime/verb.js');
const { createHttpServer } =
  await fromDist<typeof import('../src/transports/http/server.ts')>('transports/http/server.js');
const { createUcpPlugin } = await fromDist<typeof import('../src/transports/ucp/ucp-plugin.ts')>(
  'transports/ucp/ucp-plugin.js',
);
const { ReplayCache } = await fromDist<typeof import('../src/transports/ucp/replay-cache.ts')>(
  'transports/ucp/replay-cache.js',
);
const { exportPublicJwk } =
  await fromDist<typeof import('../src/transports/ucp/jwk.ts')>('transports/ucp/jwk.js');
const { signRequest } = await fromDist<typeof import('../src/transports/ucp/ucp-client.ts')>(
  'transports/ucp/ucp-client.js',
);
const { generateP256KeyObjects } = await fromDist<typeof import('../src/runtime/ledger/keys/keygen.ts')>(
  'runtime/ledger/keys/keygen.js',
);

export interface UcpBenchOptions {
  /** Measured calls per workload (default 2000). */
  requests?: number;
  /** Unmeasured calls first (default 200). */
  warmup?: number;
}

interface Sample {
  t: UcpTimings;
  wallMs: number;
}

function summarize(id: string, what: string, samples: Sample[]): BenchResult {
  const verify = samples.map((s) => s.t.verify_ms).sort((a, b) => a - b);
  const total = samples.map((s) => s.t.total_ms).sort((a, b) => a - b);
  const shareRoute = median(samples.map((s) => (100 * s.t.verify_ms) / s.t.total_ms));
  const shareWall = median(samples.map((s) => (100 * s.t.verify_ms) / s.wallMs));
  const us = (ms: number) => Math.round(ms * 1000);
  return {
    id,
    what,
    value: Number(shareRoute.toFixed(1)),
    unit: '% of the route time spent verifying (median per call)',
    target: 'verification ≤ 20 % of a UCP dispatch',
    met: shareRoute <= 20,
    notes:
      `${samples.length} calls; verify median ${us(median(verify))} µs (p95 ${us(percentile(verify, 95))}), ` +
      `dispatch median ${us(median(samples.map((s) => s.t.dispatch_ms)))} µs, sign median ${us(median(samples.map((s) => s.t.sign_ms)))} µs, ` +
      `route median ${us(median(total))} µs, whole request (inject) median ${us(median(samples.map((s) => s.wallMs)))} µs; ` +
      `verification = ${shareWall.toFixed(1)} % of the whole request`,
  };
}

export interface Business {
  rt: Runtime;
  app: FastifyInstance;
  /** Take one call's timings (set by the plugin's onTimings). */
  take(): UcpTimings | undefined;
  close(): Promise<void>;
}

/** A UCP server (inject only) on `rt`, trusting the bench platform with employee / WRITE_REVERSIBLE. */
export async function serve(
  rt: Runtime,
  companyId: number,
  profileUrl: string,
  replay?: ReplayGuard,
): Promise<Business> {
  let current: UcpTimings | undefined;
  await rt.store.write((tx) =>
    tx.run('UPDATE tenants SET settings = ? WHERE company_id = ?', [
      JSON.stringify({
        caps: { WRITE_REVERSIBLE: 1_000_000 },
        ucp: { platforms: [{ profile: profileUrl, role: 'employee', max_class: 'WRITE_REVERSIBLE' }] },
      }),
      companyId,
    ]),
  );
  rt.tenants.invalidate();
  const app = createHttpServer(rt, {
    logger: false,
    plugins: [
      createUcpPlugin({
        dev: true,
        primaryTenant: companyId,
        defaultNamespace: 'com.example',
        onTimings: (t) => (current = t),
        ...(replay !== undefined ? { replay } : {}),
      }),
    ],
  });
  await app.ready();
  return {
    rt,
    app,
    take() {
      const t = current;
      current = undefined;
      return t;
    },
    close: () => app.close(),
  };
}

/** The bench platform: a P-256 key and its UCP profile served on loopback (cacheable). */
export async function startPlatform(): Promise<{
  privateKey: KeyObject;
  kid: string;
  profileUrl: string;
  close(): Promise<void>;
}> {
  const { privateKey } = generateP256KeyObjects();
  const kid = 'bench-platform';
  const platformServer = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=3600' });
    res.end(
      JSON.stringify({
        ucp: { version: '2026-08-25', services: {}, capabilities: {}, payment_handlers: {} },
        keys: [exportPublicJwk(privateKey, kid)],
      }),
    );
  });
  await new Promise<void>((r) => platformServer.listen(0, '127.0.0.1', r));
  return {
    privateKey,
    kid,
    profileUrl: `http://127.0.0.1:${(platformServer.address() as AddressInfo).port}/.well-known/ucp`,
    close: () => new Promise<void>((r) => platformServer.close(() => r())),
  };
}

/**
 * The minimal business of ucp.verify_share_read / _write: a runtime on a SQLite file at `path`
 * with 200 contacts of company 2 and the verbs contacts.search (read) and contacts_rename
 * (WRITE_REVERSIBLE).
 */
export async function minimalUcpRuntime(path: string, logger: pino.Logger): Promise<Runtime> {
  const store = new SqliteStore({ path });
  const rt = await createRuntime({ store, logger, sandboxCompanyId: 1, maintenanceIntervalMs: 0 });
  await store.migrate('bench-ucp', [
    {
      version: 1,
      name: 'contacts',
      sqlite:
        'CREATE TABLE contacts (id INTEGER PRIMARY KEY, company_id INTEGER NOT NULL, name TEXT, email TEXT); CREATE INDEX contacts_company ON contacts(company_id, name);',
    },
  ]);
  await rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
  await rt.createTenant({ company_id: 2, name: 'Bench', tier: 'enterprise' });
  await store.write(async (tx) => {
    for (let i = 1; i <= 200; i++)
      await tx.run('INSERT INTO contacts (id, company_id, name, email) VALUES (?, 2, ?, ?)', [
        i,
        `Contact ${i} ${['Smith', 'Jones', 'Garcia', 'Lee'][i % 4]}`,
        `c${i}@example.com`,
      ]);
  });
  rt.register(
    defineVerb({
      name: 'contacts.search',
      description: 'Search contacts.',
      shape: 'aggregate',
      category: 'crm',
      input: {
        type: 'object',
        properties: { q: { type: 'string' } },
        required: ['q'],
        additionalProperties: false,
      },
      async handler(ctx, a: { q: string }) {
        const rows = await ctx.db.all(
          'SELECT id, name, email FROM contacts WHERE company_id = ? AND lower(name) LIKE lower(?) ORDER BY name LIMIT 20',
          [ctx.principal.company_id, `%${a.q}%`],
        );
        return { entity_id: ctx.principal.company_id, data: { matches: rows.length, contacts: rows } };
      },
    }),
    defineVerb({
      name: 'contacts_rename',
      description: 'Rename a contact.',
      shape: 'receipt',
      category: 'crm',
      consent: 'WRITE_REVERSIBLE',
      input: {
        type: 'object',
        properties: { id: { type: 'integer' }, name: { type: 'string' } },
        required: ['id', 'name'],
        additionalProperties: false,
      },
      async handler(ctx, a: { id: number; name: string }) {
        const before = await ctx.db.get<{ name: string }>(
          'SELECT name FROM contacts WHERE id = ? AND company_id = ?',
          [a.id, ctx.principal.company_id],
        );
        await ctx.db.run('UPDATE contacts SET name = ? WHERE id = ? AND company_id = ?', [
          a.name,
          a.id,
          ctx.principal.company_id,
        ]);
        ctx.setRollback(`contacts:rename:${a.id}`, { id: a.id, name: before?.name ?? null });
        return { contact_id: a.id };
      },
    }),
  );
  return rt;
}

/** Run the UCP benchmark; returns ucp.verify_share_read, ucp.verify_share_demo_read, ucp.replay_guard, ucp.verify_share_write. */
export async function benchUcp(options: UcpBenchOptions = {}): Promise<BenchResult[]> {
  const requests = options.requests ?? 2000;
  const warmup = options.warmup ?? 200;
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-ucp-'));
  const logger = pino({ level: process.env.SOLID_BENCH_LOG ?? 'silent' });
  const open: Array<{ close(): Promise<void> }> = [];
  const platform = await startPlatform();
  const { privateKey, kid, profileUrl } = platform;
  try {
    let n = 0;
    const call = async (b: Business, capability: string, body: object): Promise<Sample> => {
      const url = `http://localhost:80/ucp/v1/capabilities/${capability}`;
      const signed = signRequest({
        url,
        body,
        profileUrl,
        keyid: kid,
        privateKey,
        idempotencyKey: `bench-${++n}`,
        created: Math.floor(b.rt.clock().getTime() / 1000),
      });
      b.take();
      const t0 = performance.now();
      const res = await b.app.inject({
        method: 'POST',
        url: `/ucp/v1/capabilities/${capability}`,
        headers: { ...signed.headers, host: 'localhost:80' },
        payload: signed.body!,
      });
      const wallMs = performance.now() - t0;
      const t = b.take();
      if (res.statusCode !== 200 || t === undefined)
        throw new Error(`bench call ${capability} answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
      return { t, wallMs };
    };
    const run = async (b: Business, capability: string, body: (i: number) => object) => {
      for (let i = 0; i < warmup; i++) await call(b, capability, body(i));
      const samples: Sample[] = [];
      for (let i = 0; i < requests; i++) samples.push(await call(b, capability, body(i)));
      return samples;
    };

    // 1. A minimal runtime: contact search (read) and rename (WRITE_REVERSIBLE).
    const rt = await minimalUcpRuntime(join(dir, 'bench.db'), logger);
    open.push(rt);
    const bench = await serve(rt, 2, profileUrl);
    open.unshift(bench);
    const read = await run(bench, 'com.example.sales.contacts_search', () => ({ q: 'smith' }));
    // The same read with the in-memory replay cache instead of the store-backed guard (the default):
    // what remembering each signature in the database costs, alternating blocks of 250 calls.
    const inMemory = await serve(rt, 2, profileUrl, new ReplayCache());
    open.unshift(inMemory);
    const guardStore: Sample[] = [];
    const guardMemory: Sample[] = [];
    for (let block = 0; block < 8; block++) {
      for (let i = 0; i < 250; i++)
        guardStore.push(await call(bench, 'com.example.sales.contacts_search', { q: 'smith' }));
      for (let i = 0; i < 250; i++)
        guardMemory.push(await call(inMemory, 'com.example.sales.contacts_search', { q: 'smith' }));
    }
    const verifyUs = (xs: Sample[]) => Math.round(median(xs.map((x) => x.t.verify_ms)) * 1000);
    const write = await run(bench, 'com.example.sales.contacts_rename', (i) => ({
      id: 1 + (i % 200),
      name: `Renamed ${i}`,
    }));

    // 2. The seeded demo business: customer.full_context.
    const demoRt = await createRuntime({
      store: new SqliteStore({ path: join(dir, 'demo.db') }),
      logger,
      sandboxCompanyId: DEMO_TENANTS.sandbox.company_id,
      maintenanceIntervalMs: 0,
    });
    open.push(demoRt);
    demoRt.register(...systemVerbs);
    await demoRt.store.migrate(demoPack.name, demoPack.migrations);
    if (demoPack.reasons) defineReasons(demoPack.reasons);
    demoRt.register(...demoPack.verbs);
    const facts = (await demoPack.seed!(demoRt, {})) as DemoSeedFacts;
    await demoRt.auditBuffer.flush();
    const demo = await serve(demoRt, DEMO_TENANTS.main.company_id, profileUrl);
    open.unshift(demo);
    const demoRead = await run(demo, 'com.example.sales.customer_full_context', () => ({
      customer_id: facts.fixtures!.customer_id,
    }));

    return [
      summarize(
        'ucp.verify_share_read',
        'Signed UCP call of a minimal read capability (contact search, one indexed query): RFC 9421 verification as a share of the route (verify + dispatch + signed answer), in-process inject, profile cached',
        read,
      ),
      summarize(
        'ucp.verify_share_demo_read',
        'Signed UCP call of customer.full_context on the seeded demo business: verification as a share of the route',
        demoRead,
      ),
      {
        id: 'ucp.replay_guard',
        what: 'verification median (µs) of the signed minimal read with the store-backed replay guard (default: one INSERT … ON CONFLICT per request, shared by every node) vs the in-memory ReplayCache',
        value: verifyUs(guardStore),
        unit: 'µs',
        baseline: verifyUs(guardMemory),
        ratio: Number((verifyUs(guardStore) / verifyUs(guardMemory)).toFixed(2)),
        notes: `8 alternating blocks of 250 calls each; route median ${Math.round(median(guardStore.map((x) => x.t.total_ms)) * 1000)} µs vs ${Math.round(median(guardMemory.map((x) => x.t.total_ms)) * 1000)} µs`,
      },
      summarize(
        'ucp.verify_share_write',
        'Signed UCP call of a WRITE_REVERSIBLE capability with consent implied by the signature (preflight + confirm, signed receipt): verification as a share of the route',
        write,
      ),
    ];
  } finally {
    for (const o of open) await o.close().catch(() => {});
    await platform.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await benchUcp(), null, 2));
}

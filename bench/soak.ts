/**
 * Soak (issue 11; not part of the test suite): a bounded load on a real `solid serve --demo`
 * process over loopback, mixing across two tenants (the demo business, company 2, and the second
 * business, company 3):
 *
 *   HTTP  reads (contact search, customer.full_context, deals.search, audit.trail, the manifest),
 *         confirmed WRITE_REVERSIBLE writes (crm.add_note: pending → confirm, Idempotency-Key),
 *         typed-phrase confirmations (infrastructure_scale_workers, WRITE_FINANCIAL, company 2's
 *         admin), replays of earlier confirmations (same key → the stored receipt), and invalid
 *         calls (bad arguments, unknown verb, bad API key, forged nonce, wrong phrase);
 *   MCP   Streamable HTTP sessions (SDK Client): reads, `_meta` confirmations, typed phrases
 *         answered through form elicitation; each session is replaced every 100 calls, half of
 *         them closed (DELETE) and half abandoned (the server's bound and idle expiry must cope).
 *
 * Both tenants' daily caps are raised first (by the operator, in the file), so refusals come from the mix, not
 * from the caps. The server's RSS (/proc/<pid>/status) is sampled every second. Reported:
 * throughput, p50/p95/p99 latency per operation, outcomes by reason (expected refusals apart from
 * unexpected ones), and RSS: after warm-up, at the end, peak, and the slope over the second half
 * (MiB/min) — bounded memory shows a slope near zero.
 *
 *   node --import tsx bench/soak.ts [--seconds 60] [--http 6] [--mcp 2] [--write]
 *
 * `--write` puts the summary into BENCHMARKS.md (between the soak markers).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ElicitRequestSchema,
  type CallToolResult,
  type ElicitRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { META } from '../src/transports/mcp/meta-keys.ts';
import { errorEnvelopeOf } from '../src/transports/mcp/envelope-map.ts';
import { raiseCaps, rssMiB, startServe, stopServe } from './serve-rss.ts';
import { percentile } from './harness.ts';

export interface SoakOptions {
  /** Measured seconds (default 60). */
  seconds?: number;
  /** Warm-up seconds before the RSS baseline (default 5). */
  warmupSeconds?: number;
  /** Concurrent HTTP clients (default 6). */
  http?: number;
  /** Concurrent MCP sessions (default 2). */
  mcp?: number;
  /** `solid serve --durability` (default normal). */
  durability?: 'normal' | 'full';
}

type Envelope = {
  ok: boolean;
  error?: { reason: string };
  consent?: { nonce: string; typed_phrase?: string };
  audit_id?: number;
  replayed?: boolean;
  result?: Record<string, unknown>;
};

interface Tenant {
  company: number;
  key: string;
  contactId: number;
}

/** Per-operation statistics. */
interface OpStats {
  latencies: number[];
  outcomes: Map<string, number>;
}

export interface SoakReport {
  seconds: number;
  ops: number;
  ops_per_second: number;
  /** Per operation: count, latency percentiles (ms), outcomes (ok or reason → count). */
  operations: Record<
    string,
    { count: number; p50: number; p95: number; p99: number; outcomes: Record<string, number> }
  >;
  /** Outcomes that are neither ok nor the refusal the operation provokes on purpose. */
  unexpected: Record<string, number>;
  rss: {
    after_warmup: number;
    end: number;
    peak: number;
    slope_mib_per_min: number;
    samples: number;
    every_10s: number[];
  };
  machine: string;
  load: [number, number];
  durability: string;
}

/** The refusals each deliberately invalid operation must get. */
const EXPECTED: Record<string, string[]> = {
  'http.invalid_args': ['invalid_input'],
  'http.unknown_verb': ['unknown_verb'],
  'http.bad_key': ['auth_invalid'],
  'http.forged_nonce': ['nonce_invalid'],
  // Its preflight is refused the same way when the worker count is already at a limit.
  'http.wrong_phrase': ['phrase_mismatch', 'workers_out_of_range'],
  // Scaling by ±1 under concurrency may leave the allowed range; a domain refusal, not a fault.
  'http.typed_phrase': ['workers_out_of_range'],
  'mcp.typed_phrase': ['workers_out_of_range'],
};

class Recorder {
  readonly ops = new Map<string, OpStats>();
  counting = false;
  async time<T extends { outcome: string }>(name: string, fn: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    let r: T;
    try {
      r = await fn();
    } catch (err) {
      r = { outcome: `exception: ${(err as Error).message.slice(0, 80)}` } as T;
    }
    if (this.counting) {
      let s = this.ops.get(name);
      if (s === undefined) this.ops.set(name, (s = { latencies: [], outcomes: new Map() }));
      s.latencies.push(performance.now() - t0);
      s.outcomes.set(r.outcome, (s.outcomes.get(r.outcome) ?? 0) + 1);
    }
    return r;
  }
}

const outcomeOf = (env: Envelope) => (env.ok ? 'ok' : (env.error?.reason ?? 'no reason'));

async function post(
  base: string,
  verb: string,
  body: Record<string, unknown>,
  key?: string,
  idem?: string,
): Promise<Envelope> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
  if (idem !== undefined) headers['idempotency-key'] = idem;
  const res = await fetch(`${base}/api/v1/agent/dispatch/${verb}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
  });
  return (await res.json()) as Envelope;
}

/** Pending → confirm, like a human who agrees (typed phrase when the gate asks for one). */
async function consented(
  base: string,
  verb: string,
  args: Record<string, unknown>,
  key: string,
  idem?: string,
): Promise<{ env: Envelope; confirm?: Record<string, unknown> }> {
  const pending = await post(base, verb, { args }, key);
  if (pending.error?.reason !== 'dispatch_pending' || pending.consent === undefined) return { env: pending };
  const confirm: Record<string, unknown> = { args, confirm: true, nonce: pending.consent.nonce };
  if (pending.consent.typed_phrase !== undefined) confirm.typed_phrase = pending.consent.typed_phrase;
  return { env: await post(base, verb, confirm, key, idem), confirm };
}

function pick<T>(weighted: Array<[number, T]>): T {
  const total = weighted.reduce((s, [w]) => s + w, 0);
  let r = Math.random() * total;
  for (const [w, v] of weighted) if ((r -= w) < 0) return v;
  return weighted[weighted.length - 1]![1];
}

let seq = 0;

function httpWorker(
  base: string,
  tenants: Tenant[],
  adminKey: string,
  rec: Recorder,
  until: () => boolean,
): Promise<void> {
  const replays: Array<{ verb: string; body: Record<string, unknown>; key: string; idem: string }> = [];
  const ops: Array<[number, () => Promise<unknown>]> = [
    [
      14,
      () =>
        rec.time('http.read_search', async () => ({
          outcome: outcomeOf(await post(base, 'crm_contacts_search', { args: { query: 'a' } }, tenant().key)),
        })),
    ],
    [
      10,
      () =>
        rec.time('http.read_full_context', async () => {
          const t = tenant();
          return {
            outcome: outcomeOf(
              await post(base, 'customer.full_context', { args: { customer_id: t.contactId } }, t.key),
            ),
          };
        }),
    ],
    [
      8,
      () =>
        rec.time('http.read_deals', async () => ({
          outcome: outcomeOf(await post(base, 'deals.search', { args: {} }, tenant().key)),
        })),
    ],
    [
      6,
      () =>
        rec.time('http.read_trail', async () => ({
          outcome: outcomeOf(await post(base, 'audit.trail', { args: { limit: 20 } }, tenant().key)),
        })),
    ],
    [
      4,
      () =>
        rec.time('http.manifest', async () => {
          const r = await fetch(`${base}/api/v1/agent/verbs`, {
            headers: { authorization: `Bearer ${tenant().key}` },
          });
          await r.arrayBuffer();
          return { outcome: r.status === 200 ? 'ok' : `http ${r.status}` };
        }),
    ],
    [
      10,
      () =>
        rec.time('http.write', async () => {
          const t = tenant();
          const idem = `soak-${process.pid}-${++seq}`;
          const { env, confirm } = await consented(
            base,
            'crm.add_note',
            { contact_id: t.contactId, body: `soak note ${seq}` },
            t.key,
            idem,
          );
          if (env.ok && confirm !== undefined && replays.length < 200)
            replays.push({ verb: 'crm.add_note', body: confirm, key: t.key, idem });
          return { outcome: outcomeOf(env) };
        }),
    ],
    [
      4,
      () =>
        rec.time('http.typed_phrase', async () => ({
          outcome: outcomeOf(
            (
              await consented(
                base,
                'infrastructure_scale_workers',
                { delta: Math.random() < 0.5 ? 1 : -1 },
                adminKey,
              )
            ).env,
          ),
        })),
    ],
    [
      6,
      () =>
        rec.time('http.replay', async () => {
          const r = replays[Math.floor(Math.random() * replays.length)];
          if (r === undefined) return { outcome: 'ok' };
          const env = await post(base, r.verb, r.body, r.key, r.idem);
          return {
            outcome: env.ok && env.replayed === true ? 'ok' : env.ok ? 'not replayed' : outcomeOf(env),
          };
        }),
    ],
    [
      2,
      () =>
        rec.time('http.invalid_args', async () => ({
          outcome: outcomeOf(
            await post(base, 'crm.add_note', { args: { contact_id: 'x', body: 1 } }, tenant().key),
          ),
        })),
    ],
    [
      2,
      () =>
        rec.time('http.unknown_verb', async () => ({
          outcome: outcomeOf(await post(base, `crm.no_such_verb_${seq % 50}`, { args: {} }, tenant().key)),
        })),
    ],
    [
      2,
      () =>
        rec.time('http.bad_key', async () => ({
          outcome: outcomeOf(
            await post(
              base,
              'crm_contacts_search',
              { args: {} },
              'sk_solid_000000000000_notarealkeynotarealkeynotarealkey',
            ),
          ),
        })),
    ],
    [
      2,
      () =>
        rec.time('http.forged_nonce', async () => {
          const t = tenant();
          return {
            outcome: outcomeOf(
              await post(
                base,
                'crm.add_note',
                {
                  args: { contact_id: t.contactId, body: 'forged' },
                  confirm: true,
                  nonce: 'v1.forged.nonce',
                },
                t.key,
              ),
            ),
          };
        }),
    ],
    [
      2,
      () =>
        rec.time('http.wrong_phrase', async () => {
          const args = { delta: 1 };
          const pending = await post(base, 'infrastructure_scale_workers', { args }, adminKey);
          if (pending.consent === undefined) return { outcome: outcomeOf(pending) };
          return {
            outcome: outcomeOf(
              await post(
                base,
                'infrastructure_scale_workers',
                {
                  args,
                  confirm: true,
                  nonce: pending.consent.nonce,
                  typed_phrase: 'scale celery workers by +1',
                },
                adminKey,
              ),
            ),
          };
        }),
    ],
  ];
  const tenant = () => tenants[Math.random() < 0.6 ? 0 : 1]!;
  return (async () => {
    while (!until()) await pick(ops)();
  })();
}

async function mcpSession(
  url: URL,
  key: string,
  elicit: boolean,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  const client = new Client(
    { name: 'soak', version: '1.0.0' },
    { capabilities: elicit ? { elicitation: { form: {} } } : {} },
  );
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (req: ElicitRequest) => {
      const d =
        (req.params as { requestedSchema?: { properties?: Record<string, { description?: string }> } })
          .requestedSchema?.properties?.typed_phrase?.description ?? '';
      return { action: 'accept', content: { typed_phrase: d.replace(/^Type exactly: /, '') } };
    });
  }
  await client.connect(transport);
  return { client, transport };
}

function mcpWorker(
  base: string,
  tenant: Tenant,
  adminKey: string,
  rec: Recorder,
  until: () => boolean,
  index: number,
): Promise<void> {
  const url = new URL(`${base}/mcp`);
  const useAdmin = index % 2 === 0; // the admin session can confirm typed phrases
  const key = useAdmin ? adminKey : tenant.key;
  return (async () => {
    let s = await mcpSession(url, key, useAdmin);
    let calls = 0;
    let sessions = 0;
    const call = async (name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) =>
      (await s.client.callTool({
        name,
        arguments: args,
        ...(meta ? { _meta: meta } : {}),
      })) as CallToolResult;
    const result = (r: CallToolResult) => (r.isError ? (errorEnvelopeOf(r)?.error?.reason ?? 'error') : 'ok');
    while (!until()) {
      if (++calls % 100 === 0) {
        // Replace the session: close half of them properly, abandon the others.
        if (++sessions % 2 === 0) await s.transport.terminateSession().catch(() => {});
        await s.client.close().catch(() => {});
        let next: typeof s | undefined;
        await rec.time('mcp.new_session', async () => {
          next = await mcpSession(url, key, useAdmin);
          return { outcome: 'ok' };
        });
        if (next === undefined) return; // the server is gone
        s = next;
      }
      await pick<() => Promise<unknown>>([
        [
          10,
          () =>
            rec.time('mcp.read', async () => ({
              outcome: result(await call('crm_contacts_search', { query: 'e' })),
            })),
        ],
        [
          4,
          () =>
            rec.time('mcp.write', async () => {
              const args = { contact_id: tenant.contactId, body: `soak mcp note ${++seq}` };
              const first = await call('crm__add_note', args);
              const env = errorEnvelopeOf(first);
              if (env?.error?.reason !== 'dispatch_pending' || env.consent === undefined)
                return { outcome: result(first) };
              return {
                outcome: result(
                  await call('crm__add_note', args, {
                    [META.confirm]: true,
                    [META.nonce]: env.consent.nonce,
                    [META.idempotencyKey]: `soak-mcp-${process.pid}-${seq}`,
                  }),
                ),
              };
            }),
        ],
        [
          useAdmin ? 2 : 0,
          () =>
            rec.time('mcp.typed_phrase', async () => ({
              outcome: result(
                await call('infrastructure_scale_workers', { delta: Math.random() < 0.5 ? 1 : -1 }),
              ),
            })),
        ],
      ])();
    }
    await s.transport.terminateSession().catch(() => {});
    await s.client.close().catch(() => {});
  })();
}

/** Least-squares slope of (t seconds, y) in y-units per minute. */
function slopePerMinute(points: Array<[number, number]>): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, p) => s + p[0], 0) / n;
  const my = points.reduce((s, p) => s + p[1], 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : (num / den) * 60;
}

/** Run the soak; returns its report. */
export async function runSoak(options: SoakOptions = {}): Promise<SoakReport> {
  const seconds = options.seconds ?? 60;
  const warmup = options.warmupSeconds ?? 5;
  const durability = options.durability ?? 'normal';
  const dir = mkdtempSync(join(tmpdir(), 'solid-soak-'));
  const load0 = loadavg()[0]!;
  const served = await startServe(join(dir, 'soak.db'), ['--demo', '--durability', durability]);
  try {
    const out = await readyOutput(served);
    const keys = JSON.parse(/^\s+keys: (.*)$/m.exec(out)![1]!) as Record<string, string>;
    const secondKey = /^\s+second_business_owner_key: (\S+)$/m.exec(out)![1]!;
    const fixtures = JSON.parse(/^\s+fixtures: (.*)$/m.exec(out)![1]!) as { customer_id: number };
    const base = served.base;
    const second = await post(base, 'crm_contacts_search', { args: {} }, secondKey);
    const secondContact = ((second.result as { data?: { items?: Array<{ id: number }> } } | undefined)?.data
      ?.items ?? [])[0]?.id;
    if (secondContact === undefined)
      throw new Error(`no contact in the second business: ${JSON.stringify(second).slice(0, 300)}`);
    const tenants: Tenant[] = [
      { company: 2, key: keys.owner!, contactId: fixtures.customer_id },
      { company: 3, key: secondKey, contactId: secondContact },
    ];
    // Raising a cap is a loosening only a human may make (an agent key is refused), so the
    // operator raises them in the file; the server reads them after its 5 s settings cache.
    for (const t of tenants)
      await raiseCaps(join(dir, 'soak.db'), t.company, {
        WRITE_REVERSIBLE: 1_000_000,
        WRITE_FINANCIAL: 1_000_000,
      });
    await new Promise((r) => setTimeout(r, 5500));

    const rec = new Recorder();
    const pid = served.child.pid!;
    const samples: Array<[number, number]> = [];
    const start = performance.now();
    const stopAt = start + (warmup + seconds) * 1000;
    const until = () => performance.now() >= stopAt;
    const sampler = setInterval(() => samples.push([(performance.now() - start) / 1000, rssMiB(pid)]), 1000);
    const warm = setTimeout(() => (rec.counting = true), warmup * 1000);
    const workers = [
      ...Array.from({ length: options.http ?? 6 }, () => httpWorker(base, tenants, keys.admin!, rec, until)),
      ...Array.from({ length: options.mcp ?? 2 }, (_, i) =>
        mcpWorker(base, tenants[i % 2]!, keys.admin!, rec, until, i),
      ),
    ];
    await Promise.all(workers);
    clearInterval(sampler);
    clearTimeout(warm);

    const operations: SoakReport['operations'] = {};
    const unexpected: Record<string, number> = {};
    let total = 0;
    for (const [name, s] of [...rec.ops.entries()].sort()) {
      const sorted = [...s.latencies].sort((a, b) => a - b);
      const r3 = (x: number) => Math.round(x * 1000) / 1000;
      operations[name] = {
        count: sorted.length,
        p50: r3(percentile(sorted, 50)),
        p95: r3(percentile(sorted, 95)),
        p99: r3(percentile(sorted, 99)),
        outcomes: Object.fromEntries(s.outcomes),
      };
      if (name !== 'mcp.new_session') total += sorted.length;
      for (const [o, n] of s.outcomes)
        if (o !== 'ok' && !(EXPECTED[name] ?? []).includes(o)) unexpected[`${name}: ${o}`] = n;
    }
    const measured = samples.filter(([t]) => t >= warmup);
    const secondHalf = measured.filter(([t]) => t >= warmup + seconds / 2);
    const mib = (x: number) => Math.round(x * 10) / 10;
    return {
      seconds,
      ops: total,
      ops_per_second: Math.round(total / seconds),
      operations,
      unexpected,
      rss: {
        after_warmup: mib(measured[0]?.[1] ?? NaN),
        end: mib(measured[measured.length - 1]?.[1] ?? NaN),
        peak: mib(Math.max(...measured.map(([, y]) => y))),
        slope_mib_per_min: Math.round(slopePerMinute(secondHalf) * 100) / 100,
        samples: measured.length,
        every_10s: measured.filter((_, i) => i % 10 === 0).map(([, y]) => mib(y)),
      },
      machine: `${cpus()[0]?.model.trim()}, ${cpus().length} cores, Node ${process.version}`,
      load: [Math.round(load0 * 100) / 100, Math.round(loadavg()[0]! * 100) / 100],
      durability,
    };
  } finally {
    await stopServe(served.child);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The stdout of the first `serve --demo` run (keys and fixtures are printed there). */
async function readyOutput(served: Awaited<ReturnType<typeof startServe>>): Promise<string> {
  return served.stdout();
}

/** The BENCHMARKS.md section for a report. */
export function renderSoak(r: SoakReport, command: string): string {
  const rows = Object.entries(r.operations).map(
    ([name, o]) =>
      `| \`${name}\` | ${o.count.toLocaleString('en-US')} | ${o.p50.toFixed(2)} | ${o.p95.toFixed(2)} | ${o.p99.toFixed(2)} | ${Object.entries(
        o.outcomes,
      )
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')} |`,
  );
  const unexpected = Object.entries(r.unexpected);
  return [
    '<!-- soak:start -->',
    '## Soak (generated by `bench/soak.ts --write`)',
    '',
    `\`${command}\` — ${r.machine}; ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; load average ${r.load[0]} → ${r.load[1]}; durability ${r.durability}. One \`solid serve --demo\` process on loopback; ${r.seconds} s measured after a warm-up; two tenants; HTTP and MCP clients in the same process as the driver (they share the machine's cores with the server).`,
    '',
    `**${r.ops.toLocaleString('en-US')} operations, ${r.ops_per_second.toLocaleString('en-US')} per second** (an operation is one row below: a write or typed-phrase confirmation is two requests, pending + confirm). Unexpected outcomes: ${unexpected.length === 0 ? '**none**' : unexpected.map(([k, v]) => `${k} × ${v}`).join('; ')}.`,
    '',
    `RSS of the server: ${r.rss.after_warmup} MiB after warm-up, ${r.rss.end} MiB at the end, peak ${r.rss.peak} MiB; slope over the second half **${r.rss.slope_mib_per_min} MiB/min** (${r.rss.samples} samples, one per second; every 10 s: ${r.rss.every_10s.join(', ')} MiB).`,
    '',
    '| operation | count | p50 ms | p95 ms | p99 ms | outcomes |',
    '|---|---:|---:|---:|---:|---|',
    ...rows,
    '<!-- soak:end -->',
  ].join('\n');
}

function writeSoak(file: string, section: string): void {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n';
  const a = text.indexOf('<!-- soak:start -->');
  const b = text.indexOf('<!-- soak:end -->');
  const next =
    a >= 0 && b > a
      ? text.slice(0, a) + section + text.slice(b + '<!-- soak:end -->'.length)
      : `${text.trimEnd()}\n\n${section}\n`;
  writeFileSync(file, next);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const argv = process.argv.slice(2);
  const num = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? Number(argv[i + 1]) : undefined;
  };
  const dur = argv.includes('--durability')
    ? (argv[argv.indexOf('--durability') + 1] as 'normal' | 'full')
    : undefined;
  const report = await runSoak({
    seconds: num('--seconds'),
    http: num('--http'),
    mcp: num('--mcp'),
    durability: dur,
  });
  console.log(JSON.stringify(report, null, 2));
  if (argv.includes('--write')) {
    const file = resolve(fileURLToPath(new URL('../BENCHMARKS.md', import.meta.url)));
    writeSoak(file, renderSoak(report, `node --import tsx bench/soak.ts ${argv.join(' ')}`.trim()));
    console.error(`wrote the soak section of ${file}`);
  }
}

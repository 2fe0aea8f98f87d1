/**
 * Where the time goes (issue 21: "each figure that misses says where the time goes, with a
 * profile"). For each figure that can miss, the system side alone (never the bare baseline) runs
 * in a warm loop while V8's sampling profiler records just that loop (node:inspector/promises:
 * Profiler.enable, setSamplingInterval 100 µs, start/stop). Each sample's self time then goes to
 * a layer by its frame's url and function name (`attribute`, `layerOfFrame`):
 *
 *   sqlite          better-sqlite3 (its lib, and any native called from src/store) and our
 *                   store's synchronous statement calls (getSync/allSync/runSync/control/exec/
 *                   prepare in src/store):
 *                   V8 charges part of a native call's time (the rows it builds) to the JS frame
 *                   calling it, so those wrappers are counted with the engine
 *   store           the rest of src/store (transactions, group commit, snapshots)
 *   crypto          node:crypto (hash, sign, verify; internal/crypto/*)
 *   audit row       src/runtime/ledger/write/audit.ts and read-audit-buffer.ts
 *   pipeline        the rest of src/runtime and src/spec
 *   handler         the verbs' own code (bench/*.ts fixtures, src/verbs, src/business)
 *   validation      Ajv (its lib and its generated `validateN` functions)
 *   transport       our src/transports
 *   transport libs  fastify and its parts, light-my-request (inject), the MCP SDK, zod (the SDK's
 *                   message schemas), pino
 *   tsx             esbuild's keepNames helper `__name` that tsx adds to every module it
 *                   transforms (the bench's own fixtures); the built dist/ (tsc) has none
 *   node internals  other node: frames (streams, timers, async hooks, http)
 *   GC, program     V8's "(garbage collector)" and "(program)" (native work no JS frame owns)
 *   driver          this file's loops and the inspector session
 *   other           anything else
 *
 * Native frames (no url) and dependencies not listed count for the nearest calling frame's layer.
 * Shares are of the main thread's non-idle samples, each sample counted once; worker threads (the
 * opt-in background checkpointer) and other processes (autocannon) are not in them. Each scenario
 * first runs the same loop unprofiled (half as long): each row's value is that run's process CPU
 * (process.cpuUsage, every thread) per iteration, which the section multiplies by the shares for
 * a per-layer estimate in µs (the profiler adds ≈ 40 % CPU at 100 µs, so the profiled loop's own
 * CPU is only in the notes).
 *
 * Every scenario runs the built package (dist/, as the suite does); its frames are placed by their
 * source paths (`asSource`: dist/x.js as src/x.ts), and positions are mapped back to the sources
 * through dist/'s source maps.
 *
 * Scenarios: read.audit_row (real read-audit entries pushed through rt.auditBuffer in 256-row
 * batches, as bench/read-cost.ts part 3), core.read_keyed (dispatchWithKey of bench.search, the
 * key authenticated per call), core.write_confirmed_vs_careful (keyed preflight + confirm pairs,
 * as bench/core.ts), http.dispatch_read (solid serve's server, createServeApp as bench/http.ts,
 * profiled in-process while autocannon loads it from its own process over loopback),
 * mcp.call_in_memory (tools/call through createMcpServer and the SDK Client on InMemoryTransport;
 * the client shares the process, as in bench/mcp.ts), ucp.verify_share_read (the signed UCP read
 * route through inject(), requests signed before the profile; as bench/ucp.ts).
 *
 * The raw profiles are written to bench/profiles/<figure>.cpuprofile (gitignored), with their
 * positions mapped back to the TypeScript sources (dist/'s source maps; tsx's for the bench's own
 * fixtures): open them in Chrome DevTools or VS Code.
 *
 * Run alone: node --import tsx bench/profile.ts [--quick]; in the suite: npm run bench -- --only
 * profile [--write] (the section between the bench:profiles markers of BENCHMARKS.md).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { findSourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Session } from 'node:inspector/promises';
import type { BenchResult } from './harness.ts';

// ---------------------------------------------------------------------------------------------
// The profile format (Chrome DevTools protocol, Profiler.Profile) and its attribution.

export interface CallFrame {
  functionName: string;
  scriptId?: string;
  url: string;
  /** 0-based, in the script V8 ran. */
  lineNumber: number;
  /** 0-based. */
  columnNumber: number;
}

export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
  positionTicks?: unknown[];
}

/** A V8 CPU profile: a call tree, the sampled node per tick and the µs between ticks. */
export interface CpuProfile {
  nodes: ProfileNode[];
  /** µs. */
  startTime: number;
  /** µs. */
  endTime: number;
  samples?: number[];
  /** µs before each sample (the first: since startTime). */
  timeDeltas?: number[];
}

export type Layer =
  | 'sqlite'
  | 'store'
  | 'crypto'
  | 'audit row'
  | 'pipeline'
  | 'handler'
  | 'validation'
  | 'transport'
  | 'transport libs'
  | 'tsx'
  | 'node internals'
  | 'GC'
  | 'program'
  | 'driver'
  | 'idle'
  | 'other';

/** Our store's methods that call better-sqlite3 directly (see the header: counted as sqlite). */
const SQLITE_CALLS = new Set([
  'getSync',
  'allSync',
  'runSync',
  'control',
  'exec',
  'prepare',
  'bindAll',
  'bind',
  'pragma',
]);

/** Dependencies that are the transport (by node_modules/<name>/). */
const TRANSPORT_PACKAGES = [
  'fastify',
  '@fastify/',
  'find-my-way',
  'avvio',
  'light-my-request',
  'fast-json-stringify',
  'secure-json-parse',
  'fast-querystring',
  'toad-cache',
  'abstract-logging',
  'process-warning',
  'content-type',
  'fast-uri',
  'json-schema-ref-resolver',
  '@modelcontextprotocol/sdk',
  'pino',
  'sonic-boom',
  'thread-stream',
  'on-exit-leak-free',
  'quick-format-unescaped',
  'atomic-sleep',
  'safe-stable-stringify',
  'zod',
  'cookie',
  'raw-body',
];

function packageOf(url: string): string | undefined {
  const i = url.lastIndexOf('/node_modules/');
  if (i < 0) return undefined;
  const rest = url.slice(i + '/node_modules/'.length);
  const parts = rest.split('/');
  return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
}

/**
 * The layer of one frame from its url and function name alone, or undefined when it belongs to
 * its caller's layer (native frames without a url, dependencies not assigned to a layer).
 */
export function layerOfFrame(frame: Pick<CallFrame, 'url' | 'functionName'>): Layer | undefined {
  const { url, functionName: name } = frame;
  switch (name) {
    case '(garbage collector)':
      return 'GC';
    case '(idle)':
      return 'idle';
    case '(program)':
    case '(root)':
      return 'program';
  }
  if (url === '') return /^validate\d*$/.test(name) ? 'validation' : undefined;
  if (name === '__name') return 'tsx';
  if (url.startsWith('node:internal/crypto') || url === 'node:crypto') return 'crypto';
  // The profiler's own session (Profiler.stop's message at the loop's end).
  if (url === 'node:inspector' || url === 'node:inspector/promises') return 'driver';
  if (url.startsWith('node:')) return 'node internals';
  const pkg = packageOf(url);
  if (pkg !== undefined) {
    if (pkg === 'better-sqlite3') return 'sqlite';
    if (pkg === 'ajv' || pkg === 'ajv-formats') return 'validation';
    if (pkg === 'tsx' || pkg === 'esbuild') return 'tsx';
    if (TRANSPORT_PACKAGES.some((p) => (p.endsWith('/') ? pkg.startsWith(p) : pkg === p)))
      return 'transport libs';
    return undefined;
  }
  return layerOfOurs(asSource(url), name);
}

/**
 * A frame of the built package (…/dist/x.js, what the bench runs) as its source (…/src/x.ts), so
 * one set of rules places both; other urls unchanged.
 */
export function asSource(url: string): string {
  const i = url.lastIndexOf('/dist/');
  if (i < 0 || url.includes('/node_modules/')) return url;
  return `${url.slice(0, i)}/src/${url.slice(i + '/dist/'.length).replace(/\.js$/, '.ts')}`;
}

function layerOfOurs(url: string, name: string): Layer {
  if (url.includes('/src/store/')) return SQLITE_CALLS.has(name) ? 'sqlite' : 'store';
  if (
    url.endsWith('/src/runtime/ledger/write/audit.ts') ||
    url.endsWith('/src/runtime/ledger/write/read-audit-buffer.ts')
  )
    return 'audit row';
  if (url.includes('/src/runtime/') || url.includes('/src/spec/')) return 'pipeline';
  if (url.includes('/src/transports/')) return 'transport';
  if (url.includes('/src/verbs/') || url.includes('/src/business/')) return 'handler';
  if (url.endsWith('/bench/profile.ts')) return 'driver';
  if (url.includes('/bench/')) return 'handler';
  return 'other';
}

/** Where a frame is, as a reader wants it: a file relative to the repository, a 1-based line. */
export type Locate = (frame: CallFrame) => { file: string; line: number } | undefined;

export interface LayerShare {
  layer: Layer;
  /** Self time, ms (sampled: sample count × the mean interval, or the gaps with weight 'time'). */
  ms: number;
  /** Share of the busy (non-idle) samples, 0–1. */
  share: number;
  /** Share of the busy samples with a frame of this layer anywhere on their (synchronous) stack. */
  onStack: number;
}

export interface TopFunction {
  /** Function name; natives: "name (native) ← caller"; code without a url: "(generated code) ← caller". */
  name: string;
  /** file:line (sources), or the url when unknown; '' for V8's own entries. */
  where: string;
  layer: Layer;
  ms: number;
  /** Share of the busy sampled time, 0–1. */
  share: number;
}

export interface Attribution {
  /** Sampled time, ms (idle included). */
  totalMs: number;
  /** Sampled time without idle, ms. */
  busyMs: number;
  idleMs: number;
  samples: number;
  /** Busy layers, largest first (idle left out). */
  layers: LayerShare[];
  /** The largest self-time functions, largest first. */
  top: TopFunction[];
}

const defaultLocate: Locate = (f) =>
  f.url === '' ? undefined : { file: f.url.replace(/^file:\/\//, ''), line: f.lineNumber + 1 };

/** V8's own entries in a profile's call tree (no JS frame). */
const V8_ENTRIES = new Set(['(root)', '(program)', '(idle)', '(garbage collector)']);

/**
 * Attribute the self time of one or more CPU profiles to layers (`layerOfFrame`; a frame without
 * a layer takes its nearest caller's) and list the `top` (default 12) functions by self time.
 * `weight`: 'samples' (default) counts each sample once, at the profile's mean interval — on a
 * shared machine a descheduled main thread stretches the gap before the next sample, so counts
 * follow the thread's CPU better than gaps do; 'time' gives each sample the gap to the next one
 * (the last: to endTime), as DevTools does.
 */
export function attribute(
  input: CpuProfile | CpuProfile[],
  options: { locate?: Locate; top?: number; weight?: 'samples' | 'time' } = {},
): Attribution {
  const locate = options.locate ?? defaultLocate;
  const byTime = options.weight === 'time';
  const selfMs = new Map<string, TopFunction>();
  const layerMs = new Map<Layer, number>();
  const stackMs = new Map<Layer, number>();
  let total = 0;
  let samplesN = 0;
  for (const profile of Array.isArray(input) ? input : [input]) {
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const layerCache = new Map<number, Layer>();
    const layerOf = (id: number): Layer => {
      const hit = layerCache.get(id);
      if (hit !== undefined) return hit;
      const node = byId.get(id)!;
      let l = layerOfFrame(node.callFrame);
      const p = parent.get(id);
      // A native called from our store is a better-sqlite3 call, whichever store method calls it.
      if (l === undefined && node.callFrame.url === '' && p !== undefined)
        if (asSource(byId.get(p)!.callFrame.url).includes('/src/store/')) l = 'sqlite';
      if (l === undefined) {
        const pl = p === undefined ? 'other' : layerOf(p);
        // A native or unassigned dependency called straight from the root (a microtask, a timer).
        l = pl === 'program' ? 'other' : pl;
      }
      layerCache.set(id, l);
      return l;
    };
    const keyCache = new Map<number, { key: string; name: string; where: string }>();
    const keyOf = (id: number) => {
      const hit = keyCache.get(id);
      if (hit !== undefined) return hit;
      const f = byId.get(id)!.callFrame;
      let name = f.functionName || '(anonymous)';
      let at = locate(f);
      if (f.url === '' && !V8_ENTRIES.has(f.functionName)) {
        name = f.functionName ? `${f.functionName} (native)` : '(generated code)';
        const p = parent.get(id);
        const pf = p === undefined ? undefined : byId.get(p)!.callFrame;
        if (pf !== undefined && pf.functionName !== '(root)') {
          name = `${name} ← ${pf.functionName || '(anonymous)'}`;
          at = locate(pf);
        }
      }
      const where = at === undefined ? '' : `${at.file}:${at.line}`;
      const k = { key: `${name}\u0000${where}`, name, where };
      keyCache.set(id, k);
      return k;
    };
    const samples = profile.samples ?? [];
    const deltas = profile.timeDeltas ?? [];
    let t = profile.startTime;
    const times = samples.map((_, i) => (t += deltas[i] ?? 0));
    const mean = samples.length > 0 ? (profile.endTime - profile.startTime) / samples.length / 1000 : 0;
    for (let i = 0; i < samples.length; i++) {
      const next = i + 1 < samples.length ? times[i + 1]! : profile.endTime;
      const ms = byTime ? Math.max(0, next - times[i]!) / 1000 : mean;
      const id = samples[i]!;
      if (!byId.has(id)) continue;
      samplesN++;
      total += ms;
      const layer = layerOf(id);
      layerMs.set(layer, (layerMs.get(layer) ?? 0) + ms);
      if (layer === 'idle') continue;
      const onStack = new Set<Layer>();
      for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
        const l = layerOf(n);
        if (l !== 'program' || n === id) onStack.add(l);
      }
      for (const l of onStack) stackMs.set(l, (stackMs.get(l) ?? 0) + ms);
      const k = keyOf(id);
      const e = selfMs.get(k.key);
      if (e !== undefined) e.ms += ms;
      else selfMs.set(k.key, { name: k.name, where: k.where, layer, ms, share: 0 });
    }
  }
  const idle = layerMs.get('idle') ?? 0;
  const busy = total - idle;
  const share = (ms: number) => (busy > 0 ? ms / busy : 0);
  const layers = [...layerMs]
    .filter(([l]) => l !== 'idle')
    .map(([layer, ms]) => ({ layer, ms, share: share(ms), onStack: share(stackMs.get(layer) ?? 0) }))
    .sort((a, b) => b.ms - a.ms);
  const top = [...selfMs.values()]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, options.top ?? 12)
    .map((f) => ({ ...f, share: share(f.ms) }));
  return { totalMs: total, busyMs: busy, idleMs: idle, samples: samplesN, layers, top };
}

// ---------------------------------------------------------------------------------------------
// Source positions: tsx's transform (whitespace minified, inline source maps) back to the .ts.

const ROOT = fileURLToPath(new URL('../', import.meta.url));

function sourceLocator(): { locate: Locate; original(f: CallFrame): CallFrame } {
  const maps = new Map<string, ReturnType<typeof findSourceMap> | null>();
  const original = (f: CallFrame): CallFrame => {
    if (!f.url.startsWith('file://')) return f;
    let map = maps.get(f.url);
    if (map === undefined) {
      try {
        map = findSourceMap(f.url) ?? null;
      } catch {
        map = null;
      }
      maps.set(f.url, map);
    }
    if (map === null || map === undefined) return f;
    const e = map.findEntry(f.lineNumber, f.columnNumber) as {
      originalSource?: string;
      originalLine?: number;
      originalColumn?: number;
    };
    if (e.originalSource === undefined || e.originalLine === undefined) return f;
    return {
      ...f,
      url: e.originalSource.startsWith('file://') ? e.originalSource : pathToFileURL(e.originalSource).href,
      lineNumber: e.originalLine,
      columnNumber: e.originalColumn ?? 0,
    };
  };
  const locate: Locate = (f) => {
    if (f.url === '') return undefined;
    const o = original(f);
    if (!o.url.startsWith('file://')) return { file: o.url, line: o.lineNumber + 1 };
    const path = fileURLToPath(o.url);
    const rel = relative(ROOT, path);
    return { file: rel.startsWith('..') ? path : rel, line: o.lineNumber + 1 };
  };
  return { locate, original };
}

// ---------------------------------------------------------------------------------------------
// The scenarios.

export interface ProfileDetail {
  /** The figure this profile explains, e.g. "core.read_keyed". */
  figure: string;
  /** What the profiled loop runs. */
  loop: string;
  /** Iterations of the loop (dispatches, rows, requests). */
  ops: number;
  /** What one iteration is. */
  op: string;
  /** Wall time of the profiled loop, ms. */
  wallMs: number;
  /** Process CPU (user + system, every thread) over the profiled loop, µs. */
  cpuUs: number;
  /** Process CPU per iteration of the same loop run unprofiled just before (half as long), µs. */
  plainCpuPerOp: number;
  attribution: Attribution;
  /** The raw profile, relative to the repository. */
  file: string;
}

export interface ProfileOptions {
  quick?: boolean;
  /** Only these figures (default: all). */
  only?: string[];
  /** Where the .cpuprofile files go (default bench/profiles/). */
  outDir?: string;
  /** Sampling interval, µs (default 100). */
  intervalUs?: number;
}

interface Loop {
  loop: string;
  op: string;
  /**
   * Untimed set-up (and warm-up when `warm`); returns the measured loop (resolving to its
   * iteration count), `scale` × its full length.
   */
  prepare(o: { warm: boolean; scale: number }): Promise<() => Promise<number>>;
  close(): Promise<void>;
}

/** The unprofiled run's length, relative to the profiled one. */
const PLAIN_SCALE = 0.5;

type ScenarioMaker = (ctx: { quick: boolean; dir: string }) => Promise<Loop>;

/** Run `fn` for about `ms`; returns the number of calls. */
async function forMs(fn: () => Promise<unknown>, ms: number): Promise<number> {
  let n = 0;
  const end = performance.now() + ms;
  while (performance.now() < end) {
    await fn();
    n++;
  }
  return n;
}

const silent = async () => (await import('pino')).default({ level: 'silent' });

/** The built package's entry point (dist/index.js; see harness.ts `fromDist`). */
const solid = async () => {
  const { fromDist } = await import('./harness.ts');
  return fromDist<typeof import('../src/index.ts')>('index.js');
};

/**
 * A runtime of the built package with the contacts fixture (bench/contacts.ts), an owner API key
 * of its tenant and a caller as a transport makes it (no principal: the key is authenticated by
 * dispatchWithKey on every call), plus a principal caller for the scenarios that need one.
 */
async function contactsRuntime(dir: string, name: string, settings?: Record<string, unknown>) {
  const { createRuntime, SqliteStore } = await solid();
  const { seedContactsBench } = await import('./contacts.ts');
  const store = new SqliteStore({ path: join(dir, `${name}.db`) });
  const rt = await createRuntime({
    store,
    logger: await silent(),
    sandboxCompanyId: 1,
    maintenanceIntervalMs: 0,
  });
  const key = await seedContactsBench(rt, settings);
  const principal = await rt.tenants.authenticate(key);
  return {
    rt,
    store,
    key,
    caller: { surface: 'cli' as const, principal },
    keyed: { surface: 'http' as const },
  };
}

const SCENARIOS: Record<string, ScenarioMaker> = {
  'read.audit_row': async ({ quick, dir }) => {
    const { rt, caller } = await contactsRuntime(dir, 'audit-row');
    const rows = quick ? 4096 : 49_152;
    const batch = 256;
    const buffer = rt.auditBuffer as unknown as { push: (e: unknown) => void };
    const realPush: (e: unknown) => void = rt.auditBuffer.push.bind(rt.auditBuffer) as (e: unknown) => void;
    const capture = async (n: number): Promise<unknown[]> => {
      const got: unknown[] = [];
      buffer.push = (e) => got.push(e);
      try {
        for (let i = 0; i < n; i++) await rt.dispatch(caller, 'bench.search', { q: 'smith' });
      } finally {
        buffer.push = realPush;
      }
      return got;
    };
    const pushAll = async (got: unknown[]) => {
      for (let i = 0; i < got.length; i++) {
        realPush(got[i]);
        if ((i + 1) % batch === 0) await rt.auditBuffer.flush();
      }
      await rt.auditBuffer.flush();
      return got.length;
    };
    return {
      loop: `${rows} read-audit entries of real bench.search dispatches pushed through rt.auditBuffer, a flush awaited every ${batch} rows (as bench/read-cost.ts)`,
      op: 'row',
      async prepare({ warm, scale }) {
        if (warm) await pushAll(await capture(quick ? 1024 : 4096));
        const got = await capture(Math.round(rows * scale));
        return () => pushAll(got);
      },
      close: () => rt.close(),
    };
  },

  'core.read_keyed': async ({ quick, dir }) => {
    const { dispatchWithKey } = await solid();
    const { rt, key, keyed } = await contactsRuntime(dir, 'core-read');
    const ms = quick ? 300 : 2000;
    const one = () => dispatchWithKey(rt, keyed, key, 'bench.search', { q: 'smith' });
    return {
      loop: `dispatchWithKey of bench.search (API key authenticated per call; contact search, 20 of 200 rows) for ${ms} ms, sequential (as bench/core.ts)`,
      op: 'dispatch',
      async prepare({ warm, scale }) {
        if (warm) await forMs(one, quick ? 200 : 500);
        return () => forMs(one, ms * scale);
      },
      close: () => rt.close(),
    };
  },

  'core.write_confirmed_vs_careful': async ({ quick, dir }) => {
    const { dispatchWithKey } = await solid();
    const { setPhoneUngatedVerb } = await import('./core.ts');
    const { rt, key, keyed } = await contactsRuntime(dir, 'core-write', {
      caps: { WRITE_REVERSIBLE: 1_000_000_000 },
    });
    rt.register(setPhoneUngatedVerb());
    const writes = quick ? 150 : 1000;
    let n = 0;
    const VERB = 'bench.set_phone_ungated';
    const writeAll = async (count: number) => {
      for (let k = 0; k < count; k++) {
        const args = { id: (n % 200) + 1, phone: `+3${n++}` };
        const p = await dispatchWithKey(rt, keyed, key, VERB, args);
        if (p.consent === undefined) throw new Error(`bench preflight failed: ${JSON.stringify(p.error)}`);
        const env = await dispatchWithKey(rt, keyed, key, VERB, args, {
          confirm: true,
          nonce: p.consent.nonce,
        });
        if (!env.ok) throw new Error(`bench write failed: ${JSON.stringify(env.error)}`);
      }
      return count;
    };
    return {
      loop: `${writes} confirmed writes as a client sends them: a keyed preflight of bench.set_phone_ungated then its keyed confirm (SELECT + UPDATE, nonce burn, cap, audit rows, idempotency record, ES256 receipt), sequential (as bench/core.ts)`,
      op: 'write',
      async prepare({ warm, scale }) {
        if (warm) await writeAll(quick ? 50 : 200);
        await rt.auditBuffer.flush();
        return () => writeAll(Math.round(writes * scale));
      },
      close: () => rt.close(),
    };
  },

  'http.dispatch_read': async ({ quick, dir }) => {
    const pino = (await import('pino')).default;
    const { fromDist } = await import('./harness.ts');
    const { createRuntime, SqliteStore } = await solid();
    const { createServeApp } = await fromDist<typeof import('../src/transports/cli/commands/serve.ts')>(
      'transports/cli/commands/serve.js',
    );
    const { DEFAULT_RATE_LIMITS } = await fromDist<typeof import('../src/transports/http/rate-limit.ts')>(
      'transports/http/rate-limit.js',
    );
    const { seedContactsBench } = await import('./contacts.ts');
    const { measure } = await import('./http.ts');
    const store = new SqliteStore({ path: join(dir, 'http.db') });
    const logger = pino({ level: 'info' }, pino.destination('/dev/null'));
    const rt = await createRuntime({ store, logger, sandboxCompanyId: 1 });
    const high = 1_000_000_000;
    const api = await createServeApp(rt, {
      onMountError: (name, err) => {
        throw new Error(`transport ${name} not mounted: ${(err as Error).message}`);
      },
      http: { rateLimits: { ...DEFAULT_RATE_LIMITS, perKey: high, perSession: high, perAddress: high } },
    });
    const key = await seedContactsBench(rt);
    await api.listen({ port: 0, host: '127.0.0.1' });
    const port = (api.server.address() as { port: number }).port;
    const url = `http://127.0.0.1:${port}/api/v1/agent/dispatch/bench.search`;
    const body = JSON.stringify({ args: { q: 'smith' } });
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    const seconds = quick ? 1 : 3;
    return {
      loop: `POST /api/v1/agent/dispatch/bench.search on createServeApp's server (request log at info to /dev/null, rate limits counting) under autocannon in its own process, 10 connections, ${seconds} s, loopback (as bench/http.ts); the profile is the server's process only`,
      op: 'request',
      async prepare({ warm, scale }) {
        // Quick: the unprofiled run is the warm-up.
        if (warm && !quick) await measure(url, body, headers, 10, 1);
        return async () => {
          const m = await measure(url, body, headers, 10, Math.max(1, Math.round(seconds * scale)));
          if (m.non2xx + m.errors > 0) throw new Error(`http: ${m.non2xx} non-2xx, ${m.errors} errors`);
          return m.total;
        };
      },
      async close() {
        await api.close();
        await rt.close();
      },
    };
  },

  'mcp.call_in_memory': async ({ quick, dir }) => {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { InMemoryTransport } = await import('@modelcontextprotocol/sdk/inMemory.js');
    const { fromDist } = await import('./harness.ts');
    const { createMcpServer } = await fromDist<typeof import('../src/transports/mcp/mcp-server.ts')>(
      'transports/mcp/mcp-server.js',
    );
    const { ToolCatalog } = await fromDist<typeof import('../src/transports/mcp/tool-catalog.ts')>(
      'transports/mcp/tool-catalog.js',
    );
    const { rt, key } = await contactsRuntime(dir, 'mcp');
    const catalog = new ToolCatalog(rt);
    const client = new Client({ name: 'bench', version: '1.0.0' });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await Promise.all([
      createMcpServer(rt, { catalog, credentials: () => ({ apiKey: key }) }).connect(a),
      client.connect(b),
    ]);
    await client.listTools();
    const ms = quick ? 300 : 2000;
    const one = async () => {
      const r = await client.callTool({ name: 'bench__search', arguments: { q: 'smith' } });
      if (r.isError) throw new Error(`bench call failed: ${JSON.stringify(r.content)}`);
    };
    return {
      loop: `tools/call of bench__search through createMcpServer, SDK Client on InMemoryTransport, sequential, ${ms} ms (as bench/mcp.ts); client and server share the process, so the client's work (and its output-schema validation) is in the profile`,
      op: 'call',
      async prepare({ warm, scale }) {
        if (warm) await forMs(one, quick ? 200 : 500);
        return () => forMs(one, ms * scale);
      },
      async close() {
        await client.close();
        await rt.close();
      },
    };
  },

  'ucp.verify_share_read': async ({ quick, dir }) => {
    const { startPlatform, minimalUcpRuntime, serve } = await import('./ucp.ts');
    const { fromDist } = await import('./harness.ts');
    const { signRequest } = await fromDist<typeof import('../src/transports/ucp/ucp-client.ts')>(
      'transports/ucp/ucp-client.js',
    );
    const platform = await startPlatform();
    const rt = await minimalUcpRuntime(join(dir, 'ucp.db'), await silent());
    const b = await serve(rt, 2, platform.profileUrl);
    const capability = 'com.example.sales.contacts_search';
    const calls = quick ? 300 : 2000;
    let n = 0;
    const sign = () => {
      const url = `http://localhost:80/ucp/v1/capabilities/${capability}`;
      const signed = signRequest({
        url,
        body: { q: 'smith' },
        profileUrl: platform.profileUrl,
        keyid: platform.kid,
        privateKey: platform.privateKey,
        idempotencyKey: `profile-${++n}`,
        created: Math.floor(rt.clock().getTime() / 1000),
      });
      return {
        method: 'POST' as const,
        url: `/ucp/v1/capabilities/${capability}`,
        headers: { ...signed.headers, host: 'localhost:80' },
        payload: signed.body!,
      };
    };
    const injectAll = async (requests: ReturnType<typeof sign>[]) => {
      for (const r of requests) {
        const res = await b.app.inject(r);
        if (res.statusCode !== 200)
          throw new Error(`ucp answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
      }
      return requests.length;
    };
    return {
      loop: `${calls} signed calls of ${capability} (RFC 9421 verify with the store-backed replay guard, dispatch, signed answer) through Fastify inject(), signed before the profile (as bench/ucp.ts); inject's own work counts as transport`,
      op: 'call',
      async prepare({ warm, scale }) {
        if (warm) await injectAll(Array.from({ length: 200 }, sign));
        const requests = Array.from({ length: Math.round(calls * scale) }, sign);
        return () => injectAll(requests);
      },
      async close() {
        await b.close();
        await rt.close();
        await platform.close();
      },
    };
  },
};

/** The figures profiled, in report order. */
export const PROFILED_FIGURES = Object.keys(SCENARIOS);

/**
 * Profile every scenario (or `only`) in this process and return one BenchResult per scenario
 * (id `profile.<figure>`, value: sampled main-thread CPU µs per iteration) with the attribution in
 * `detail` (ProfileDetail), which bench/run.ts renders into BENCHMARKS.md.
 */
export async function benchProfile(
  options: ProfileOptions = {},
): Promise<Array<BenchResult & { detail: ProfileDetail }>> {
  // Before the sources load (they are imported below): lets findSourceMap map tsx's positions.
  process.setSourceMapsEnabled(true);
  const { Session } = await import('node:inspector/promises');
  const quick = options.quick ?? false;
  const outDir = options.outDir ?? fileURLToPath(new URL('./profiles/', import.meta.url));
  mkdirSync(outDir, { recursive: true });
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-profile-'));
  const session: Session = new Session();
  session.connect();
  const { locate, original } = sourceLocator();
  const out: Array<BenchResult & { detail: ProfileDetail }> = [];
  try {
    for (const figure of options.only ?? PROFILED_FIGURES) {
      const make = SCENARIOS[figure];
      if (make === undefined) throw new Error(`no profile scenario ${figure}`);
      const s = await make({ quick, dir });
      let profile: CpuProfile;
      let ops: number;
      let wallMs: number;
      let cpuUs: number;
      let plainCpuPerOp: number;
      try {
        // The same loop unprofiled first (half as long): the process CPU per iteration without
        // the profiler's overhead (≈ +40 % at 100 µs here), which the µs estimates use.
        const plain = await s.prepare({ warm: true, scale: PLAIN_SCALE });
        const p0 = process.cpuUsage();
        const plainOps = await plain();
        const p = process.cpuUsage(p0);
        plainCpuPerOp = (p.user + p.system) / Math.max(1, plainOps);
        const loop = await s.prepare({ warm: false, scale: 1 });
        await session.post('Profiler.enable');
        await session.post('Profiler.setSamplingInterval', { interval: options.intervalUs ?? 100 });
        await session.post('Profiler.start');
        const t0 = performance.now();
        const c0 = process.cpuUsage();
        try {
          ops = await loop();
        } finally {
          const c = process.cpuUsage(c0);
          cpuUs = c.user + c.system;
          wallMs = performance.now() - t0;
          profile = (await session.post('Profiler.stop')).profile as CpuProfile;
          await session.post('Profiler.disable');
        }
      } finally {
        await s.close();
      }
      const attribution = attribute(profile, { locate });
      const file = join(outDir, `${figure}.cpuprofile`);
      writeFileSync(
        file,
        JSON.stringify({
          ...profile,
          nodes: profile.nodes.map(({ positionTicks: _, ...n }) => ({
            ...n,
            callFrame: original(n.callFrame),
          })),
        }),
      );
      const rel = relative(ROOT, file);
      const detail: ProfileDetail = {
        figure,
        loop: s.loop,
        ops,
        op: s.op,
        wallMs,
        cpuUs,
        plainCpuPerOp,
        attribution,
        file: rel,
      };
      const perOp = cpuUs / Math.max(1, ops);
      const lead = attribution.layers[0];
      out.push({
        id: `profile.${figure}`,
        what: `${figure}'s system side alone, the loop the profile records run unprofiled: process CPU per ${s.op} (the notes and the profiles section give where it goes)`,
        value: Math.round(plainCpuPerOp * 10) / 10,
        unit: 'µs',
        notes:
          `profiled: ${ops} ${plural(s.op)} in ${Math.round(wallMs)} ms, ${perOp.toFixed(1)} µs CPU each, ${attribution.samples} samples; top layer ${lead?.layer ?? '–'} ${pct(lead?.share)}; ` +
          `layers: ${attribution.layers
            .slice(0, 6)
            .map((l) => `${l.layer} ${pct(l.share)}`)
            .join(', ')}; top self time: ${attribution.top
            .slice(0, 3)
            .map((f) => `${f.name} ${pct(f.share)}`)
            .join(', ')}; profile ${rel}`,
        detail,
      });
    }
  } finally {
    await session.post('Profiler.disable').catch(() => {});
    session.disconnect();
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

const plural = (op: string) => (/(s|sh|ch|x)$/.test(op) ? `${op}es` : `${op}s`);

const pct = (x: number | undefined) => (x === undefined ? '–' : `${(x * 100).toFixed(1)} %`);

// ---------------------------------------------------------------------------------------------
// The generated section of BENCHMARKS.md.

export const PROFILES_START = '<!-- bench:profiles:start -->';
export const PROFILES_END = '<!-- bench:profiles:end -->';

const cell = (s: string) => s.replace(/\|/g, '\\|');

/** The profiles section (between PROFILES_START and PROFILES_END) for the given details. */
export function renderProfileSection(
  details: ProfileDetail[],
  meta: {
    command: string;
    at: string;
    load: string;
    quick: boolean;
    machine: { cpu: string; cores: number; node: string };
  },
): string {
  const out: string[] = [
    PROFILES_START,
    '## Where the time goes (CPU profiles, generated)',
    '',
    `Generated by \`${meta.command}\` (bench/profile.ts) at ${meta.at.replace('T', ' ').slice(0, 16)} UTC${meta.quick ? ' (**quick**: short loops, not for publishing)' : ''}, load ${meta.load}, ${meta.machine.cpu}, ${meta.machine.cores} cores, Node ${meta.machine.node}.`,
    "For each figure that can miss, the system side alone (not the bare baseline) runs in a warm loop while V8's sampling profiler (node:inspector, 100 µs) records that loop. Each sample's self time goes to a layer by its frame: `sqlite` (better-sqlite3, any native called from src/store, and our store's synchronous statement calls, which V8 charges part of a native call to), `store` (the rest of src/store), `crypto` (node:crypto), `audit row` (ledger/write/audit.ts, read-audit-buffer.ts), `pipeline` (the rest of src/runtime), `handler` (the verb's own code), `validation` (Ajv), `transport` (our src/transports), `transport libs` (Fastify and its parts, light-my-request's inject, the MCP SDK and its zod schemas, pino), `tsx` (esbuild's keepNames helper `__name`: in the bench's own fixtures, not in the built dist/ every scenario runs), `node internals` (streams, sockets, timers, async hooks), `GC`, `program` (V8 native work no JS frame owns), `driver` (the profiling loop itself); natives and unassigned dependencies count for their caller. \"% samples\" is the layer's share of the main thread's non-idle samples; \"µs/op\" is that share × the process CPU per iteration of the same loop run unprofiled just before (all threads; an estimate to set beside the figure, not the figure: the profiler adds CPU of its own, ≈ 40 % in an alternating A/B of the core.read loop here (a measurement of an earlier suite), and above a load of ~2 these CPU figures vary by tens of % between runs while the shares hold within a few points); \"on stack\" is the share of samples with a frame of that layer anywhere on the synchronous stack (await cuts stacks, so it is a lower bound).",
    `The raw profiles are written to \`bench/profiles/<figure>.cpuprofile\` (gitignored; positions mapped to the TypeScript sources through dist/'s source maps): open them in Chrome DevTools (Performance → Load profile) or VS Code.`,
  ];
  for (const d of details) {
    const a = d.attribution;
    const cpuPerOp = d.plainCpuPerOp;
    const profiledPerOp = d.cpuUs / Math.max(1, d.ops);
    const perOp = (share: number) => (share * cpuPerOp).toFixed(1);
    const idleShare = a.totalMs > 0 ? a.idleMs / a.totalMs : 0;
    out.push(
      '',
      `### \`${d.figure}\``,
      '',
      `${d.loop}. ${d.ops.toLocaleString('en-US')} ${plural(d.op)} in ${Math.round(d.wallMs).toLocaleString('en-US')} ms; ${a.samples.toLocaleString('en-US')} samples. Process CPU per ${d.op}: ${cpuPerOp.toFixed(1)} µs unprofiled, ${profiledPerOp.toFixed(1)} µs profiled${idleShare >= 0.005 ? `; idle ${pct(idleShare)} of the profile` : ''}. Profile: \`${d.file}\`.`,
      '',
      `| layer | % samples | µs/${d.op} | on stack |`,
      '|---|---:|---:|---:|',
      ...a.layers.map(
        (l) =>
          `| ${l.layer} | ${(l.share * 100).toFixed(1)} | ${perOp(l.share)} | ${(l.onStack * 100).toFixed(0)} % |`,
      ),
      '',
      '| top self time | where | layer | % samples |',
      '|---|---|---|---:|',
      ...a.top.map(
        (f) =>
          `| \`${cell(f.name)}\` | ${f.where ? `\`${cell(f.where)}\`` : ''} | ${f.layer} | ${(f.share * 100).toFixed(1)} |`,
      ),
    );
  }
  out.push('', PROFILES_END);
  return out.join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rows = await benchProfile({ quick: process.argv.includes('--quick') });
  for (const r of rows) console.log(`${r.id}: ${r.value} ${r.unit}; ${r.notes}`);
}

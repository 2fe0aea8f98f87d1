/**
 * Remote-mode test support: the demo business seeded once per test process like
 * `solid serve --demo` (openLocal with the demo pack, its seed, a real keyfile), copied per test
 * into TWO identical databases — one the CLI opens locally (embedded mode), one served by a real
 * `solid serve` stack on 127.0.0.1:<free port> (createHttpServer + every HTTP mount, in-process) —
 * so the same sequence of calls in both modes must give the same envelopes.
 *
 * `cli(mode, argv, options)` runs the CLI in-process (runCli) with captured output, pointed at the
 * local copy (`--db`) or the server (`--url`), with XDG_CONFIG_HOME in a temp dir so no real
 * credentials are read or written. `stop()` / `start()` take the server down and bring it back
 * on the same port.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { DemoSeedFacts } from '../../src/business/pack.ts';
import type { Role } from '../../src/spec/types.ts';
import { runCli } from '../../src/transports/cli/main.ts';
import { keyfileOf, openLocal, type Local } from '../../src/transports/cli/local.ts';
import type { Io } from '../../src/transports/cli/output.ts';
import { loadHttpMounts } from '../../src/transports/server/http-mounts.ts';
import { createHttpServer, type HttpPlugin } from '../../src/transports/http/server.ts';

export type Mode = 'local' | 'remote';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  json<T = Record<string, unknown>>(): T;
}

export interface CliOptions {
  env?: Record<string, string | undefined>;
  tty?: boolean;
  prompt?: (q: string) => Promise<string>;
  promptSecret?: (q: string) => Promise<string>;
  /** Called with every stderr line as it is written (e.g. to catch a login link). */
  onErr?: (line: string) => void;
}

export interface RemoteFixture {
  dir: string;
  /** The copy the embedded CLI opens. */
  localDb: string;
  /** The copy the server serves. */
  servedDb: string;
  /** The server's runtime (register verbs, read the audit log). */
  server: Local;
  baseUrl: string;
  port: number;
  keys: Record<Role, string>;
  facts: DemoSeedFacts;
  /** XDG_CONFIG_HOME of every CLI run. */
  configHome: string;
  cli(mode: Mode, argv: string[], options?: CliOptions): Promise<CliRun>;
  /** Close the HTTP server (connections refused until start()). */
  stop(): Promise<void>;
  start(): Promise<void>;
}

interface Template {
  db: string;
  facts: DemoSeedFacts;
}

let template: Promise<Template> | undefined;

/** Seed the demo once per process, as `solid serve --demo` does. */
function seededDemo(): Promise<Template> {
  template ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'solid-remote-template-'));
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    const db = join(dir, 'demo.db');
    const local = await openLocal({ db, create: true, packs: ['demo'], logLevel: 'silent' });
    const pack = local.packs.find((p) => p.name === 'demo')!;
    const facts = (await pack.seed!(local.rt, {})) as DemoSeedFacts;
    await local.close();
    return { db, facts };
  })();
  return template;
}

function copyDb(from: string, to: string): void {
  copyFileSync(from, to);
  for (const suffix of ['-wal', '-shm'])
    if (existsSync(from + suffix)) copyFileSync(from + suffix, to + suffix);
  copyFileSync(keyfileOf(from), keyfileOf(to));
}

/** Serve `local` with every HTTP mount on 127.0.0.1 (port 0 = free). */
export async function serveLocal(local: Local, port = 0, plugins?: HttpPlugin[]): Promise<FastifyInstance> {
  const app = createHttpServer(local.rt, { logger: false, plugins: plugins ?? (await loadHttpMounts()) });
  await app.listen({ port, host: '127.0.0.1' });
  return app;
}

/** Run the CLI in-process with captured output and temporary environment variables. */
export async function runCliCaptured(argv: string[], options: CliOptions = {}): Promise<CliRun> {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = {
    out: (s) => out.push(s),
    err: (s) => {
      err.push(s);
      options.onErr?.(s);
    },
    isTTY: options.tty ?? false,
    ...(options.prompt !== undefined ? { prompt: options.prompt } : {}),
    ...(options.promptSecret !== undefined ? { promptSecret: options.promptSecret } : {}),
  };
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(options.env ?? {})) {
    saved[k] = process.env[k];
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  try {
    const code = await runCli(argv, io);
    const stdout = out.join('\n');
    return { code, stdout, stderr: err.join('\n'), json: <T>() => JSON.parse(stdout) as T };
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** Two identical copies of the demo: one for the embedded CLI, one behind a running server. */
export async function remoteFixture(t: TestContext): Promise<RemoteFixture> {
  const seeded = await seededDemo();
  const dir = mkdtempSync(join(tmpdir(), 'solid-remote-'));
  const localDb = join(dir, 'local.db');
  const servedDb = join(dir, 'served.db');
  copyDb(seeded.db, localDb);
  copyDb(seeded.db, servedDb);
  const configHome = join(dir, 'config');
  const server = await openLocal({ db: servedDb, logLevel: 'silent' });
  let app: FastifyInstance | undefined = await serveLocal(server);
  const port = (app.server.address() as AddressInfo).port;
  const baseUrl = `http://127.0.0.1:${port}`;
  t.after(async () => {
    await app?.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    dir,
    localDb,
    servedDb,
    server,
    baseUrl,
    port,
    keys: seeded.facts.keys as Record<Role, string>,
    facts: seeded.facts,
    configHome,
    cli(mode, argv, options = {}) {
      const target = mode === 'local' ? ['--db', localDb] : ['--url', baseUrl];
      return runCliCaptured([...target, ...argv], {
        ...options,
        env: {
          SOLID_API_URL: undefined,
          SOLID_API_KEY: undefined,
          SOLID_DB: undefined,
          XDG_CONFIG_HOME: configHome,
          ...(options.env ?? {}),
        },
      });
    },
    async stop() {
      await app?.close();
      app = undefined;
    },
    async start() {
      app = await serveLocal(server, port);
    },
  };
}

/**
 * An envelope (or any JSON) with what legitimately differs between two runs replaced by
 * placeholders: audit ids, nonces, approval ids, timestamps, signatures, rollback handles,
 * generated idempotency keys and charge references.
 */
export function normalize(value: unknown): unknown {
  const VOLATILE = new Set([
    'audit_id',
    'nonce',
    'approval_id',
    'rollback_handle',
    'attestation',
    'jws',
    'kid',
    'charge_ref',
    'original_audit_id',
    'seq',
    'row_hash',
    'prev_hash',
    'idempotency_key',
  ]);
  const walk = (v: unknown, key?: string): unknown => {
    const base = key?.slice(key.lastIndexOf('/') + 1);
    if (base !== undefined && VOLATILE.has(base) && v !== undefined) return `<${base}>`;
    if (typeof v === 'string') {
      if (v.startsWith('{')) {
        try {
          return JSON.stringify(walk(JSON.parse(v)));
        } catch {
          /* text that merely starts with a brace */
        }
      }
      return (
        v
          .replace(/\bn1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/g, '<nonce>')
          .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})/g, '<time>')
          // table cells show times as "YYYY-MM-DD HH:MM:SS" (the two runs may straddle a second)
          .replace(/\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}/g, '<time>')
          .replace(/\bapv_[A-Za-z0-9_-]+/g, '<approval_id>')
          .replace(/\bch_[A-Za-z0-9]+/g, '<charge_ref>')
          .replace(/"nonce":"[^"]*"/g, '"nonce":"<nonce>"')
          .replace(/audit_id[":\s]+\d+/g, 'audit_id <n>')
          .replace(/idempotency key [0-9a-f]{16}\b/g, 'idempotency key <generated>')
      );
    }
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (v !== null && typeof v === 'object')
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, walk(x, k)]),
      );
    return v;
  };
  return walk(value);
}

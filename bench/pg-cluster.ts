/**
 * A throwaway PostgreSQL cluster (initdb + pg_ctl, as the `postgres` user when run as root) that
 * its owner may stop, restart, stall and resume: the one cluster start of the PostgreSQL benches
 * (bench/pg-faults.ts, bench/postgres.ts) and of the multi-node tests (test/postgres/harness.ts).
 * fsync and full_page_writes are off: disk flushes are not what they measure (an immediate stop
 * keeps the OS page cache, so a commit acknowledged with synchronous_commit=on survives it).
 * Imports nothing of solid-verbs. The binaries: harness.ts findPgBin.
 */
import { spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findPgBin, pgFaultsSkipReason } from './harness.ts';

export { findPgBin };

/** Why no cluster can be started here (no server binaries), or undefined. */
export const clusterSkipReason = pgFaultsSkipReason;

function asPostgres(cmd: string, args: string[]): { status: number | null; out: string } {
  const r =
    process.getuid?.() === 0
      ? spawnSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { encoding: 'utf8' })
      : spawnSync(cmd, args, { encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as import('node:net').AddressInfo).port;
      s.close(() => ok(port));
    });
  });
}

function tail(path: string): string {
  try {
    return readFileSync(path, 'utf8').slice(-2000);
  } catch {
    return '';
  }
}

/** A running throwaway cluster. */
export interface Cluster {
  /** postgres://solid@127.0.0.1:<port>/postgres (trust authentication). */
  url: string;
  /** `pg_ctl stop -m immediate`: like a crash of the server process. */
  kill(): void;
  /** Start it again after kill(). */
  start(): void;
  /** SIGSTOP the postmaster and every backend: a server that stops answering (no reset, no error). */
  stall(): void;
  /** SIGCONT what stall() stopped. */
  resume(): void;
  /** Resume, stop immediately and remove its directory. */
  destroy(): void;
}

export interface ClusterOptions {
  /** Server binaries (default findPgBin()). */
  pgBin?: string;
  /** Directory to hold it (default a new one under the temporary directory), removed by destroy(); run as root, the `postgres` user must be able to reach it. */
  dir?: string;
  /** max_connections (default 100). */
  maxConnections?: number;
}

/** Start a throwaway cluster. Throws with initdb's or pg_ctl's output when it cannot. */
export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const pgBin = options.pgBin ?? findPgBin();
  if (pgBin === undefined) throw new Error(clusterSkipReason());
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'solid-pg-'));
  if (process.getuid?.() === 0) {
    const id = (flag: string) =>
      Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
    chownSync(dir, id('-u'), id('-g'));
  }
  const data = join(dir, 'data');
  const init = asPostgres(join(pgBin, 'initdb'), [
    '-D',
    data,
    '-U',
    'solid',
    '--auth=trust',
    '--no-sync',
    '-E',
    'UTF8',
  ]);
  if (init.status !== 0) throw new Error(`initdb failed: ${init.out}`);
  const port = await freePort();
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=${options.maxConnections ?? 100}`;
  const start = () => {
    const r = asPostgres(join(pgBin, 'pg_ctl'), [
      '-D',
      data,
      '-l',
      join(dir, 'server.log'),
      '-w',
      '-t',
      '30',
      '-o',
      opts,
      'start',
    ]);
    if (r.status !== 0) throw new Error(`pg_ctl start failed: ${r.out}\n${tail(join(dir, 'server.log'))}`);
  };
  start();
  let stopped: number[] = [];
  const serverPids = (): number[] => {
    const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = spawnSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter((l) => l.trim() !== '')
      .map(Number);
    return [postmaster, ...children];
  };
  const kill = () => void asPostgres(join(pgBin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop']);
  const cluster: Cluster = {
    url: `postgres://solid@127.0.0.1:${port}/postgres`,
    kill,
    start,
    stall() {
      stopped = serverPids();
      for (const pid of stopped) process.kill(pid, 'SIGSTOP');
    },
    resume() {
      for (const pid of stopped.splice(0)) {
        try {
          process.kill(pid, 'SIGCONT');
        } catch {
          /* gone */
        }
      }
    },
    destroy() {
      cluster.resume();
      kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}

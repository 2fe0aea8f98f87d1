/**
 * `solid serve`'s default durability makes a receipt durable (issue 30 row 4; spec/store.md
 * §durability; docs/operations.md §durability): a real `solid serve` process, run under strace,
 * syncs the database to disk at least once per write it answers with a receipt (sequential writes:
 * each commit is its own group). With `--durability normal`, the explicit faster choice, the same
 * writes are answered without a sync each. Skipped where strace is missing or cannot trace.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { BIN, dispatchHttp, printedFact } from './serve-process.ts';

const WRITES = 12;

const strace = spawnSync('strace', ['-f', '-qq', '-e', 'trace=fsync', '-o', '/dev/null', 'true']);
const skip =
  strace.error !== undefined || strace.status !== 0 ? 'strace is missing or cannot trace here' : false;

interface Traced {
  base: string;
  stdout: string;
  /** fsync/fdatasync calls the process (all its threads) made so far. */
  syncs(): number;
  stop(): Promise<number | null>;
}

/** `solid serve --port 0 --db <db> …extra` under `strace -f -e trace=fsync,fdatasync`. */
async function tracedServe(t: TestContext, dir: string, db: string, extra: string[]): Promise<Traced> {
  const log = join(dir, `strace-${extra.join('')}.log`);
  const child = spawn(
    'strace',
    [
      '-f',
      '-qq',
      '-e',
      'trace=fsync,fdatasync',
      '-o',
      log,
      process.execPath,
      BIN,
      'serve',
      '--port',
      '0',
      '--db',
      db,
      ...extra,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SOLID_API_KEY: '', SOLID_LOG_LEVEL: 'error' },
    },
  );
  const guard = setTimeout(() => child.kill('SIGKILL'), 120_000); // a guard, not a timing assertion
  t.after(() => {
    clearTimeout(guard);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const base = await new Promise<string>((ok, fail) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /solid serve: ready on (http:\/\/\S+)/.exec(out);
      if (m) ok(m[1]!);
    });
    void exited.then((code) => fail(new Error(`solid serve exited (${code}) before ready:\n${out}\n${err}`)));
  });
  return {
    base,
    stdout: out,
    syncs: () => (readFileSync(log, 'utf8').match(/\b(fsync|fdatasync)\(/g) ?? []).length,
    // SIGTERM goes to `solid serve` itself (strace's child): strace ends when it exits.
    stop: () => {
      const tracee = Number(
        readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/)[0],
      );
      process.kill(tracee, 'SIGTERM');
      return exited;
    },
  };
}

/** WRITES sequential confirmed crm.add_note calls; returns how many were answered with a receipt. */
async function writeNotes(base: string, apiKey: string, contactId: number, tag: string): Promise<number> {
  let receipts = 0;
  for (let i = 0; i < WRITES; i++) {
    const args = { contact_id: contactId, body: `${tag}-${i}` };
    const pre = await dispatchHttp(base, 'crm.add_note', { args }, { key: apiKey });
    assert.equal(pre.status, 202, JSON.stringify(pre.body));
    const nonce = (pre.body.consent as { nonce: string }).nonce;
    const done = await dispatchHttp(base, 'crm.add_note', { args, confirm: true, nonce }, { key: apiKey });
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.equal(typeof done.body.audit_id, 'number', 'a receipt');
    receipts++;
  }
  return receipts;
}

/** Syncs counted once strace has written every line of the calls made so far (it writes as they return). */
async function settledSyncs(s: Traced): Promise<number> {
  let last = -1;
  for (let n = s.syncs(); n !== last; n = s.syncs()) {
    last = n;
    await new Promise((r) => setTimeout(r, 100));
  }
  return last;
}

describe('solid serve: default durability (issue 30 row 4)', { skip, timeout: 240_000 }, () => {
  it('syncs to disk for every receipt by default; --durability normal does not', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'solid-durable-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const db = join(dir, 'solid.db');

    const byDefault = await tracedServe(t, dir, db, ['--demo']);
    const apiKey = printedFact<Record<string, string>>(byDefault.stdout, 'keys').owner!;
    const contactId = printedFact<{ customer_id: number }>(byDefault.stdout, 'fixtures').customer_id;
    const before = await settledSyncs(byDefault);
    const receipts = await writeNotes(byDefault.base, apiKey, contactId, 'default');
    const durable = (await settledSyncs(byDefault)) - before;
    assert.equal(await byDefault.stop(), 0);
    assert.ok(durable >= receipts, `default: ${durable} syncs for ${receipts} receipts (one at least each)`);

    const normal = await tracedServe(t, dir, db, ['--durability', 'normal']);
    const beforeNormal = await settledSyncs(normal);
    const fast = await writeNotes(normal.base, apiKey, contactId, 'normal');
    const lazy = (await settledSyncs(normal)) - beforeNormal;
    assert.equal(await normal.stop(), 0);
    assert.ok(
      lazy < fast,
      `--durability normal: ${lazy} syncs for ${fast} receipts (the explicit faster mode)`,
    );
    t.diagnostic(`default: ${durable} syncs for ${receipts} receipts; normal: ${lazy} for ${fast}`);
  });
});

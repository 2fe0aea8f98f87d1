/**
 * Retention from the command line, as docs/compliance.md §7 tells an operator and an auditor to
 * run it: archive a tenant's rows before a date, then `audit verify` passes from the boundary on
 * (and says so) and, with the archive, over the whole history; a tampered archive fails.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { counterRuntime, consented } from '../support/counter-verbs.ts';
import { runCli } from '../../src/transports/cli/main.ts';
import type { Io } from '../../src/transports/cli/output.ts';
import type { AuditVerifyReport } from '../../src/runtime/ledger/verify/verify.ts';
import { dispatchAs } from '../support/keyed.ts';

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (s) => out.push(s), err: (s) => err.push(s), isTTY: false };
  const code = await runCli(args, io);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** The commands docs/compliance.md gives, with the files and directory placed in the test's dir. */
const DOC_COMMANDS = [
  'solid audit export-keys --tenant 2 --out trusted-keys.json',
  'solid audit archive --tenant 2 --before 2026-11-01 --to audit-archive',
  'solid audit verify --tenant 2 --keys trusted-keys.json',
  'solid audit verify --tenant 2 --keys trusted-keys.json --archive audit-archive',
];

function argv(command: string, db: string, dir: string): string[] {
  return [
    '--db',
    db,
    ...command
      .split(' ')
      .slice(1)
      .map((w) => (w === 'trusted-keys.json' || w === 'audit-archive' ? join(dir, w) : w)),
  ];
}

test('solid audit archive, then audit verify across the boundary — without and with the archive', async (t) => {
  let now = Date.parse('2026-10-01T08:00:00Z');
  const h = await counterRuntime(t, { engine: 'sqlite', clock: () => new Date(now) });
  for (let i = 0; i < 40; i++) {
    await consented(h, h.keys.employee, 'counter.add', { name: `c${i % 3}`, by: i + 1 });
    await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.read_only }, 'counter.get', { name: 'c0' });
    await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.read_only }, 'counter.add', {
      name: 'c0',
      by: 1,
    });
    now += 30 * 3600_000; // 40 rounds ≈ 50 days: October and most of November
    if (i % 5 === 0) await h.rt.checkpoints.checkpointAll();
  }
  await h.rt.close();
  const dir = mkdtempSync(join(tmpdir(), 'solid-archive-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const doc = readFileSync(new URL('../../docs/compliance.md', import.meta.url), 'utf8');
  for (const c of DOC_COMMANDS) assert.ok(doc.includes(c), `docs/compliance.md lacks: ${c}`);

  const [keys, archive, verify, verifyAll] = DOC_COMMANDS.map((c) => argv(c, h.dbPath, dir));
  assert.equal((await cli(keys!)).code, 0);
  const archived = await cli(archive!);
  assert.equal(archived.code, 0, archived.err);
  assert.match(archived.out, /archived and pruned \d+ rows of tenant 2 \(seq 1–\d+\)/);
  assert.equal(readdirSync(join(dir, 'audit-archive')).length, 2, 'the rows file and its manifest');

  const partial = await cli([...verify!, '--json']);
  assert.equal(partial.code, 0, partial.err + partial.out);
  const report = JSON.parse(partial.out) as AuditVerifyReport;
  const through = report.tenants[0]!.archived!.through_seq;
  assert.ok(report.warnings.some((w) => w.includes(`verified from seq ${through + 1} on`)));

  const whole = await cli(verifyAll!);
  assert.equal(whole.code, 0, whole.err + whole.out);
  assert.match(whole.out, /the whole history/);

  // An archive edited after the fact is caught.
  const rows = join(
    dir,
    'audit-archive',
    readdirSync(join(dir, 'audit-archive')).find((f) => f.endsWith('.ndjson'))!,
  );
  const lines = readFileSync(rows, 'utf8').split('\n');
  lines.splice(3, 1); // a row removed
  writeFileSync(rows, lines.join('\n'));
  const caught = await cli(verifyAll!);
  assert.equal(caught.code, 1);
  assert.match(caught.err, /TAMPERED/);
});

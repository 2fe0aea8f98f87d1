/**
 * Audit export (issue 32 rows 1 and 4): the auditor's procedure of docs/compliance.md run as
 * written on a seeded database — export a month of one tenant, export the keys, verify the export
 * offline with no database — then each of the four tamperings of the file an auditor must catch
 * (a row edited, removed, added; the file truncated), an edited manifest, and the CSV form.
 * Spec: spec/audit.md §export.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { counterRuntime, consented } from '../support/counter-verbs.ts';
import { hashAuditRow, type AuditRow } from '../../src/runtime/ledger/write/audit.ts';
import { runCli } from '../../src/transports/cli/main.ts';
import type { Io } from '../../src/transports/cli/output.ts';
import type { ExportVerifyReport } from '../../src/runtime/ledger/verify/export-check.ts';
import type { ExportManifest } from '../../src/runtime/ledger/keys/export-manifest.ts';
import { CSV_COLUMNS } from '../../src/runtime/ledger/verify/export.ts';
import { databaseKeys } from '../../src/runtime/ledger/verify/verify.ts';
import { dispatchAs } from '../support/keyed.ts';

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (s) => out.push(s), err: (s) => err.push(s), isTTY: false };
  const code = await runCli(args, io);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** The commands docs/compliance.md tells an auditor to run, with the placeholders this test fills. */
const DOC_COMMANDS = [
  'solid audit export --tenant 2 --from 2026-11-01 --to 2026-12-01 --out november.ndjson',
  'solid audit export-keys --tenant 2 --out trusted-keys.json',
  'solid audit verify --export november.ndjson --keys trusted-keys.json',
];

/** argv of a documented command, run against `db` in `dir`. */
function argv(command: string, db: string, dir: string): string[] {
  const words = command.split(' ').slice(1);
  return [
    '--db',
    db,
    ...words.map((w) => (/\.(ndjson|csv|json)$/.test(w) && !w.startsWith('--') ? join(dir, w) : w)),
  ];
}

interface Seeded {
  dir: string;
  db: string;
  rows: string;
  keys: string;
}

/** A tenant with activity from mid-October to early December: writes (consented), reads, denials. */
async function seed(t: import('node:test').TestContext): Promise<Seeded> {
  let now = Date.parse('2026-10-20T08:00:00Z');
  const h = await counterRuntime(t, { engine: 'sqlite', clock: () => new Date(now) });
  for (let i = 0; i < 60; i++) {
    await consented(h, h.keys.employee, 'counter.add', { name: `c${i % 3}`, by: i + 1 });
    await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.read_only }, 'counter.get', { name: 'c0' });
    // A denial: a read-only key may not write.
    await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.read_only }, 'counter.add', {
      name: 'c0',
      by: 1,
    });
    now += 19 * 3600_000; // ≈ 19 h between rounds: 60 rounds cover ≈ 47 days
    if (i % 5 === 0) await h.rt.checkpoints.checkpointAll();
  }
  await h.rt.close();
  const dir = mkdtempSync(join(tmpdir(), 'solid-export-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return { dir, db: h.dbPath, rows: join(dir, 'november.ndjson'), keys: join(dir, 'trusted-keys.json') };
}

async function verifyExport(file: string, keys: string, extra: string[] = []) {
  // --db points nowhere: the export verifies with no database at all.
  const r = await cli([
    '--db',
    '/nonexistent/solid.db',
    'audit',
    'verify',
    '--export',
    file,
    '--keys',
    keys,
    '--json',
    ...extra,
  ]);
  return { code: r.code, report: JSON.parse(r.out) as ExportVerifyReport, err: r.err };
}

function kinds(r: ExportVerifyReport): string[] {
  return r.findings.map((f) => f.kind);
}

/** A copy of the export (rows and manifest) under another name, with its rows rewritten by `edit`. */
function tampered(s: Seeded, name: string, edit: (lines: string[]) => string[] | string): string {
  const file = join(s.dir, `${name}.ndjson`);
  const lines = readFileSync(s.rows, 'utf8').split('\n').slice(0, -1);
  const out = edit(lines);
  writeFileSync(file, typeof out === 'string' ? out : out.map((l) => l + '\n').join(''));
  copyFileSync(`${s.rows}.manifest.json`, `${file}.manifest.json`);
  return file;
}

describe('audit export (docs/compliance.md, as an auditor runs it)', () => {
  let s: Seeded;
  let manifest: ExportManifest;
  const cleanups: Array<() => unknown> = [];
  after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  before(async () => {
    // A suite hook has no t.after: the seeded runtime's clean-ups run in the suite's after.
    s = await seed({
      after: (fn: () => unknown) => cleanups.push(fn),
    } as unknown as import('node:test').TestContext);
    for (const command of DOC_COMMANDS.slice(0, 2)) {
      const r = await cli(argv(command, s.db, s.dir));
      assert.equal(r.code, 0, `${command}: ${r.err}`);
    }
    manifest = JSON.parse(readFileSync(`${s.rows}.manifest.json`, 'utf8')) as ExportManifest;
  });

  it('documents exactly the commands this test runs', () => {
    const doc = readFileSync(new URL('../../docs/compliance.md', import.meta.url), 'utf8');
    for (const command of DOC_COMMANDS)
      assert.ok(doc.includes(command), `docs/compliance.md lacks: ${command}`);
  });

  it('exports the month: every row of the tenant in November, contiguous, with its chain heads', () => {
    const db = new Database(s.db, { readonly: true });
    try {
      const expected = db
        .prepare(
          `SELECT MIN(seq) AS lo, MAX(seq) AS hi, COUNT(*) AS n FROM audit_log WHERE company_id = 2 AND created_at >= '2026-11-01' AND created_at < '2026-12-01'`,
        )
        .get() as { lo: number; hi: number; n: number };
      assert.ok(expected.n > 50, `seeded ${expected.n} rows in November`);
      assert.deepEqual(
        [manifest.rows.first_seq, manifest.rows.last_seq, manifest.rows.count],
        [expected.lo, expected.hi, expected.hi - expected.lo + 1],
      );
      const before = db
        .prepare('SELECT row_hash FROM audit_log WHERE company_id = 2 AND seq = ?')
        .get(expected.lo - 1) as {
        row_hash: string;
      };
      assert.equal(manifest.chain.prev_hash, before.row_hash);
      const statuses = new Set(
        readFileSync(s.rows, 'utf8')
          .trim()
          .split('\n')
          .map((l) => (JSON.parse(l) as AuditRow).status),
      );
      assert.ok(
        statuses.has('denied') && statuses.has('completed') && statuses.has('pending'),
        [...statuses].join(),
      );
      assert.ok(manifest.checkpoints.length > 0 && manifest.keys.length > 0);
      // The export itself is in the log, after the range.
      const row = db
        .prepare(
          `SELECT seq, request_data FROM audit_log WHERE company_id = 2 AND action_type = 'audit.export'`,
        )
        .get() as { seq: number; request_data: string };
      assert.ok(row.seq > expected.hi);
      assert.equal((JSON.parse(row.request_data) as { digest: string }).digest, manifest.digest.hex);
    } finally {
      db.close();
    }
  });

  it('verifies offline with the trusted keys and no database', async () => {
    const r = await cli(argv(DOC_COMMANDS[2]!, '/nonexistent/solid.db', s.dir));
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /✓ export of tenant 2/);
    const { report } = await verifyExport(s.rows, s.keys);
    assert.equal(report.ok, true);
    assert.equal(report.rows_checked, manifest.rows.count);
    assert.equal(report.keys_from, 'trusted');
    // Named by its manifest instead of its rows file: the same check.
    const byManifest = await verifyExport(`${s.rows}.manifest.json`, s.keys);
    assert.equal(byManifest.code, 0);
    assert.equal(byManifest.report.rows_file, s.rows);
    assert.ok(report.signed_through !== null && report.signed_through >= manifest.rows.first_seq!);
  });

  it('catches an edited row', async () => {
    const file = tampered(s, 'edited', (lines) => {
      const i = lines.findIndex((l) => l.includes('"counter.add"') && l.includes('"completed"'));
      lines[i] = lines[i]!.replace(/"by":(\d+)/, '"by":9000');
      return lines;
    });
    const { code, report } = await verifyExport(file, s.keys);
    assert.equal(code, 1);
    assert.ok(kinds(report).includes('modified'), kinds(report).join());
    assert.ok(kinds(report).includes('digest_mismatch'));
  });

  it('catches a removed row', async () => {
    const file = tampered(s, 'removed', (lines) => lines.filter((_, i) => i !== 10));
    const { code, report } = await verifyExport(file, s.keys);
    assert.equal(code, 1);
    assert.ok(kinds(report).includes('gap'), kinds(report).join());
    assert.ok(kinds(report).includes('count_mismatch'));
  });

  it('catches an added row, even one hashed and linked like a real one', async () => {
    const file = tampered(s, 'added', (lines) => {
      const last = JSON.parse(lines[lines.length - 1]!) as AuditRow;
      const forged: Omit<AuditRow, 'row_hash'> = {
        ...last,
        audit_id: last.audit_id + 1000,
        seq: last.seq + 1,
        action_type: 'counter.charge',
        request_data: { name: 'c0', cents: 100 },
        prev_hash: last.row_hash,
      };
      return [...lines, JSON.stringify({ ...forged, row_hash: hashAuditRow(forged) })];
    });
    const { code, report } = await verifyExport(file, s.keys);
    assert.equal(code, 1);
    assert.ok(kinds(report).includes('added'), kinds(report).join());
    assert.ok(kinds(report).includes('digest_mismatch'));
  });

  it('catches a truncated file', async () => {
    const file = tampered(s, 'truncated', (lines) => {
      const text = lines.map((l) => l + '\n').join('');
      return text.slice(0, Math.floor(text.length * 0.6));
    });
    const { code, report } = await verifyExport(file, s.keys);
    assert.equal(code, 1);
    assert.ok(kinds(report).includes('truncated'), kinds(report).join());
  });

  it('catches an edited manifest, and says when the keys came from the export itself', async () => {
    const file = tampered(s, 'manifest', (lines) => lines);
    const m = JSON.parse(readFileSync(`${file}.manifest.json`, 'utf8')) as ExportManifest;
    m.from = '2026-11-02T00:00:00.000Z';
    writeFileSync(`${file}.manifest.json`, JSON.stringify(m));
    const { code, report } = await verifyExport(file, s.keys);
    assert.equal(code, 1);
    assert.deepEqual(kinds(report), ['manifest_signature']);
    const own = await cli(['audit', 'verify', '--export', s.rows, '--json']);
    assert.equal(own.code, 0);
    const r = JSON.parse(own.out) as ExportVerifyReport;
    assert.equal(r.keys_from, 'export');
    assert.match(r.warnings.join(), /keys the export carries/);
  });

  it('writes CSV with the documented columns, verified by digest and signature', async () => {
    const csv = join(s.dir, 'november.csv');
    const r = await cli([
      '--db',
      s.db,
      'audit',
      'export',
      '--tenant',
      '2',
      '--from',
      '2026-11-01',
      '--to',
      '2026-12-01',
      '--format',
      'csv',
      '--out',
      csv,
    ]);
    assert.equal(r.code, 0, r.err);
    const text = readFileSync(csv, 'utf8');
    assert.equal(text.split('\r\n')[0], CSV_COLUMNS.join(','));
    const ok = await verifyExport(csv, s.keys);
    assert.equal(ok.code, 0);
    assert.match(ok.report.warnings.join(), /CSV/);
    writeFileSync(csv, text.replace('counter.add', 'counter.adx'));
    const bad = await verifyExport(csv, s.keys);
    assert.equal(bad.code, 1);
    assert.deepEqual(kinds(bad.report), ['digest_mismatch']);
  });

  it('refuses bad flags with an envelope', async () => {
    const r = await cli([
      '--db',
      s.db,
      'audit',
      'export',
      '--tenant',
      '2',
      '--from',
      'last tuesday',
      '--to',
      '2026-12-01',
      '--json',
    ]);
    assert.equal(r.code, 2);
    assert.match(r.out + r.err, /invalid_args/);
    assert.match(r.out + r.err, /--from must be an ISO-8601 date/);
  });
});

describe('audit.export (the HTTP and dashboard form of the export)', () => {
  it('answers the rows file and its signed manifest to an admin, audited, verifiable offline', async (t) => {
    // The engine of the run (SOLID_TEST_ENGINE): the verb reads through either.
    const h = await counterRuntime(t);
    for (let i = 0; i < 5; i++) await consented(h, h.keys.employee, 'counter.add', { name: 'c', by: i + 1 });
    await dispatchAs(h.rt, { surface: 'http', apiKey: h.keys.read_only }, 'counter.add', {
      name: 'c',
      by: 1,
    });
    const now = Date.now();
    const args = { from: new Date(now - 3600_000).toISOString(), to: new Date(now + 3600_000).toISOString() };
    const denied = await dispatchAs(h.rt, { surface: 'http', apiKey: h.keys.employee }, 'audit.export', args);
    assert.equal(denied.error?.reason, 'role_denied');
    const env = await dispatchAs(h.rt, { surface: 'http', apiKey: h.keys.admin }, 'audit.export', args);
    assert.equal(env.ok, true, JSON.stringify(env.error));
    const data = (env.result as { data: Record<string, unknown> }).data as {
      exported: boolean;
      rows_file: { name: string; content: string };
      manifest_file: string;
      manifest: ExportManifest;
    };
    assert.equal(data.exported, true);
    assert.ok(data.manifest.rows.count >= 11, String(data.manifest.rows.count));
    const dir = mkdtempSync(join(tmpdir(), 'solid-export-verb-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, data.rows_file.name);
    writeFileSync(file, data.rows_file.content);
    writeFileSync(join(dir, data.manifest_file), JSON.stringify(data.manifest));
    const { code, report } = await verifyExport(file, await keysFile(h, dir));
    assert.equal(code, 0, JSON.stringify(report.findings));
    const trail = await dispatchAs(h.rt, { surface: 'http', apiKey: h.keys.owner }, 'audit.trail', {
      verb: 'audit.export',
    });
    // The trail writes the tenant's buffered read rows first (spec/audit.md §read-rows).
    const list = (trail.result as { entries: Array<{ status: string }> }).entries;
    assert.deepEqual(list.map((e) => e.status).sort(), ['completed', 'denied']);
  });
});

/** The tenant's public keys as `solid audit export-keys` writes them. */
async function keysFile(h: import('../support/runtime.ts').TestRuntime, dir: string): Promise<string> {
  const keys = await h.rt.store.read((q) => databaseKeys(q, h.companyId));
  const path = join(dir, 'keys.json');
  writeFileSync(path, JSON.stringify({ keys }));
  return path;
}

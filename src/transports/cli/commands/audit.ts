/**
 * `solid audit verify [--tenant N] [--json] [--keys jwks.json]`: walk the tamper-evident audit log
 * offline — the database file is read directly, no runtime, no secrets — and report modified rows,
 * broken links, gaps, truncation and bad checkpoint signatures. Exit 0 when intact, 1 on any
 * finding (store_unavailable's exit code when the database cannot be read). A progress bar shows
 * on stderr for long logs when stderr is a terminal.
 *
 * `solid audit export-keys [--tenant N] [--out file]`: write the tenants' public keys (a JWKS)
 * with their latest signed checkpoints, to keep somewhere else and pass later as `--keys`: the
 * trust anchor that catches a database rewritten together with its keys.
 *
 * Spec: spec/audit.md §verify.
 */
import { createRequire } from 'node:module';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { databaseUrlOf, dbPathOf } from '../local.ts';
import type { Io } from '../output.ts';
import {
  KEY_FILE_HINT,
  databaseKeys,
  latestCheckpoints,
  openAuditDatabase,
  parseTrustFile,
  UNSIGNED_TAIL_LIMITS,
  SAME_STORE_WARNING,
  verifyStoreChain,
  type AuditVerifyReport,
  type TrustFile,
} from '../../../runtime/ledger/verify/verify.ts';
import { verifyDatabaseFile } from '../../../runtime/ledger/verify/verify-file.ts';
import { sqliteQueryable } from '../../../store/sqlite/audit-file.ts';
import { VerbError } from '../../../runtime/errors.ts';
import type { Queryable, Store } from '../../../store/store.ts';
import {
  PostgresStore,
  describeUrl,
  postgresOptionsFromEnv,
} from '../../../store/postgres/postgres-store.ts';
import { cliRefuse } from '../refusals.ts';
import { checkAnchoredHeads, mergeTrust, readAnchors } from '../../../runtime/ledger/verify/anchors.ts';

/** Where the audit log is read from: a SQLite file opened read-only, or a PostgreSQL database. */
export interface AuditSource {
  kind: 'sqlite' | 'postgres';
  /** File path, or the URL without secrets. */
  path: string;
  q: Queryable;
  store?: Store;
  close(): Promise<void>;
}

/**
 * Open the audit log named by --db / SOLID_DB / SOLID_DATABASE_URL without starting a runtime
 * (no keyfile, no migrations). Undefined when a SQLite file is absent and `mustExist` is false;
 * otherwise a missing database throws store_unavailable.
 */
export async function openAuditSource(
  db: string | undefined,
  mustExist = true,
): Promise<AuditSource | undefined> {
  const url = databaseUrlOf(db);
  if (url !== undefined) {
    const store = new PostgresStore(postgresOptionsFromEnv(url));
    const q: Queryable = {
      get: (sql, params) => store.read((r) => r.get(sql, params)),
      all: (sql, params) => store.read((r) => r.all(sql, params)),
      run: () => Promise.reject(cliRefuse.readOnlyAuditSource()),
    };
    return { kind: 'postgres', path: describeUrl(url), q, store, close: () => store.close() };
  }
  const path = dbPathOf(db);
  if (!existsSync(path) && !mustExist) return undefined;
  const file = openAuditDatabase(path);
  return {
    kind: 'sqlite',
    path,
    q: sqliteQueryable(file),
    close: async () => {
      file.close();
    },
  };
}

/** Exit code of a verification with findings. */
export const EXIT_TAMPERED = 1;
/** Logs at least this long get a progress bar (on a terminal). */
const PROGRESS_MIN_ROWS = 50_000;

interface ProgressBar {
  start(total: number, value: number): void;
  update(value: number): void;
  stop(): void;
}

function progressBar(total: number): ProgressBar | undefined {
  if (total < PROGRESS_MIN_ROWS || !process.stderr.isTTY) return undefined;
  const require = createRequire(import.meta.url);
  const cliProgress = require('cli-progress') as {
    SingleBar: new (opts: Record<string, unknown>, preset: unknown) => ProgressBar;
    Presets: { shades_classic: unknown };
  };
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: 'verifying audit log [{bar}] {percentage}% | {value}/{total} rows | eta {eta}s',
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0);
  return bar;
}

function parseTenant(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw cliRefuse.tenantFlag(value);
  return n;
}

/** `--max-unsigned-seconds`: a positive number of seconds, or Infinity. */
function parseSeconds(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = value === 'Infinity' ? Number.POSITIVE_INFINITY : Number(value);
  if (!(n > 0) || Number.isNaN(n))
    throw new VerbError(
      'invalid_args',
      `--max-unsigned-seconds must be a positive number of seconds, got ${JSON.stringify(value.slice(0, 40))}.`,
      {
        hint: `e.g. --max-unsigned-seconds 600 (the default is ${UNSIGNED_TAIL_LIMITS.seconds}), or Infinity to turn the check off.`,
      },
    );
  return n;
}

function readTrust(path: string | undefined): TrustFile | undefined {
  if (path === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new VerbError('invalid_args', `Cannot read the key file ${path}: ${(err as Error).message}`, {
      hint: KEY_FILE_HINT,
    });
  }
  return parseTrustFile(text);
}

/** Human rendering of a verification report. */
export function renderVerifyReport(report: AuditVerifyReport): string {
  const lines: string[] = [];
  for (const t of report.tenants) {
    const signed =
      t.last_signed_seq === null
        ? 'no signed checkpoint'
        : `signed up to seq ${t.last_signed_seq}${t.unsigned_rows > 0 ? `, ${t.unsigned_rows} newer rows not yet signed` : ''}`;
    if (t.ok) {
      lines.push(
        `✓ tenant ${t.company_id}: ${t.rows_checked} rows, chain intact through seq ${t.last_seq}; ${t.checkpoints_checked} checkpoints (${signed})`,
      );
    } else {
      lines.push(
        `✗ tenant ${t.company_id}: ${t.finding_count} finding${t.finding_count === 1 ? '' : 's'} in ${t.rows_checked} rows`,
      );
      for (const f of t.findings)
        lines.push(
          `    ${f.kind.padEnd(13)} ${f.seq !== undefined ? `seq ${f.seq}` : ''}${f.audit_id !== undefined ? ` (audit_id ${f.audit_id})` : ''}  ${f.message}`,
        );
      if (t.findings.length < t.finding_count)
        lines.push(`    … and ${t.finding_count - t.findings.length} more (see --json)`);
    }
  }
  if (report.tenants.length === 0) lines.push('(the audit log is empty)');
  for (const w of report.warnings) lines.push(`! ${w}`);
  lines.push(
    `${report.ok ? 'OK' : 'TAMPERED'}: ${report.rows_checked} rows in ${(report.elapsed_ms / 1000).toFixed(2)} s (${report.rows_per_second.toLocaleString('en-US')} rows/s)`,
  );
  return lines.join('\n');
}

export function registerAudit(program: Command, io: Io, setExit: (code: number) => void): void {
  const audit = program
    .command('audit')
    .description('The tamper-evident audit log: verify it offline, export its public keys');
  audit
    .command('verify')
    .description('Walk the hash chain and checkpoint signatures; exit non-zero on any finding')
    .option('--tenant <company_id>', 'only this tenant')
    .option('--json', 'print the report as JSON')
    .option(
      '--keys <jwks.json>',
      'trusted public keys (and checkpoints) exported earlier with `solid audit export-keys`',
    )
    .option(
      '--anchors <dir>',
      'anchors published outside the database (`solid serve --anchor-dir`): trust only their keys, and fail on any rewrite or rollback before the last anchor',
    )
    .option(
      '--max-unsigned-seconds <s>',
      `longest span of rows after a tenant's last checkpoint before it is the finding unsigned_tail (default ${UNSIGNED_TAIL_LIMITS.seconds}; Infinity: off)`,
    )
    .action(
      async (opts: {
        tenant?: string;
        json?: boolean;
        keys?: string;
        anchors?: string;
        maxUnsignedSeconds?: string;
      }) => {
        const tenant = parseTenant(opts.tenant);
        const anchors = opts.anchors === undefined ? undefined : readAnchors(opts.anchors);
        const trust =
          anchors === undefined ? readTrust(opts.keys) : mergeTrust(readTrust(opts.keys), anchors.trust);
        const maxUnsignedSeconds = parseSeconds(opts.maxUnsignedSeconds);
        const source = await openAuditSource(program.opts<{ db?: string }>().db);
        let bar: ProgressBar | undefined;
        let report: AuditVerifyReport;
        const options = {
          ...(tenant !== undefined ? { tenant } : {}),
          ...(trust !== undefined ? { trust } : {}),
          ...(maxUnsignedSeconds !== undefined ? { maxUnsignedSeconds } : {}),
          onStart: (n: number) => {
            bar = opts.json ? undefined : progressBar(n);
          },
          onProgress: (n: number) => bar?.update(n),
        };
        try {
          if (source!.kind === 'sqlite') {
            await source!.close();
            report = await verifyDatabaseFile(source!.path, options);
          } else {
            report = await verifyStoreChain(source!.store!, options);
          }
        } finally {
          bar?.stop();
          if (source!.kind !== 'sqlite') await source!.close();
        }
        if (anchors !== undefined) {
          checkAnchoredHeads(report, anchors, tenant);
          report.warnings = report.warnings.filter((w) => w !== SAME_STORE_WARNING);
          report.warnings.push(
            `Verified against ${anchors.documents} anchor document${anchors.documents === 1 ? '' : 's'} from ${opts.anchors} (keys and heads published outside the database).`,
            ...anchors.unreadable.map((f) => `${f} is not an anchor document (skipped).`),
          );
        }
        if (opts.json) io.out(JSON.stringify(report, null, 2));
        else (report.ok ? io.out : io.err)(renderVerifyReport(report));
        setExit(report.ok ? 0 : EXIT_TAMPERED);
      },
    );
  audit
    .command('export-keys')
    .description(
      'Write the public keys and latest signed checkpoints (a JWKS) to keep elsewhere as the trust anchor',
    )
    .option('--tenant <company_id>', 'only this tenant')
    .option('--out <file>', 'write to this file instead of stdout')
    .action(async (opts: { tenant?: string; out?: string }) => {
      const tenant = parseTenant(opts.tenant);
      const source = (await openAuditSource(program.opts<{ db?: string }>().db))!;
      let doc: { keys: unknown[]; checkpoints: unknown[]; exported_at: string };
      try {
        doc = {
          keys: await databaseKeys(source.q, tenant),
          checkpoints: await latestCheckpoints(source.q, tenant),
          exported_at: new Date().toISOString(),
        };
      } finally {
        await source.close();
      }
      const text = JSON.stringify(doc, null, 2);
      if (opts.out !== undefined) {
        writeFileSync(opts.out, text + '\n');
        io.err(
          `✓ wrote ${doc.keys.length} public keys and ${doc.checkpoints.length} checkpoints to ${opts.out}; keep it outside this machine and verify with --keys ${opts.out}`,
        );
      } else {
        io.out(text);
      }
      setExit(0);
    });
}

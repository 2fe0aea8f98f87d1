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
 * `solid audit export --tenant N --from ISO --to ISO [--format ndjson|csv] [--out FILE]`: the
 * tenant's rows of a period with a signed manifest (`<FILE>.manifest.json`), audited as an
 * `audit.export` row; `solid audit verify --export FILE` checks such an export offline, with no
 * database (spec/audit.md §export).
 *
 * Spec: spec/audit.md §verify, §export.
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
import { storedContinuity } from '../../../runtime/ledger/verify/continuity-check.ts';
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
import { checkAnchoredHeads, mergeTrust, readAnchorsAt } from '../../../runtime/ledger/verify/anchors.ts';
import { writeAuditExport } from '../../../runtime/ledger/verify/export.ts';
import { verifyAuditExport, type ExportVerifyReport } from '../../../runtime/ledger/verify/export-check.ts';
import type { ExportFormat } from '../../../runtime/ledger/keys/export-manifest.ts';
import type { AuditFinding } from '../../../runtime/ledger/verify/chain-walk.ts';
import { appendOperatorAudit } from '../../../runtime/ledger/write/operator-audit.ts';
import { localOptionsOf, openLocal } from '../local.ts';
import { archiveAuditLog, checkArchives } from '../../../runtime/ledger/retention/archive.ts';

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

/** `--from` / `--to`: an ISO-8601 date or date-time (a date alone is midnight UTC). @throws VerbError invalid_args */
function parseInstant(flag: string, value: string): Date {
  const d = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value)
    ? new Date(value)
    : undefined;
  if (d === undefined || Number.isNaN(d.getTime()))
    throw new VerbError(
      'invalid_args',
      `${flag} must be an ISO-8601 date or date-time, got ${JSON.stringify(value.slice(0, 40))}.`,
      {
        hint: `e.g. ${flag} 2026-11-01 or ${flag} 2026-11-01T00:00:00Z (a date alone is midnight UTC).`,
      },
    );
  return d;
}

/** One finding as a report line. */
function findingLine(f: Pick<AuditFinding, 'seq' | 'audit_id' | 'message'> & { kind: string }): string {
  return `    ${f.kind.padEnd(18)} ${f.seq !== undefined ? `seq ${f.seq}` : ''}${f.audit_id !== undefined ? ` (audit_id ${f.audit_id})` : ''}  ${f.message}`;
}

/** Human rendering of an export verification. */
export function renderExportReport(r: ExportVerifyReport): string {
  const lines: string[] = [];
  const range = r.first_seq === null ? 'no rows' : `seq ${r.first_seq}–${r.last_seq}`;
  if (r.ok) {
    lines.push(
      `✓ export of tenant ${r.company_id}, ${r.from} to ${r.to}: ${r.format === 'ndjson' ? `${r.rows_checked} rows re-hashed and linked` : `${r.rows_expected} rows (CSV: digest only)`}, ${range}; manifest signed by ${r.manifest_kid} (${r.keys_from === 'trusted' ? 'a trusted key' : 'a key the export carries'})${r.signed_through !== null ? `; checkpoints signed through seq ${r.signed_through}` : ''}`,
    );
  } else {
    lines.push(
      `✗ export of tenant ${r.company_id}, ${r.from} to ${r.to}: ${r.finding_count} finding${r.finding_count === 1 ? '' : 's'} (${r.rows_checked} of ${r.rows_expected} rows read)`,
    );
    for (const f of r.findings) lines.push(findingLine(f));
    if (r.findings.length < r.finding_count)
      lines.push(`    … and ${r.finding_count - r.findings.length} more (see --json)`);
  }
  for (const w of r.warnings) lines.push(`! ${w}`);
  lines.push(
    `${r.ok ? 'OK' : 'TAMPERED'}: ${r.rows_file} (${r.rows_checked} rows in ${(r.elapsed_ms / 1000).toFixed(2)} s)`,
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
      '--anchors <dir|s3://bucket/prefix>',
      'anchors published outside the database (`solid serve --anchor-dir` or `--anchor-s3`): trust only their keys, and fail on any rewrite or rollback before the last anchor',
    )
    .option(
      '--max-unsigned-seconds <s>',
      `longest span of rows after a tenant's last checkpoint before it is the finding unsigned_tail (default ${UNSIGNED_TAIL_LIMITS.seconds}; Infinity: off)`,
    )
    .option(
      '--export <file>',
      'verify an export (`solid audit export`) offline instead of the database: its rows file or its manifest',
    )
    .option('--manifest <file>', 'with --export: the manifest, when it is not <file>.manifest.json')
    .option(
      '--archive <dir>',
      'the archive directory of pruned rows (`solid audit archive --to`): verify the whole history, not only from the boundary on',
    )
    .action(
      async (opts: {
        tenant?: string;
        json?: boolean;
        keys?: string;
        anchors?: string;
        maxUnsignedSeconds?: string;
        export?: string;
        manifest?: string;
        archive?: string;
      }) => {
        const tenant = parseTenant(opts.tenant);
        const anchors = opts.anchors === undefined ? undefined : await readAnchorsAt(opts.anchors);
        const trust =
          anchors === undefined ? readTrust(opts.keys) : mergeTrust(readTrust(opts.keys), anchors.trust);
        if (opts.export !== undefined) {
          // Offline: the files and the keys only; no database is opened.
          const report = await verifyAuditExport(opts.export, {
            ...(opts.manifest !== undefined ? { manifest: opts.manifest } : {}),
            ...(trust !== undefined ? { trust } : {}),
          });
          if (opts.json) io.out(JSON.stringify(report, null, 2));
          else (report.ok ? io.out : io.err)(renderExportReport(report));
          setExit(report.ok ? 0 : EXIT_TAMPERED);
          return;
        }
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
        if (opts.archive !== undefined && report.tenants.some((x) => x.archived !== undefined)) {
          const again = await openAuditSource(program.opts<{ db?: string }>().db);
          try {
            await checkArchives(report, await storedContinuity(again!.q, tenant), opts.archive, trust);
          } finally {
            await again!.close();
          }
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
    .command('export')
    .description(
      "Write a tenant's audit rows of a period with a signed manifest, to verify offline with `audit verify --export`",
    )
    .requiredOption('--tenant <company_id>', 'the tenant')
    .requiredOption('--from <iso>', 'first instant (inclusive), e.g. 2026-11-01')
    .requiredOption('--to <iso>', 'end instant (exclusive), e.g. 2026-12-01')
    .option('--format <ndjson|csv>', 'rows file format (only NDJSON verifies row by row)', 'ndjson')
    .option(
      '--out <file>',
      'rows file (default audit-<tenant>-<from>-<to>.<format>); the manifest goes beside it',
    )
    .option('--json', 'print the manifest as JSON')
    .action(
      async (opts: {
        tenant: string;
        from: string;
        to: string;
        format: string;
        out?: string;
        json?: boolean;
      }) => {
        const tenant = parseTenant(opts.tenant)!;
        const from = parseInstant('--from', opts.from);
        const to = parseInstant('--to', opts.to);
        if (to.getTime() <= from.getTime())
          throw new VerbError(
            'invalid_args',
            `--to (${to.toISOString()}) must be after --from (${from.toISOString()}).`,
            {
              hint: 'e.g. --from 2026-11-01 --to 2026-12-01 for November.',
            },
          );
        if (opts.format !== 'ndjson' && opts.format !== 'csv')
          throw new VerbError(
            'invalid_args',
            `--format must be ndjson or csv, got ${JSON.stringify(opts.format.slice(0, 20))}.`,
            {
              hint: 'NDJSON verifies row by row; CSV is for spreadsheets (digest and signature only).',
            },
          );
        const format = opts.format as ExportFormat;
        const day = (d: Date) => d.toISOString().slice(0, 10);
        const out = opts.out ?? `audit-${tenant}-${day(from)}-${day(to)}.${format}`;
        const local = await openLocal(localOptionsOf(program));
        try {
          const rt = local.rt;
          if ((await rt.tenants.get(tenant)) === undefined)
            throw new VerbError('not_found', `No tenant ${tenant} in this database.`, {
              hint: 'List tenants with `solid tenant show` or check --db.',
            });
          const now = rt.clock();
          const result = await writeAuditExport(rt.store, rt.keys, {
            companyId: tenant,
            from,
            to,
            format,
            out,
            now,
          });
          if (!result.ok) {
            io.err(
              [
                `✗ not exported: the rows of tenant ${tenant} in this period do not verify in the database (${result.finding_count} finding${result.finding_count === 1 ? '' : 's'}); no file was written.`,
                ...result.findings.map(findingLine),
                'Run `solid audit verify --tenant ' + tenant + '` for the whole chain.',
              ].join('\n'),
            );
            setExit(EXIT_TAMPERED);
            return;
          }
          const m = result.manifest;
          await rt.store.write((tx) =>
            appendOperatorAudit(tx, {
              company_id: tenant,
              action: 'audit.export',
              category: 'audit',
              request_data: {
                from: m.from,
                to: m.to,
                format,
                rows: m.rows.count,
                first_seq: m.rows.first_seq,
                last_seq: m.rows.last_seq,
                digest: m.digest.hex,
              },
              entity_type: 'audit_export',
              entity_id: m.digest.hex.slice(0, 16),
              now,
            }),
          );
          if (opts.json) io.out(JSON.stringify(m, null, 2));
          else
            io.out(
              `✓ wrote ${m.rows.count} rows of tenant ${tenant}${m.rows.first_seq === null ? '' : ` (seq ${m.rows.first_seq}–${m.rows.last_seq})`} to ${result.rowsPath} and the signed manifest to ${result.manifestPath}\n  verify anywhere, offline: solid audit verify --export ${result.rowsPath} --keys <keys from solid audit export-keys>`,
            );
          setExit(0);
        } finally {
          await local.close();
        }
      },
    );
  audit
    .command('archive')
    .description(
      "Archive a tenant's rows created before a date to a verified export, then prune them behind a signed continuity record",
    )
    .requiredOption('--tenant <company_id>', 'the tenant')
    .requiredOption('--before <iso>', 'archive rows created before this instant, e.g. 2026-01-01')
    .requiredOption('--to <dir>', 'the archive directory (created if missing); keep it, and a copy elsewhere')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { tenant: string; before: string; to: string; json?: boolean }) => {
      const tenant = parseTenant(opts.tenant)!;
      const before = parseInstant('--before', opts.before);
      const local = await openLocal(localOptionsOf(program));
      try {
        const rt = local.rt;
        if ((await rt.tenants.get(tenant)) === undefined)
          throw new VerbError('not_found', `No tenant ${tenant} in this database.`, {
            hint: 'List tenants with `solid tenant show` or check --db.',
          });
        await rt.auditBuffer.flush();
        const result = await archiveAuditLog(rt.store, rt.keys, {
          companyId: tenant,
          before,
          dir: opts.to,
          now: rt.clock(),
        });
        if (!result.ok) {
          io.err(
            [
              `✗ not archived: the rows of tenant ${tenant} before ${before.toISOString()} do not verify (${result.finding_count} finding${result.finding_count === 1 ? '' : 's'}); nothing was pruned.`,
              ...result.findings.map(findingLine),
            ].join('\n'),
          );
          setExit(EXIT_TAMPERED);
          return;
        }
        if (opts.json) io.out(JSON.stringify(result, null, 2));
        else if (result.record === null)
          io.out(
            `✓ nothing to archive for tenant ${tenant} before ${before.toISOString()}${result.held_by_streams !== null ? ` (audit streams have handed over rows up to seq ${result.held_by_streams} only)` : ''}`,
          );
        else
          io.out(
            `✓ archived and pruned ${result.archived} rows of tenant ${tenant} (seq ${result.record.rows.first_seq}–${result.record.rows.last_seq}) to ${result.rowsPath}; signed continuity record at seq ${result.record.rows.last_seq}${result.held_by_streams !== null ? ` (held at the rows audit streams have handed over)` : ''}\n  verify: solid audit verify --tenant ${tenant} --archive ${opts.to}`,
          );
        setExit(0);
      } finally {
        await local.close();
      }
    });
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

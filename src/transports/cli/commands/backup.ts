/**
 * `solid backup <file> [--force] [--json]`: copy the SQLite database (`--db` / SOLID_DB) into
 * `<file>` with SQLite's online backup API while the server keeps running, verify the copy —
 * structure, audit chain, checkpoint signatures, stored receipts, and every tenant's head at
 * least where the live database's was when the copy began — and only then publish it (atomic
 * rename; a copy that fails is never left under `<file>`). An existing `<file>` needs --force.
 *
 * `solid restore <file> [--force] [--anchors DIR] [--json]`: verify the backup the same way, refuse a database
 * another process holds open (a running `solid serve`) unless --force, name every tenant the
 * restore rolls back (the database in place is ahead of the backup: receipts handed out since
 * will no longer be in the log) and, with --anchors, every tenant whose anchored head the backup
 * is older than, write the backup into the database with the backup API (one
 * transaction: the old or the new database, never a mix), and verify the result.
 *
 * PostgreSQL: refused with the pg_dump / pg_restore procedure of docs/operations.md as the hint;
 * `solid audit verify --db postgres://…` is the check of a restored PostgreSQL database.
 *
 * Exit codes: 0 done, 1 the copy does not verify (nothing published or replaced), 2 usage (an
 * existing file, a database in use, PostgreSQL), 8 store_unavailable.
 * Spec: spec/audit.md §backup.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { databaseUrlOf, dbPathOf, keyfileOf } from '../local.ts';
import type { Io } from '../output.ts';
import { VerbError } from '../../../runtime/errors.ts';
import {
  partialPathOf,
  publishFile,
  removeDatabaseFiles,
  sqliteInUse,
  sqliteOnlineBackup,
  sqliteRestoreInto,
} from '../../../store/sqlite/backup.ts';
import {
  checkDatabaseCopy,
  headsBehind,
  readChainHeads,
  type CopyCheck,
  type HeadBehind,
} from '../../../runtime/ledger/verify/backup-check.ts';
import { StoreError } from '../../../store/store.ts';
import { EXIT_TAMPERED, renderVerifyReport } from './audit.ts';
import { readAnchorsAt } from '../../../runtime/ledger/verify/anchors.ts';

const PG_HINT =
  'For PostgreSQL use pg_dump / pg_restore and check the restored database with `solid audit verify --db postgres://…` (docs/operations.md, "Backup and restore").';

/** The SQLite database of --db, or the envelope refusal for PostgreSQL. */
function sqlitePathOf(program: Command, what: string): string {
  const db = program.opts<{ db?: string }>().db;
  if (databaseUrlOf(db) !== undefined)
    throw new VerbError('invalid_request', `solid ${what} works on a SQLite database file.`, {
      hint: PG_HINT,
    });
  return dbPathOf(db);
}

function storeError(err: unknown): never {
  if (err instanceof StoreError)
    throw new VerbError('store_unavailable', err.message, {
      hint: 'Check the path (--db / SOLID_DB, the backup file) and its permissions.',
    });
  throw err;
}

/** The lines that say why a copy does not verify (structure, heads behind), above the audit report. */
function copyProblems(check: CopyCheck, what: string): string[] {
  const lines: string[] = [];
  for (const m of check.structure) lines.push(`✗ ${what}: SQLite integrity: ${m}`);
  for (const b of check.behind)
    lines.push(
      `✗ ${what}: tenant ${b.company_id} ends at seq ${b.seq}, but the database was at seq ${b.other_seq} when the copy began: commits are missing`,
    );
  return lines;
}

function rollbackLine(b: HeadBehind): string {
  return `! tenant ${b.company_id}: the database in place is at seq ${b.other_seq}, the backup at seq ${b.seq}: the restore rolls back ${b.other_seq - b.seq} audit rows; receipts handed out for them will no longer verify against the log`;
}

export function registerBackup(program: Command, io: Io, setExit: (code: number) => void): void {
  program
    .command('backup <file>')
    .description(
      'Copy the SQLite database with the online backup API (the server may keep running) and verify the copy',
    )
    .option('--force', 'overwrite an existing <file>')
    .option('--json', 'print the result as JSON')
    .action(async (file: string, opts: { force?: boolean; json?: boolean }) => {
      const source = sqlitePathOf(program, 'backup');
      const dest = resolve(file);
      if (!existsSync(source))
        throw new VerbError('store_unavailable', `There is no database at ${source}.`, {
          hint: 'Pass the solid database with --db (or SOLID_DB).',
        });
      if (dest === source)
        throw new VerbError('invalid_args', 'The backup file cannot be the database itself.', {
          hint: 'Name another file, e.g. backups/solid-$(date +%F).db',
        });
      if (existsSync(dest) && !opts.force)
        throw new VerbError('invalid_args', `${dest} exists; nothing was written.`, {
          hint: 'Name a new file, or pass --force to replace it.',
        });
      const before = readChainHeads(source);
      const partial = partialPathOf(dest);
      let check: CopyCheck;
      try {
        await sqliteOnlineBackup(source, partial);
        check = await checkDatabaseCopy(partial, { expectHeads: before });
      } catch (err) {
        removeDatabaseFiles(partial);
        storeError(err);
      }
      if (!check.ok) {
        removeDatabaseFiles(partial);
        if (opts.json) io.out(JSON.stringify({ ok: false, file: dest, ...summary(check) }, null, 2));
        else {
          for (const l of copyProblems(check, 'backup')) io.err(l);
          io.err(renderVerifyReport(check.report));
          io.err(
            `✗ the copy does not verify: nothing was written to ${dest}. Run \`solid audit verify\` on ${source} to see what the database itself holds.`,
          );
        }
        setExit(EXIT_TAMPERED);
        return;
      }
      removeDatabaseFiles(dest);
      publishFile(partial, dest);
      const keyfile = keyfileOf(source);
      if (opts.json) io.out(JSON.stringify({ ok: true, file: dest, ...summary(check) }, null, 2));
      else {
        io.out(
          `✓ backup ${dest}: ${check.report.rows_checked} audit rows in ${check.heads.length} tenant${check.heads.length === 1 ? '' : 's'}, ${check.report.receipts_checked ?? 0} receipts; chain, checkpoints and receipts verified`,
        );
        for (const h of check.heads) io.out(`  tenant ${h.company_id}: head seq ${h.audit_seq}`);
      }
      if (existsSync(keyfile))
        io.err(
          `! the keyfile ${keyfile} is not in the backup (it holds the secrets that decrypt the signing keys): keep a copy of it somewhere safe, apart from the backups; a restored database needs it beside it`,
        );
      setExit(0);
    });

  program
    .command('restore <file>')
    .description(
      'Verify a backup made by `solid backup` and write it into the SQLite database (refuses a database in use)',
    )
    .option('--force', 'restore even into a database another process holds open (restart that process after)')
    .option(
      '--anchors <dir|s3://bucket/prefix>',
      'anchors published outside the database (a directory or an S3 bucket): name each tenant the backup is older than its anchored head',
    )
    .option('--json', 'print the result as JSON')
    .action(async (file: string, opts: { force?: boolean; json?: boolean; anchors?: string }) => {
      const target = sqlitePathOf(program, 'restore');
      const anchors = opts.anchors === undefined ? undefined : await readAnchorsAt(opts.anchors);
      const backup = resolve(file);
      if (!existsSync(backup))
        throw new VerbError('invalid_args', `There is no backup file at ${backup}.`, {
          hint: 'Pass a file written by `solid backup`.',
        });
      if (backup === target)
        throw new VerbError('invalid_args', 'The backup file is the database itself.', {
          hint: 'Pass --db with the database to restore into.',
        });
      let check: CopyCheck;
      try {
        check = await checkDatabaseCopy(backup);
      } catch (err) {
        storeError(err);
      }
      if (!check.ok) {
        if (opts.json) io.out(JSON.stringify({ ok: false, file: backup, ...summary(check) }, null, 2));
        else {
          for (const l of copyProblems(check, 'restore')) io.err(l);
          io.err(renderVerifyReport(check.report));
          io.err(`✗ the backup does not verify: ${target} was not touched.`);
        }
        setExit(EXIT_TAMPERED);
        return;
      }
      const olderThanAnchor: HeadBehind[] =
        anchors === undefined
          ? []
          : headsBehind(
              check.heads,
              [...anchors.newest.values()].map((c) => ({
                company_id: c.company_id,
                audit_seq: c.seq,
                audit_hash: c.head_hash,
              })),
            );
      let rolledBack: HeadBehind[] = [];
      const exists = existsSync(target);
      if (exists) {
        const inUse = sqliteInUse(target);
        if (inUse && !opts.force)
          throw new VerbError(
            'invalid_request',
            `${target} is open in another process (a running solid serve?); nothing was restored.`,
            { hint: 'Stop the server first, or pass --force and restart it after the restore.' },
          );
        try {
          rolledBack = headsBehind(check.heads, readChainHeads(target));
        } catch {
          io.err(`! ${target} cannot be read as a solid database; it is replaced as a whole`);
        }
      }
      let after: CopyCheck;
      try {
        await sqliteRestoreInto(backup, target);
        after = await checkDatabaseCopy(target, { expectHeads: check.heads });
      } catch (err) {
        storeError(err);
      }
      if (opts.json)
        io.out(
          JSON.stringify(
            {
              ok: after.ok,
              file: backup,
              database: target,
              rolled_back: rolledBack,
              older_than_anchor: olderThanAnchor,
              ...summary(after),
            },
            null,
            2,
          ),
        );
      else {
        for (const b of rolledBack) io.err(rollbackLine(b));
        for (const b of olderThanAnchor)
          io.err(
            `! tenant ${b.company_id}: the backup ends at seq ${b.seq}, older than the head anchored outside the database at seq ${b.other_seq}: this restore is a rollback, and \`solid audit verify --anchors\` will report it (rolled_back)`,
          );
        if (after.ok)
          io.out(
            `✓ restored ${target} from ${backup}: ${after.report.rows_checked} audit rows, ${after.report.receipts_checked ?? 0} receipts; verified`,
          );
        else {
          for (const l of copyProblems(after, 'restore')) io.err(l);
          io.err(renderVerifyReport(after.report));
        }
      }
      if (!existsSync(keyfileOf(target)))
        io.err(
          `! no keyfile at ${keyfileOf(target)}: put the database's keyfile back there (or set SOLID_MASTER_KEY) before starting the server`,
        );
      setExit(after.ok ? 0 : EXIT_TAMPERED);
    });
}

function summary(check: CopyCheck): Record<string, unknown> {
  return {
    structure: check.structure,
    behind: check.behind,
    heads: check.heads,
    report: check.report,
  };
}

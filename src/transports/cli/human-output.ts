/**
 * Human output of the CLI (without --json; --json stays the machine contract, untouched):
 *
 *   a result object        aligned key/value lines; a nested object is an indented block
 *   a list of objects      a table (columns: the scalar members, in first-seen order, at most 8;
 *                          cells cut at 48 characters with "…")
 *   a list of scalars      one comma-separated line ("(none)" when empty)
 *   a receipt              one summary line (verb, status, audit_id, signed), the domain fields,
 *                          and, when the action can be undone, the revert command to run
 *
 * Long output goes through a pager only when stdout is a terminal: `$PAGER`, else `less -FRX`
 * (createPager; `less -F` quits at once when it fits on one screen); if the pager cannot start the
 * text is printed as usual. Spec: spec/transports.md §cli-output.
 */
import { spawnSync } from 'node:child_process';
import type { Envelope } from '../../spec/types.ts';
import { cut, fitWidths, terminalWidth, type Io } from './output.ts';

const MAX_COLUMNS = 8;
const MAX_CELL = 48;

/** Receipt members summarised on the first line instead of listed. */
const RECEIPT_MEMBERS = new Set([
  'status',
  'audit_id',
  'idempotency_key',
  'timestamp',
  'rollback_handle',
  'attestation',
  'replayed',
]);

const isPlainObject = (x: unknown): x is Record<string, unknown> =>
  x !== null && typeof x === 'object' && !Array.isArray(x);
const isScalar = (x: unknown) => x === null || x === undefined || typeof x !== 'object';

function scalar(x: unknown): string {
  if (x === null || x === undefined) return '—';
  if (typeof x === 'string') return x;
  return String(x);
}

function cell(x: unknown): string {
  let s: string;
  if (isScalar(x)) s = scalar(x);
  else if (Array.isArray(x) && x.every(isScalar)) s = x.map(scalar).join(', ');
  else s = JSON.stringify(x);
  s = s.replace(/\s*\n\s*/g, ' ');
  return s.length > MAX_CELL ? `${s.slice(0, MAX_CELL - 1)}…` : s;
}

/** A list of objects as an aligned table fitting `width` columns (pure; default the terminal's). */
export function objectTable(
  rows: readonly Record<string, unknown>[],
  indent = '',
  width = terminalWidth(),
): string {
  const columns: string[] = [];
  for (const r of rows) {
    for (const [k, v] of Object.entries(r)) {
      if (columns.includes(k) || columns.length >= MAX_COLUMNS) continue;
      if (isScalar(v) || (Array.isArray(v) && v.every(isScalar))) columns.push(k);
    }
  }
  if (columns.length === 0) return rows.map((r) => `${indent}${cell(r)}`).join('\n');
  const body = rows.map((r) => columns.map((c) => cell(r[c])));
  const head = columns.map((c) => c.toUpperCase());
  const natural = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const widths = fitWidths(natural, head, width - indent.length);
  const line = (cells: string[]) =>
    indent +
    cells
      .map((c, i) => (i === cells.length - 1 ? cut(c, widths[i]!) : cut(c, widths[i]!).padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

/** Any JSON value as readable lines (pure). */
export function renderValue(value: unknown, indent = ''): string {
  if (isScalar(value)) return `${indent}${scalar(value)}`;
  if (Array.isArray(value)) {
    if (value.length === 0) return `${indent}(none)`;
    if (value.every(isScalar)) return `${indent}${value.map(scalar).join(', ')}`;
    if (value.every(isPlainObject)) return objectTable(value as Record<string, unknown>[], indent);
    return value.map((v) => renderValue(v, indent)).join('\n');
  }
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  if (entries.length === 0) return `${indent}(empty)`;
  const width = Math.max(...entries.map(([k]) => k.length));
  const lines: string[] = [];
  for (const [k, v] of entries) {
    if (isScalar(v) || (Array.isArray(v) && v.every(isScalar))) {
      lines.push(
        `${indent}${k.padEnd(width)}  ${Array.isArray(v) ? (v.length === 0 ? '(none)' : v.map(scalar).join(', ')) : scalar(v)}`,
      );
    } else if (Array.isArray(v) && v.length === 0) {
      lines.push(`${indent}${k.padEnd(width)}  (none)`);
    } else {
      lines.push(`${indent}${k}${Array.isArray(v) ? ` (${v.length})` : ''}:`);
      lines.push(renderValue(v, `${indent}  `));
    }
  }
  return lines.join('\n');
}

/** The undo command of a receipt, when the action can be undone. */
export function revertCommand(env: Envelope): string | undefined {
  const handle =
    env.rollback_handle ?? (env.result as { rollback_handle?: unknown } | undefined)?.rollback_handle;
  if (env.audit_id === undefined || handle === undefined) return undefined;
  return `solid agent dispatch audit.revert --args '{"audit_id":${env.audit_id}}' --confirm`;
}

/** The human rendering of an ok envelope (pure). */
export function renderOk(env: Envelope): string {
  const r = (env.result ?? {}) as Record<string, unknown>;
  const replayed = env.replayed ? ' (replayed: the original result of this idempotency key)' : '';
  const isReceipt = env.audit_id !== undefined && typeof r.status === 'string';
  if (!isReceipt) {
    const head = `✓ ${env.verb}${replayed}`;
    const body = Object.keys(r).length === 0 ? '' : `\n${renderValue(r)}`;
    return env.audit_id !== undefined ? `${head}${body}\naudit_id ${env.audit_id}` : `${head}${body}`;
  }
  const signed = isPlainObject(r.attestation)
    ? ` · signed receipt (${String(r.attestation.kid ?? 'ES256')})`
    : '';
  const lines = [`✓ ${env.verb} · ${String(r.status)} · audit_id ${env.audit_id}${signed}${replayed}`];
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r)) if (!RECEIPT_MEMBERS.has(k)) fields[k] = v;
  if (Object.keys(fields).length > 0) lines.push(renderValue(fields, '  '));
  // Shown once and kept nowhere (a new API key): spec/envelope.md §secret.
  if (isPlainObject(env.secret)) {
    lines.push('  shown once, not stored — copy it now:');
    lines.push(renderValue(env.secret, '    '));
  }
  const idem = env.idempotency_key ?? r.idempotency_key;
  if (typeof r.timestamp === 'string')
    lines.push(`  at ${r.timestamp}${typeof idem === 'string' ? ` · idempotency key ${idem}` : ''}`);
  const undo = revertCommand(env);
  lines.push(
    undo !== undefined ? `undo: ${undo}` : 'not revertible: there is no automatic undo for this action',
  );
  return lines.join('\n');
}

/** Print text that may be long: through the pager when the Io has one and it takes it. */
export function printLong(io: Io, text: string): void {
  if (io.page?.(text) === true) return;
  io.out(text);
}

export interface PagerOptions {
  /** Is stdout a terminal? Never page otherwise. */
  isTTY: boolean;
  /** Terminal height (lines); shorter text is printed directly. */
  rows: number | undefined;
  /** `$PAGER` (a shell command), default `less -FRX`. */
  pager?: string;
  /** Injected for tests. */
  spawn?: typeof spawnSync;
}

/**
 * A pager for Io.page: returns true when the text was shown through the pager, false when the
 * caller should print it (not a terminal, it fits, PAGER is `cat`/empty, or the pager failed).
 */
export function createPager(options: PagerOptions): (text: string) => boolean {
  const run = options.spawn ?? spawnSync;
  return (text) => {
    if (!options.isTTY) return false;
    const rows = options.rows ?? 24;
    if (text.split('\n').length < rows - 1) return false;
    const command =
      options.pager === undefined || options.pager.trim() === '' ? 'less -FRX' : options.pager.trim();
    if (command === 'cat') return false;
    const res = run('sh', ['-c', command], {
      input: `${text}\n`,
      stdio: ['pipe', 'inherit', 'inherit'],
      env: { ...process.env, LESS: process.env.LESS ?? 'FRX' },
    });
    return res.error === undefined && res.status !== 126 && res.status !== 127;
  };
}

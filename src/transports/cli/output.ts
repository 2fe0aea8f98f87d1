/**
 * CLI output: the envelope as JSON (`--json`, the machine contract) or as readable text, and the
 * exit code of an envelope (0 ok, else the reason's exit code from spec/reasons.ts).
 */
import type { Envelope } from '../../spec/types.ts';
import { reasonInfo, type ReasonTable } from '../../spec/reasons.ts';
import { parseStrictJson, StrictJsonError } from '../../spec/strict-json.ts';
import { jsonErrorPosition } from './json-position.ts';
import { printLong, renderOk } from './human-output.ts';

export interface Io {
  out: (s: string) => void;
  err: (s: string) => void;
  isTTY: boolean;
  /** Read one line from the terminal (typed phrases). */
  prompt?: (question: string) => Promise<string>;
  /** Read one line without echoing it (an API key pasted at `solid login`). */
  promptSecret?: (question: string) => Promise<string>;
  /** Show long text through a pager when stdout is a terminal; false → print it (human-output.ts). */
  page?: (text: string) => boolean;
}

/**
 * Thrown by `Io.prompt` when the human leaves the prompt without answering: Ctrl-C (`SIGINT`,
 * exit 130) or the end of input (`EOF`, exit 2). Nothing was decided: a pending dispatch or
 * approval stays pending. runCli turns it into one line on stderr, never a stack.
 */
export class PromptInterrupted extends Error {
  override readonly name = 'PromptInterrupted';
  constructor(readonly why: 'SIGINT' | 'EOF') {
    super(why === 'SIGINT' ? 'interrupted at the prompt' : 'no answer at the prompt (end of input)');
  }
}

/** Exit code of an envelope (`reasons`: the embedded runtime's table, for pack reasons). */
export function exitCodeOf(env: Envelope, reasons?: ReasonTable): number {
  return env.ok ? 0 : reasonInfo(env.error?.reason ?? 'internal_error', reasons).exit;
}

/**
 * The width of a table written to a pipe or a file with no COLUMNS: unlimited, so a script or
 * `grep` reads every cell whole; a terminal gets its own width.
 */
export const DEFAULT_TABLE_WIDTH = Number.POSITIVE_INFINITY;

/**
 * The width tables fit in: the terminal's columns when stdout is a terminal, else COLUMNS (a
 * positive integer, e.g. `COLUMNS=80 solid verbs list | less`), else {@link DEFAULT_TABLE_WIDTH}
 * (no limit). Never below 20.
 */
export function terminalWidth(
  stdout: { isTTY?: boolean; columns?: number } = process.stdout,
  env: NodeJS.ProcessEnv = process.env,
): number {
  if (stdout.isTTY === true && typeof stdout.columns === 'number' && stdout.columns > 0)
    return Math.max(20, stdout.columns);
  const fromEnv = Number(env.COLUMNS);
  if (Number.isInteger(fromEnv) && fromEnv > 0) return Math.max(20, fromEnv);
  return DEFAULT_TABLE_WIDTH;
}

/**
 * Column widths that fit `width` (two spaces between columns): the natural widths when they fit;
 * else the other columns are cut first — each wider than a cap cut to it, the cap the largest
 * that fits — keeping the first column (what a row is: a verb, a key id) whole; only when that
 * is not enough is the first column cut too. A column is never cut below its header or 8
 * characters; if even that is too wide, the table overflows.
 */
export function fitWidths(natural: readonly number[], headers: readonly string[], width: number): number[] {
  const gaps = 2 * Math.max(0, natural.length - 1);
  const floor = (i: number) => Math.min(natural[i]!, Math.max(headers[i]!.length, 8));
  const at = (cap: number, keepFirst: boolean) =>
    natural.map((w, i) => (keepFirst && i === 0 ? w : Math.min(w, Math.max(cap, floor(i)))));
  const total = (cap: number, keepFirst: boolean) => at(cap, keepFirst).reduce((a, b) => a + b, 0) + gaps;
  if (total(Infinity, true) <= width) return [...natural];
  const keepFirst = total(0, true) <= width;
  let lo = 1;
  let hi = Math.max(...natural);
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (total(mid, keepFirst) <= width) lo = mid;
    else hi = mid - 1;
  }
  return at(lo, keepFirst);
}

/** `s` cut to `width` characters, ending with … when cut. */
export function cut(s: string, width: number): string {
  return s.length <= width ? s : `${s.slice(0, Math.max(0, width - 1))}…`;
}

/**
 * Render rows as an aligned text table that fits `width` columns (default: {@link terminalWidth}):
 * long cells are cut with … so each row stays one line (80 columns stay readable).
 */
export function table(headers: string[], rows: string[][], width = terminalWidth()): string {
  const natural = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const widths = fitWidths(natural, headers, width);
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? cut(c, widths[i]!) : cut(c, widths[i]!).padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** Human rendering of an envelope. */
export function renderEnvelope(env: Envelope): string {
  if (!env.ok) {
    const e = env.error!;
    const lines = [`✗ ${env.verb}: ${e.reason}`, `  ${e.message}`];
    if (e.path) lines.push(`  at ${e.path}`);
    if (env.consent) {
      lines.push(
        `  consent: ${env.consent.class} (${env.consent.gate}), nonce expires ${env.consent.expires_at}`,
      );
      lines.push(`  summary: ${env.consent.summary}`);
      if (env.consent.typed_phrase) lines.push(`  phrase:  ${env.consent.typed_phrase}`);
      if (env.consent.approval_id) lines.push(`  approval: ${env.consent.approval_id}`);
      if (env.consent.approval_url) lines.push(`  approve at: ${env.consent.approval_url}`);
      lines.push(`  nonce:   ${env.consent.nonce}`);
    }
    if (e.hint) lines.push(`  hint: ${e.hint}`);
    if (env.audit_id !== undefined) lines.push(`  audit_id: ${env.audit_id}`);
    if (env.tenant?.sandbox === true)
      lines.push(`  tenant: sandbox (company ${env.tenant.id}; no API key was given)`);
    return lines.join('\n');
  }
  // Tables and key/value blocks; receipts as a summary with the revert command (human-output.ts).
  return renderOk(env);
}

/** Print an envelope the way the flags ask (long human output pages on a terminal). */
export function printEnvelope(io: Io, env: Envelope, json: boolean, reasons?: ReasonTable): number {
  if (json) io.out(JSON.stringify(env, null, 2));
  else if (env.ok) printLong(io, renderEnvelope(env));
  else io.err(renderEnvelope(env));
  return exitCodeOf(env, reasons);
}

/**
 * Parse --args JSON the way the HTTP body is parsed (src/spec/strict-json.ts): malformed JSON,
 * a key repeated in one object, a `__proto__` / `constructor.prototype` key, or nesting deeper
 * than 64 → an invalid_args envelope (malformed JSON names the position).
 * Spec: spec/transports.md §bad-input.
 */
export function parseArgsJson(
  verb: string,
  text: string | undefined,
): { ok: true; args: unknown } | { ok: false; envelope: Envelope } {
  if (text === undefined || text.trim() === '') return { ok: true, args: {} };
  try {
    return { ok: true, args: parseStrictJson(text, '--args') };
  } catch (err) {
    const problem = err instanceof StrictJsonError ? err.problem : undefined;
    if (problem !== undefined) {
      return {
        ok: false,
        envelope: {
          ok: false,
          verb,
          error: {
            reason: 'invalid_args',
            message: problem.message,
            hint: problem.hint,
            details: problem.details,
          },
        },
      };
    }
    const msg = (err as Error).message;
    const position = jsonErrorPosition(text);
    return {
      ok: false,
      envelope: {
        ok: false,
        verb,
        error: {
          reason: 'invalid_args',
          message: `--args is not valid JSON at position ${position}: ${msg}`,
          hint: `Quote the JSON for your shell, e.g. --args '{"customer_id": 42}'.`,
          details: { position },
        },
      },
    };
  }
}

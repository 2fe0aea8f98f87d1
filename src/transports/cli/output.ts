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

/** Render rows as an aligned text table. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
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

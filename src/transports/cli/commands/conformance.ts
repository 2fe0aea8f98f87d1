/**
 * `solid conformance <base-url> [--api-key K] [--mcp <url|command>] [--mcp-env K=V]… [--allow-writes]
 * [--ucp [--ucp-key FILE --ucp-profile URL]] [--declaration FILE|URL] [--only SECTION[,SECTION]]
 * [--json | --junit FILE] [--verbose] [--timeout-ms N] [--budget-seconds N] [--max-requests N]`:
 * run the conformance kit (src/conformance/) against a solid-verbs server over the wire.
 *
 * Read-only by default: without --allow-writes no write runs, and with it only the verbs the
 * server declares test-safe (GET /.well-known/solid-verbs-conformance). The key is --api-key or
 * $SOLID_API_KEY. A stdio --mcp command runs with this process's environment plus --mcp-env and
 * SOLID_API_KEY, so `--mcp "solid mcp"` needs SOLID_DB (or SOLID_DATABASE_URL) naming the server's
 * database. Prints the human report (or JSON with --json) on stdout; --junit also writes JUnit
 * XML. Exit 0 when nothing failed, 1 when a check failed, 2 on bad usage or when the kit could
 * not run (the server unreachable, the key refused: one error, not a failure per check).
 *
 * Spec: spec/conformance.md; the checks: docs/conformance.md.
 */
import { accessSync, constants, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { SECTIONS, type ConformanceOptions, type SectionId } from '../../../conformance/types.ts';
import type { Io } from '../output.ts';

interface ConformanceFlags {
  apiKey?: string;
  mcp?: string;
  mcpEnv: string[];
  allowWrites?: boolean;
  ucp?: boolean;
  ucpKey?: string;
  ucpProfile?: string;
  declaration?: string;
  only?: string;
  json?: boolean;
  junit?: string;
  verbose?: boolean;
  timeoutMs: string;
  budgetSeconds: string;
  maxRequests: string;
  maxResponseBytes: string;
}

const collect = (v: string, prev: string[]) => [...prev, v];

export function registerConformance(program: Command, io: Io, setExit: (code: number) => void): void {
  program
    .command('conformance <base-url>')
    .description(
      'Check a solid-verbs server over the wire (manifest, envelope, shapes, receipts, consent, parity, UCP); read-only unless --allow-writes',
    )
    .option('--api-key <key>', 'API key for the checks that need one (default: $SOLID_API_KEY)')
    .option(
      '--mcp <url-or-command>',
      'MCP server: a Streamable HTTP URL (…/mcp) or a stdio command, e.g. "solid mcp"',
    )
    .option('--mcp-env <KEY=VALUE>', 'extra environment for a stdio --mcp command (repeatable)', collect, [])
    .option('--allow-writes', 'run the write sections, with the verbs the server declares test-safe only')
    .option('--ucp', 'run the UCP section')
    .option('--ucp-key <file>', 'a trusted platform private JWK (with kid) to sign UCP requests with')
    .option('--ucp-profile <url>', 'the profile URL of that platform (UCP-Agent)')
    .option('--declaration <file-or-url>', "test-verb declaration to use instead of the server's")
    .option('--only <sections>', `only these sections, comma separated (${SECTIONS.join(', ')})`)
    .option('--json', 'print the JSON report instead of the table')
    .option('--junit <file>', 'also write a JUnit XML report to this file')
    .option('--verbose', 'show the evidence of every check, not only of failures')
    .option('--timeout-ms <ms>', 'per request', '15000')
    .option('--budget-seconds <s>', 'the whole run', '300')
    .option('--max-requests <n>', 'HTTP requests and MCP calls in the whole run', '600')
    .option(
      '--max-response-bytes <n>',
      'the largest answer read, after decompression',
      String(16 * 1024 * 1024),
    )
    .action(async (baseUrl: string, flags: ConformanceFlags) => {
      setExit(await runConformanceCommand(io, baseUrl, flags));
    });
}

function usage(io: Io, message: string): number {
  io.err(`✗ ${message}`);
  return 2;
}

/** Why `file` cannot be written, or undefined (checked before the run, so a run is not wasted). */
function unwritable(file: string): string | undefined {
  const path = resolve(file);
  try {
    if (statSync(path, { throwIfNoEntry: false })?.isDirectory()) return 'it is a directory';
    const dir = dirname(path);
    if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory())
      return `the directory ${dir} does not exist`;
    try {
      accessSync(path, constants.W_OK);
    } catch {
      accessSync(dir, constants.W_OK);
      if (statSync(path, { throwIfNoEntry: false }) !== undefined) return 'the file is not writable';
    }
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EACCES'
      ? `the directory ${dirname(path)} is not writable`
      : (err as Error).message;
  }
}

function positiveInt(text: string): number | undefined {
  const n = Number(text);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

export async function runConformanceCommand(
  io: Io,
  baseUrl: string,
  flags: ConformanceFlags,
): Promise<number> {
  const only =
    flags.only === undefined
      ? undefined
      : flags.only
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '');
  if (only !== undefined && only.length === 0)
    return usage(io, `--only needs at least one section (${SECTIONS.join(', ')})`);
  for (const s of only ?? [])
    if (!(SECTIONS as readonly string[]).includes(s))
      return usage(io, `--only: unknown section "${s}" (one of ${SECTIONS.join(', ')})`);
  if (flags.junit !== undefined) {
    const why = unwritable(flags.junit);
    if (why !== undefined) return usage(io, `--junit ${flags.junit}: cannot write the report there: ${why}`);
  }
  const timeoutMs = positiveInt(flags.timeoutMs);
  const budgetSeconds = positiveInt(flags.budgetSeconds);
  const maxRequests = positiveInt(flags.maxRequests);
  if (timeoutMs === undefined) return usage(io, '--timeout-ms must be a positive integer');
  if (budgetSeconds === undefined) return usage(io, '--budget-seconds must be a positive integer');
  if (maxRequests === undefined) return usage(io, '--max-requests must be a positive integer');
  const maxResponseBytes = positiveInt(flags.maxResponseBytes);
  if (maxResponseBytes === undefined) return usage(io, '--max-response-bytes must be a positive integer');
  const mcpEnv: Record<string, string> = {};
  for (const kv of flags.mcpEnv) {
    const at = kv.indexOf('=');
    if (at < 1) return usage(io, `--mcp-env "${kv}" must be KEY=VALUE`);
    mcpEnv[kv.slice(0, at)] = kv.slice(at + 1);
  }
  let ucpKey: Record<string, unknown> | undefined;
  if (flags.ucpKey !== undefined) {
    try {
      ucpKey = JSON.parse(readFileSync(flags.ucpKey, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      return usage(io, `--ucp-key ${flags.ucpKey}: ${(err as Error).message}`);
    }
    if (flags.ucpProfile === undefined)
      return usage(io, '--ucp-key needs --ucp-profile <the platform profile URL>');
  }
  const apiKey = flags.apiKey ?? (process.env.SOLID_API_KEY || undefined);
  const progress = Boolean(process.stderr.isTTY) && !flags.json;
  const options: ConformanceOptions = {
    baseUrl,
    ...(apiKey !== undefined ? { apiKey } : {}),
    allowWrites: flags.allowWrites === true,
    ...(flags.mcp !== undefined ? { mcp: flags.mcp } : {}),
    ...(Object.keys(mcpEnv).length > 0 ? { mcpEnv } : {}),
    ucp: flags.ucp === true,
    ...(ucpKey !== undefined ? { ucpKey } : {}),
    ...(flags.ucpProfile !== undefined ? { ucpProfileUrl: flags.ucpProfile } : {}),
    ...(flags.declaration !== undefined ? { declaration: flags.declaration } : {}),
    ...(only !== undefined ? { only: only as SectionId[] } : {}),
    timeoutMs,
    budgetMs: budgetSeconds * 1000,
    maxRequests,
    maxResponseBytes,
    ...(progress ? { onResult: (r) => process.stderr.write(`\r\u001b[2K  ${r.status} ${r.id}`) } : {}),
  };
  // Loaded on use: the kit (MCP client, UCP signing, schemas) costs every other command nothing.
  const { exitCodeOf, runConformance } = await import('../../../conformance/runner.ts');
  const { formatHuman, formatJson, formatJunit, formatJunitNotRun, formatJsonNotRun, printable } =
    await import('../../../conformance/report.ts');
  const { ConformanceNotRun } = await import('../../../conformance/outcome.ts');
  const writeJunit = (xml: string): number => {
    if (flags.junit === undefined) return 0;
    try {
      writeFileSync(flags.junit, xml);
    } catch (err) {
      return usage(io, `--junit ${flags.junit}: the report could not be written: ${(err as Error).message}`);
    }
    if (!flags.json) io.err(`JUnit report written to ${flags.junit}`);
    return 0;
  };
  let report;
  try {
    report = await runConformance(options);
  } catch (err) {
    if (!(err instanceof ConformanceNotRun)) return usage(io, (err as Error).message);
    // The kit could not run at all: one error, not a failure per check (exit 2, not 1).
    if (flags.json) io.out(formatJsonNotRun(err));
    writeJunit(formatJunitNotRun(err));
    io.err(`✗ ${printable(err.message)}`);
    io.err(`  hint: ${err.hint}`);
    return 2;
  } finally {
    if (progress) process.stderr.write('\r\u001b[2K');
  }
  io.out(
    flags.json
      ? formatJson(report)
      : formatHuman(report, { verbose: flags.verbose === true, color: Boolean(process.stdout.isTTY) }),
  );
  return writeJunit(formatJunit(report)) || exitCodeOf(report);
}

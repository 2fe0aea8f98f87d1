/**
 * Running the kit: every check of the chosen sections in order (checks marked `final` last), each
 * skipped with the reason when the run lacks what it needs (a key, --allow-writes, --mcp, --ucp),
 * each bounded by the run's budget; the report with per-section counts. When the budget runs out
 * the remaining checks skip and a failed `run.budget` result says so, so a server that hangs
 * never passes. The exit code of a run is 0 only when nothing failed (`exitCodeOf`).
 * Spec: spec/conformance.md §outcomes, §safety.
 */
import { readFileSync } from 'node:fs';
import { KitContext } from './context.ts';
import { mcpLabel } from './mcp.ts';
import {
  BudgetExhausted,
  ConformanceNotRun,
  ConnectionFailed,
  ExchangeFailed,
  Fail,
  RequestTimeout,
  Skip,
} from './outcome.ts';
import {
  SECTIONS,
  SECTION_TITLES,
  type Check,
  type CheckResult,
  type ConformanceOptions,
  type ConformanceReport,
  type Outcome,
  type SectionId,
  type Summary,
} from './types.ts';
import { manifestChecks } from './checks/manifest.ts';
import { envelopeChecks } from './checks/envelope.ts';
import { shapeChecks } from './checks/shapes.ts';
import { receiptChecks } from './checks/receipts.ts';
import { consentChecks } from './checks/consent.ts';
import { parityChecks } from './checks/parity.ts';
import { ucpChecks } from './checks/ucp.ts';

/** Every check of the kit, in report order (docs/conformance.md lists them; a test keeps both in step). */
export const CHECKS: readonly Check[] = [
  ...manifestChecks,
  ...envelopeChecks,
  ...shapeChecks,
  ...receiptChecks,
  ...consentChecks,
  ...parityChecks,
  ...ucpChecks,
];

const KIT_VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

function needsReason(ctx: KitContext, c: Check): string | undefined {
  const n = c.needs ?? {};
  if (n.ucp && ctx.options.ucp !== true) return 'pass --ucp to check UCP';
  if (n.writes && !ctx.allowWrites)
    return 'writes: pass --allow-writes to run it with the verbs the server declares test-safe';
  if (n.key && !ctx.hasKey) return 'needs an API key: pass --api-key (or set SOLID_API_KEY)';
  if (n.mcp && ctx.options.mcp === undefined)
    return `pass --mcp <url or command> to check MCP (e.g. --mcp ${ctx.base}/mcp, or --mcp "solid mcp" with SOLID_DB set)`;
  return undefined;
}

async function runOne(ctx: KitContext, c: Check, budget: { hit?: string }): Promise<Outcome> {
  const why = needsReason(ctx, c);
  if (why !== undefined) return { status: 'skip', message: why, evidence: [] };
  const exhausted = ctx.budget.exhausted();
  if (exhausted !== undefined) {
    budget.hit ??= exhausted;
    return { status: 'skip', message: `not run: ${exhausted}`, evidence: [] };
  }
  try {
    return await c.run(ctx);
  } catch (err) {
    if (err instanceof Skip) return { status: 'skip', message: err.message, evidence: err.evidence };
    if (err instanceof Fail) return { status: 'fail', message: err.message, evidence: err.evidence };
    if (err instanceof BudgetExhausted) {
      budget.hit ??= err.message;
      return { status: 'skip', message: `not finished: ${err.message}`, evidence: [] };
    }
    if (err instanceof ExchangeFailed)
      return {
        status: 'fail',
        message: err.message,
        evidence: [{ request: err.request, note: err.message }],
      };
    return {
      status: 'fail',
      message: `the check could not complete: ${(err as Error).message}`,
      evidence: [],
    };
  }
}

function count(results: readonly CheckResult[]): Summary {
  return {
    passed: results.filter((r) => r.status === 'pass').length,
    failed: results.filter((r) => r.status === 'fail').length,
    skipped: results.filter((r) => r.status === 'skip').length,
  };
}

/**
 * Before any check: one request to the manifest shows the server can be reached, and, when the
 * run has a key, one call of an unknown verb with it shows the server accepts the key (a key it
 * refuses answers 401, which would otherwise fail every keyed check as the server's fault).
 * Throws ConformanceNotRun. Spec: spec/conformance.md §outcomes.
 */
async function preflight(ctx: KitContext): Promise<void> {
  try {
    await ctx.http.get('/api/v1/agent/verbs', { key: false });
  } catch (err) {
    if (err instanceof ConnectionFailed)
      throw new ConformanceNotRun(
        'unreachable',
        `cannot reach ${ctx.base}: ${err.code === 'bad port' ? 'bad port (fetch refuses to connect to this port, one of its blocked ports)' : err.code}`,
        'check the base URL (scheme, host and port of the solid-verbs server) and that the server is running',
        ctx.base,
      );
    if (err instanceof RequestTimeout)
      throw new ConformanceNotRun(
        'unreachable',
        `${ctx.base} did not answer GET /api/v1/agent/verbs: ${err.message}`,
        'check that the server is up and answering, or raise --timeout-ms',
        ctx.base,
      );
    // Anything else (an answer too large or broken off, the budget) is for the checks to report.
  }
  if (!ctx.hasKey) return;
  let answer;
  try {
    answer = await ctx.http.post('/api/v1/agent/dispatch/conformance.preflight_no_such_verb', {
      json: { args: {} },
    });
  } catch {
    return; // the checks report it
  }
  if (answer.status !== 401) return;
  const error = (answer.json as { error?: { reason?: unknown; message?: unknown } } | undefined)?.error;
  const said = [error?.reason, error?.message].filter((x) => typeof x === 'string').join(': ');
  throw new ConformanceNotRun(
    'key_refused',
    `${ctx.base} refused the API key: HTTP 401${said === '' ? '' : ` ${said}`}`,
    'check --api-key (or SOLID_API_KEY): it must be a key of this server, or pass none to run only the keyless checks',
    ctx.base,
  );
}

/**
 * Run the kit against a server (spec/conformance.md). Never throws for what the server answers:
 * every problem is a failed check with evidence. Throws for invalid options, and rejects with
 * ConformanceNotRun when the server cannot be reached or refuses the run's key (see preflight).
 */
export async function runConformance(options: ConformanceOptions): Promise<ConformanceReport> {
  try {
    const u = new URL(options.baseUrl);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    const bare = /^[\w.-]+(:\d+)?(\/.*)?$/.test(options.baseUrl);
    throw new Error(
      `the base URL ${JSON.stringify(options.baseUrl)} is not an http(s) URL${bare ? ` (did you mean http://${options.baseUrl}?)` : ''}`,
    );
  }
  const sections: SectionId[] =
    options.only !== undefined && options.only.length > 0 ? [...options.only] : [...SECTIONS];
  for (const s of sections)
    if (!(SECTIONS as readonly string[]).includes(s))
      throw new Error(`unknown section ${JSON.stringify(s)}: one of ${SECTIONS.join(', ')}`);
  const ctx = new KitContext(options);
  const started = Date.now();
  await preflight(ctx);
  const chosen = CHECKS.filter((c) => sections.includes(c.section));
  const byId = new Map<string, CheckResult>();
  const budget: { hit?: string } = {};
  try {
    for (const c of [...chosen.filter((x) => !x.final), ...chosen.filter((x) => x.final)]) {
      const t0 = Date.now();
      const outcome = await runOne(ctx, c, budget);
      const result: CheckResult = {
        id: c.id,
        section: c.section,
        requirement: c.requirement,
        spec: c.spec,
        status: outcome.status,
        message: outcome.message,
        evidence: outcome.evidence,
        duration_ms: Date.now() - t0,
      };
      byId.set(c.id, result);
      options.onResult?.(result);
    }
  } finally {
    await ctx.close();
  }
  const results = chosen.map((c) => byId.get(c.id)!);
  if (budget.hit !== undefined) {
    results.push({
      id: 'run.budget',
      section: 'run',
      requirement: 'The run finishes within its budget of requests and time.',
      spec: 'spec/conformance.md §safety',
      status: 'fail',
      message: `${budget.hit}: the checks after it did not run (raise --budget-seconds or --max-requests, or check why answers are slow)`,
      evidence: [],
      duration_ms: 0,
    });
  }
  const sectionIds: Array<SectionId | 'run'> = [
    ...sections,
    ...(budget.hit !== undefined ? (['run'] as const) : []),
  ];
  return {
    kit: { name: 'solid-verbs conformance', version: KIT_VERSION },
    target: ctx.base,
    run_id: ctx.runId,
    started_at: new Date(started).toISOString(),
    duration_ms: Date.now() - started,
    options: {
      key: ctx.hasKey,
      allow_writes: ctx.allowWrites,
      mcp: options.mcp === undefined ? null : mcpLabel(options.mcp),
      ucp: options.ucp === true,
      sections,
    },
    requests: ctx.budget.count,
    summary: count(results),
    sections: sectionIds.map((id) => ({
      id,
      title: id === 'run' ? 'the run itself' : SECTION_TITLES[id],
      summary: count(results.filter((r) => r.section === id)),
    })),
    results,
  };
}

/** 0 when nothing failed, else 1. */
export function exitCodeOf(report: ConformanceReport): number {
  return report.summary.failed === 0 ? 0 : 1;
}

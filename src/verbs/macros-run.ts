/**
 * macros.run (shape macro): replays a saved macro through the full pipeline, one dispatch per
 * step with the caller's principal and surface. A step that needs consent pauses the run
 * ("pending", with a sealed `resume` token bound to tenant, user, run, step and attempt); a step
 * that fails stops it (macro_step_failed, error.details holding the run and a resume token).
 * See src/verbs/macros.ts for the whole protocol.
 *
 * Reasons: macro_invalid (stale or forged resume token, override_args on resume),
 * macro_not_found, macro_step_failed.
 * Spec: spec/shapes.md §macro.
 */
import { randomBytes } from 'node:crypto';
import type { Envelope, Principal } from '../spec/types.ts';
import type { Queryable } from '../store/store.ts';
import { parseJson } from '../store/store.ts';
import { defineSystemVerb } from '../runtime/verb.ts';
import { VerbError } from '../runtime/errors.ts';
import type { RuntimeCore as Runtime } from '../runtime/core.ts';
import { refuse } from '../runtime/refusals.ts';
import {
  getMacro,
  noGate,
  substitute,
  MACRO_RUN_TTL_SECONDS,
  type Macro,
  type StepRecord,
} from './macro-chain.ts';

/** Arguments of macros.run. */
export interface RunArgs {
  macro_id: string;
  override_args?: Record<string, Record<string, unknown>>;
  resume?: string;
}

interface RunState {
  run_id: string;
  version: number;
  next_step: number;
  attempt: number;
  records: StepRecord[];
  overrides: Record<string, Record<string, unknown>>;
  created_at: string;
}

interface ResumePayload {
  c: number;
  u: number;
  r: string;
  i: number;
  a: number;
}

function sealResume(rt: Runtime, p: Principal, run: RunState): string {
  return rt.secrets.sealToken('cursor', 'mr1', {
    c: p.company_id,
    u: p.user_id,
    r: run.run_id,
    i: run.next_step,
    a: run.attempt,
  } satisfies ResumePayload as unknown as Record<string, unknown>);
}

async function openResume(
  rt: Runtime,
  q: Queryable,
  p: Principal,
  macro: Macro,
  token: string,
  nowIso: string,
): Promise<RunState> {
  const t = rt.secrets.openToken<ResumePayload>('cursor', 'mr1', token);
  const stale = () =>
    refuse.macroInvalid(
      'The resume token is not valid for this macro, tenant and user, or the run already moved on.',
      '/resume',
      'Use the resume token of the latest macros.run answer for this run, or start a new run without resume.',
    );
  if (t === undefined || t.c !== p.company_id || t.u !== p.user_id || typeof t.r !== 'string') throw stale();
  const r = await q.get<Record<string, unknown>>(
    'SELECT * FROM macro_runs WHERE run_id = ? AND company_id = ? AND user_id = ?',
    [t.r, p.company_id, p.user_id],
  );
  if (
    r === undefined ||
    r.macro_id !== macro.macro_id ||
    r.status === 'completed' ||
    Number(r.next_step) !== t.i ||
    Number(r.attempt) !== t.a ||
    (r.expires_at as string) <= nowIso
  )
    throw stale();
  if (Number(r.version) !== macro.version)
    throw refuse.macroInvalid(
      `The macro changed (version ${macro.version}) since this run paused at version ${Number(r.version)}.`,
      '/resume',
      'Start a new run.',
    );
  return {
    run_id: r.run_id as string,
    version: Number(r.version),
    next_step: Number(r.next_step),
    attempt: Number(r.attempt),
    records: parseJson<StepRecord[]>(r.outputs) ?? [],
    overrides: parseJson<Record<string, Record<string, unknown>>>(r.override_args) ?? {},
    created_at: r.created_at as string,
  };
}

async function saveRun(
  rt: Runtime,
  p: Principal,
  macro: Macro,
  run: RunState,
  status: 'pending' | 'failed',
  now: Date,
): Promise<void> {
  const nowIso = now.toISOString();
  const expires = new Date(now.getTime() + MACRO_RUN_TTL_SECONDS * 1000).toISOString();
  await rt.store.write(
    (tx) =>
      tx.run(
        `INSERT INTO macro_runs (run_id, company_id, user_id, macro_id, version, status, next_step, attempt, outputs, override_args, created_at, updated_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, next_step = excluded.next_step, attempt = excluded.attempt,
           outputs = excluded.outputs, updated_at = excluded.updated_at, expires_at = excluded.expires_at`,
        [
          run.run_id,
          p.company_id,
          p.user_id,
          macro.macro_id,
          macro.version,
          status,
          run.next_step,
          run.attempt,
          JSON.stringify(run.records),
          JSON.stringify(run.overrides),
          run.created_at,
          nowIso,
          expires,
        ],
      ),
    { label: 'macros.run' },
  );
}

function recordOf(index: number, verb: string, env: Envelope): StepRecord {
  const rec: StepRecord = { index, verb, ok: env.ok };
  const result = env.result as Record<string, unknown> | undefined;
  if (typeof result?.status === 'string') rec.status = result.status;
  if (env.audit_id !== undefined) rec.audit_id = env.audit_id;
  if (env.idempotency_key !== undefined) rec.idempotency_key = env.idempotency_key;
  if (env.rollback_handle !== undefined) rec.rollback_handle = env.rollback_handle;
  if (result !== undefined) rec.result = result;
  if (env.error !== undefined) rec.error = env.error;
  if (env.consent !== undefined) rec.consent = env.consent;
  return rec;
}

export const macrosRun = defineSystemVerb<RunArgs>({
  name: 'macros.run',
  title: 'Run a macro',
  description:
    'Run a saved macro: each step goes through the full pipeline (role, consent, caps) and the answer lists one record per step. override_args: {"<step index>": {arg: value}}. A step needing consent pauses the run (status "pending", its consent request, resume.token): call again with macro_id and resume, confirming as for any verb. A failing step stops the run (macro_step_failed; error.details.resume.token retries it).',
  shape: 'macro',
  category: 'macros',
  input: {
    type: 'object',
    properties: {
      macro_id: { type: 'string', minLength: 1, maxLength: 64 },
      override_args: {
        type: 'object',
        propertyNames: { pattern: '^(0|[1-9][0-9]?)$' },
        additionalProperties: { type: 'object' },
        description: 'Arguments to replace, per step index.',
      },
      resume: {
        type: 'string',
        minLength: 1,
        maxLength: 2000,
        description: 'resume.token of a paused or failed run.',
      },
    },
    required: ['macro_id'],
    additionalProperties: false,
  },
  // targets: each step's verb, so a limited credential is refused before any step runs (each step
  // is checked again when it is dispatched). spec/consent.md §api-keys
  delegateConsent: async (ctx, args) => ({
    ...noGate('read_only', `Run the macro ${args.macro_id}; each step asks for its own consent.`),
    targets: await getMacro(ctx.db, ctx.principal.company_id, args.macro_id).then(
      (m) => m.steps.map((s) => s.verb),
      () => [],
    ),
  }),
  detached: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    const rt = ctx.runtime;
    const p = ctx.principal;
    const macro = await getMacro(ctx.db, p.company_id, args.macro_id);
    ctx.setEntity('macro', macro.macro_id);
    let run: RunState;
    if (args.resume !== undefined) {
      run = await openResume(rt, ctx.db, p, macro, args.resume, ctx.now.toISOString());
      if (args.override_args !== undefined)
        throw new VerbError(
          'invalid_input',
          'override_args are fixed when a run starts; a resumed run keeps them.',
          { path: '/override_args' },
        );
      run.records = run.records.slice(0, run.next_step);
    } else {
      const overrides = args.override_args ?? {};
      for (const k of Object.keys(overrides)) {
        if (Number(k) >= macro.steps.length)
          throw refuse.macroInvalid(
            `override_args names step ${k}; the macro has ${macro.steps.length} steps.`,
            `/override_args/${k}`,
          );
      }
      run = {
        run_id: `mr_${randomBytes(9).toString('base64url')}`,
        version: macro.version,
        next_step: 0,
        attempt: 0,
        records: [],
        overrides,
        created_at: ctx.now.toISOString(),
      };
    }
    const caller = {
      principal: p,
      surface: ctx.surface ?? ('internal' as const),
      signal: ctx.signal,
      ...(ctx.webmcpSurface !== undefined ? { webmcpSurface: ctx.webmcpSurface } : {}),
      // The consent reply relayed below is this call's own principal's (human or agent: src/identity).
    };
    const start = run.next_step;
    for (let i = start; i < macro.steps.length; i++) {
      const step = macro.steps[i]!;
      let env: Envelope;
      try {
        const stepArgs = substitute(
          { ...(step.args ?? {}), ...(run.overrides[String(i)] ?? {}) },
          run.records,
          i,
        );
        const options = {
          idempotency_key: `${run.run_id}.${i}`,
          // The paused step is confirmed with the consent reply of THIS call (transport options,
          // never arguments): a phrase reaches it only from the human (spec/consent.md §protocol).
          ...(i === start && args.resume !== undefined && ctx.consentReply !== undefined
            ? ctx.consentReply
            : {}),
        };
        env = await rt.dispatch(caller, step.verb, stepArgs, options);
      } catch (err) {
        if (!(err instanceof VerbError)) throw err;
        env = { ok: false, verb: step.verb, error: err.toEnvelopeError() };
      }
      const rec = recordOf(i, step.verb, env);
      run.records.push(rec);
      if (env.ok) continue;
      run.next_step = i;
      run.attempt += 1;
      const pending = env.error?.reason === 'dispatch_pending';
      await saveRun(rt, p, macro, run, pending ? 'pending' : 'failed', ctx.now);
      const resume = {
        token: sealResume(rt, p, run),
        run_id: run.run_id,
        step: i,
        verb: step.verb,
        ...(env.consent !== undefined ? { consent: env.consent } : {}),
        send: pending
          ? {
              macro_id: macro.macro_id,
              resume: '<token>',
              options: {
                confirm: true,
                nonce: env.consent?.nonce,
                ...(env.consent?.typed_phrase !== undefined
                  ? { typed_phrase: '<typed by the human, or omit after approval>' }
                  : {}),
              },
            }
          : { macro_id: macro.macro_id, resume: '<token>' },
      };
      const output = {
        macro_id: macro.macro_id,
        run_id: run.run_id,
        name: macro.name,
        version: macro.version,
        status: pending ? 'pending' : 'failed',
        steps: run.records,
        ...(pending ? {} : { failed_step: i }),
        resume,
      };
      if (pending) return output;
      throw new VerbError(
        'macro_step_failed',
        `Step ${i} (${step.verb}) of macro "${macro.name}" failed: ${env.error?.reason ?? 'unknown'} — ${env.error?.message ?? ''}`.trim(),
        {
          hint: `Fix the cause, then retry from step ${i} with macros.run { macro_id, resume: error.details.resume.token } (steps before it are not run again).`,
          details: output,
        },
      );
    }
    if (args.resume !== undefined)
      await rt.store.write((tx) => tx.run('DELETE FROM macro_runs WHERE run_id = ?', [run.run_id]), {
        label: 'macros.run',
      });
    return {
      macro_id: macro.macro_id,
      run_id: run.run_id,
      name: macro.name,
      version: macro.version,
      status: 'completed',
      steps: run.records,
    };
  },
});

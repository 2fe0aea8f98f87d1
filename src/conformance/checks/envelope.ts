/**
 * Section `envelope`: the success and error envelopes of POST /api/v1/agent/dispatch/{verb} and
 * the refusals every server must make before a verb runs. Read-only (reads and refused calls),
 * except envelope.auth_required, which sends a declared test write without a key.
 * Spec: spec/envelope.md §shape, §error; spec/reasons.md; spec/transports.md §http-routes,
 * §http-body, §http-auth, §auth; spec/manifest.md §identity.
 */
import { synthesizeArgs } from '../args.ts';
import { isReadRecord, type Dispatched, type KitContext, type KitRecord } from '../context.ts';
import { Fail, Skip, fail, pass, skip } from '../outcome.ts';
import { validateOurs } from '../schemas.ts';
import type { Check, Outcome } from '../types.ts';
import { REASONS } from '../../spec/reasons.ts';
import { reasonOf } from '../writes.ts';

/** A read verb on http the kit can call with arguments it builds (verbs.list first). */
export interface ProbeRead {
  record: KitRecord;
  args: Record<string, unknown>;
}

/** The run's probe read (once): the read verbs on http with the fewest required arguments first. */
export function probeRead(ctx: KitContext): Promise<ProbeRead> {
  return ctx.once('probe-read', async () => {
    const { records } = await ctx.records('?surface=http');
    const reads = records
      .filter(isReadRecord)
      .sort(
        (a, b) =>
          Number(b.name === 'verbs.list') - Number(a.name === 'verbs.list') ||
          requiredCount(a) - requiredCount(b) ||
          (a.name < b.name ? -1 : 1),
      );
    for (const record of reads.slice(0, 5)) {
      const s = synthesizeArgs(record.input_schema, ctx.compile);
      if (!s.ok || s.idProperties.length > 0) continue;
      const d = await ctx.dispatch(record.name, { args: s.args });
      // A 200 with a result is the probe even without `ok: true`: envelope.success then says so.
      if (
        d.env?.ok === true ||
        (d.answer.status === 200 && d.env?.ok === undefined && d.env?.result !== undefined)
      )
        return { record, args: s.args };
    }
    throw new Skip('no read verb on http answered ok with arguments the kit could build');
  });
}

function requiredCount(r: KitRecord): number {
  return Array.isArray(r.input_schema?.required) ? (r.input_schema.required as unknown[]).length : 0;
}

/**
 * Expect an error envelope: the status, the reason, a valid envelope with message and hint, and
 * (when given) error.path equal to `pointer`. Returns a fail outcome, or undefined when it holds.
 */
export function expectError(
  ctx: KitContext,
  d: Dispatched,
  status: number,
  reason: string,
  options: { pointer?: string } = {},
): Outcome | undefined {
  const got = reasonOf(d.env);
  if (d.answer.status !== status || got !== reason)
    return fail(
      `answered HTTP ${d.answer.status} ${got ?? '(no reason)'}, not ${status} ${reason}`,
      ctx.ev(d.answer),
    );
  const errors = validateOurs('envelope.json', d.env);
  if (errors.length > 0)
    return fail(`the ${reason} envelope is invalid: ${errors[0]}`, ctx.ev(d.answer, errors));
  const e = d.env!.error!;
  if (typeof e.message !== 'string' || e.message === '')
    return fail(`the ${reason} envelope has no message`, ctx.ev(d.answer));
  if (typeof e.hint !== 'string' || e.hint === '')
    return fail(`the ${reason} envelope has no hint`, ctx.ev(d.answer));
  if (options.pointer !== undefined && e.path !== options.pointer)
    return fail(
      `error.path is ${JSON.stringify(e.path)}, not the pointer ${options.pointer}`,
      ctx.ev(d.answer),
    );
  return undefined;
}

/** A property of the probe's or another read's schema the kit can give the wrong type. */
function typedProperty(r: KitRecord): { name: string; wrong: unknown } | undefined {
  const props = (r.input_schema?.properties ?? {}) as Record<string, Record<string, unknown>>;
  for (const [name, s] of Object.entries(props)) {
    if (s === null || typeof s !== 'object') continue;
    if (s.type === 'integer' || s.type === 'number') return { name, wrong: 'conformance-not-a-number' };
    if (s.type === 'boolean') return { name, wrong: 'conformance-not-a-boolean' };
    if (s.type === 'string') return { name, wrong: 12345 };
  }
  return undefined;
}

const STACK = /(\bat [^\s]+ \(?[^\s]*:\d+:\d+\)?)|((^|[\s(])\/[^\s]+\.(ts|js|mjs|cjs)\b)|(node_modules)/;

export const envelopeChecks: Check[] = [
  {
    id: 'envelope.success',
    section: 'envelope',
    requirement:
      "A read answers 200 with ok: true, the verb's canonical name and a result, valid against the envelope schema.",
    spec: 'spec/envelope.md §shape',
    async run(ctx) {
      const probe = await probeRead(ctx);
      const d = await ctx.dispatch(probe.record.name, { args: probe.args });
      if (d.answer.status !== 200 || d.env?.ok !== true)
        return fail(
          `${probe.record.name} answered HTTP ${d.answer.status}${d.answer.status === 200 ? ` with ok ${JSON.stringify(d.env?.ok)}, not true` : ''}`,
          ctx.ev(d.answer),
        );
      const errors = validateOurs('envelope.json', d.env);
      if (errors.length > 0) return fail(`the envelope is invalid: ${errors[0]}`, ctx.ev(d.answer, errors));
      if (d.env.verb !== probe.record.name)
        return fail(`verb is ${JSON.stringify(d.env.verb)}, not ${probe.record.name}`, ctx.ev(d.answer));
      if (d.env.result === null || typeof d.env.result !== 'object')
        return fail('ok: true without a result object', ctx.ev(d.answer));
      return pass(`${probe.record.name}: 200 ok`, ctx.ev(d.answer, { ok: true, verb: d.env.verb }));
    },
  },
  {
    id: 'envelope.unknown_verb',
    section: 'envelope',
    requirement: 'An unknown verb answers 404 unknown_verb with a message and a hint.',
    spec: 'spec/reasons.md §resolution',
    async run(ctx) {
      const d = await ctx.dispatch('conformance.no_such_verb', { args: {} });
      return expectError(ctx, d, 404, 'unknown_verb') ?? pass('404 unknown_verb', ctx.ev(d.answer));
    },
  },
  {
    id: 'envelope.malformed_json',
    section: 'envelope',
    requirement: 'A body that is not valid JSON answers 400 invalid_request with a message and a hint.',
    spec: 'spec/transports.md §http-body',
    async run(ctx) {
      const probe = await probeRead(ctx);
      const d = await ctx.dispatch(probe.record.name, undefined, {
        raw: '{"args": {',
        contentType: 'application/json',
      });
      return expectError(ctx, d, 400, 'invalid_request') ?? pass('400 invalid_request', ctx.ev(d.answer));
    },
  },
  {
    id: 'envelope.body_members',
    section: 'envelope',
    requirement: 'A dispatch body with arguments outside `args` answers 400 invalid_request.',
    spec: 'spec/transports.md §http-routes',
    async run(ctx) {
      const probe = await probeRead(ctx);
      const d = await ctx.dispatch(probe.record.name, { conformance_top_level_argument: 1 });
      return expectError(ctx, d, 400, 'invalid_request') ?? pass('400 invalid_request', ctx.ev(d.answer));
    },
  },
  {
    id: 'envelope.media_type',
    section: 'envelope',
    requirement: 'A body that is not JSON media type answers 415 unsupported_media_type.',
    spec: 'spec/transports.md §http-body',
    async run(ctx) {
      const probe = await probeRead(ctx);
      const d = await ctx.dispatch(probe.record.name, undefined, {
        raw: 'args=1',
        contentType: 'text/plain',
      });
      return (
        expectError(ctx, d, 415, 'unsupported_media_type') ??
        pass('415 unsupported_media_type', ctx.ev(d.answer))
      );
    },
  },
  {
    id: 'envelope.schema_violation',
    section: 'envelope',
    requirement:
      'An argument of the wrong type answers 400 invalid_input with error.path the JSON Pointer of that argument.',
    spec: 'spec/envelope.md §error',
    async run(ctx) {
      const { records } = await ctx.records('?surface=http');
      const probe = await probeRead(ctx).catch(() => undefined);
      const candidates = [...(probe ? [probe.record] : []), ...records.filter(isReadRecord)];
      for (const r of candidates) {
        const prop = typedProperty(r);
        if (prop === undefined) continue;
        const base = synthesizeArgs(r.input_schema, ctx.compile);
        const args = { ...(base.ok ? base.args : {}), [prop.name]: prop.wrong };
        const pointer = `/${prop.name.replace(/~/g, '~0').replace(/\//g, '~1')}`;
        const d = await ctx.dispatch(r.name, { args });
        return (
          expectError(ctx, d, 400, 'invalid_input', { pointer }) ??
          pass(`${r.name} ${pointer}: 400 invalid_input`, ctx.ev(d.answer))
        );
      }
      return skip('no read verb on http has a typed argument to get wrong');
    },
  },
  {
    id: 'envelope.identity_override',
    section: 'envelope',
    requirement:
      'company_id or user_id in the arguments answers 400 identity_override with its pointer, audited (an audit_id), and nothing runs.',
    spec: 'spec/manifest.md §identity',
    async run(ctx) {
      const probe = await probeRead(ctx);
      const evidence = [];
      for (const name of ['company_id', 'user_id']) {
        const d = await ctx.dispatch(probe.record.name, { args: { ...probe.args, [name]: 1 } });
        const bad = expectError(ctx, d, 400, 'identity_override', { pointer: `/${name}` });
        if (bad !== undefined) return bad;
        if (!Number.isInteger(d.env?.audit_id))
          return fail(`the ${name} refusal carries no audit_id (denials are audited)`, ctx.ev(d.answer));
        evidence.push(
          ctx.ev(d.answer, { reason: 'identity_override', path: `/${name}`, audit_id: d.env?.audit_id }),
        );
      }
      return pass('both refused and audited', ...evidence);
    },
  },
  {
    id: 'envelope.bad_key',
    section: 'envelope',
    requirement:
      'An unknown API key, or an Authorization that is not a Bearer token, answers 401 auth_invalid with WWW-Authenticate: Bearer, never the keyless sandbox.',
    spec: 'spec/transports.md §http-auth',
    async run(ctx) {
      const probe = await probeRead(ctx);
      const evidence = [];
      for (const authorization of ['Bearer sk_solid_conformance0_notakey', 'Basic Y29uZm9ybWFuY2U6a2l0']) {
        const d = await ctx.dispatch(probe.record.name, { args: probe.args }, { authorization });
        const bad = expectError(ctx, d, 401, 'auth_invalid');
        if (bad !== undefined) return bad;
        const www = d.answer.headers.get('www-authenticate') ?? '';
        if (!/^Bearer\b/i.test(www))
          return fail(`WWW-Authenticate is ${JSON.stringify(www)}, not a Bearer challenge`, ctx.ev(d.answer));
        evidence.push(ctx.ev(d.answer, { reason: 'auth_invalid', 'www-authenticate': www }));
      }
      return pass('401 auth_invalid for both', ...evidence);
    },
  },
  {
    id: 'envelope.auth_required',
    section: 'envelope',
    requirement: 'A write without credentials answers 401 auth_required; nothing runs.',
    spec: 'spec/transports.md §auth',
    needs: { writes: true },
    async run(ctx) {
      const tv = await ctx.testVerb('confirmation');
      const d = await ctx.dispatch(tv.verb, { args: tv.args[0] }, { key: false });
      return (
        expectError(ctx, d, 401, 'auth_required') ?? pass(`${tv.verb}: 401 auth_required`, ctx.ev(d.answer))
      );
    },
  },
  {
    id: 'envelope.error_fields',
    section: 'envelope',
    requirement:
      'Every envelope of the run is valid; every error has a snake_case reason, a message without a stack or file path, a hint that is text when present, and the HTTP status of the reason table.',
    spec: 'spec/envelope.md §error',
    final: true,
    async run(ctx) {
      if (ctx.seen.length === 0) return skip('the run received no envelope');
      const table = REASONS as Record<string, { status: number }>;
      for (const s of ctx.seen) {
        const evidence = { request: s.request, status: s.status, answer: s.envelope };
        if (typeof s.envelope.ok !== 'boolean')
          throw new Fail(
            `an envelope has no ok (HTTP ${s.status}): every answer says ok: true or ok: false`,
            [evidence],
          );
        const errors = validateOurs('envelope.json', s.envelope);
        if (errors.length > 0) throw new Fail(`an envelope is invalid: ${errors[0]}`, [evidence]);
        if (s.envelope.ok !== false) continue;
        const e = s.envelope.error ?? {};
        if (typeof e.reason !== 'string' || !/^[a-z][a-z0-9_]*$/.test(e.reason))
          throw new Fail(`reason ${JSON.stringify(e.reason)} is not snake_case`, [evidence]);
        if (typeof e.message !== 'string' || e.message === '' || STACK.test(e.message))
          throw new Fail(`the ${e.reason} message is empty or shows a stack or file path`, [evidence]);
        if (e.hint !== undefined && (typeof e.hint !== 'string' || e.hint === ''))
          throw new Fail(`the ${e.reason} error has an empty or non-text hint`, [evidence]);
        const known = table[e.reason];
        if (known !== undefined && known.status !== s.status)
          throw new Fail(`${e.reason} came with HTTP ${s.status}; the reason table says ${known.status}`, [
            evidence,
          ]);
      }
      const errorsSeen = ctx.seen.filter((s) => s.envelope.ok === false).length;
      return pass(`${ctx.seen.length} envelopes, ${errorsSeen} errors`);
    },
  },
];

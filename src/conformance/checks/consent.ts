/**
 * Section `consent`: the confirmation gate and the typed-phrase gate of the declared test verbs:
 * the pending answer and its nonce, the refusals (no nonce, other arguments, another verb, a
 * forged nonce, a spent nonce, a wrong phrase), the exact phrase, and the trail of the denials.
 *
 * A typed phrase is a human's act. Over HTTP the kit types the phrase the server showed, as a
 * human at a terminal would; a server that takes typed phrases only from human channels (an
 * MCP form, the dashboard, an out-of-band approval) refuses it, and the kit then skips
 * consent.wrong_phrase and consent.typed_phrase with that refusal as the reason.
 * Spec: spec/consent.md §protocol, §pending, §nonce, §typed-phrase, §audit.
 */
import type { KitContext, KitEnvelope } from '../context.ts';
import { Skip, fail, pass, skip } from '../outcome.ts';
import type { Check, Evidence } from '../types.ts';
import { confirm, newKey, preflight, readState, reasonOf, same, type Pending } from '../writes.ts';
import type { DeclaredTestVerb } from '../declaration.ts';
import { expectError } from './envelope.ts';
import { validateOurs } from '../schemas.ts';

const WRITES = { key: true, writes: true } as const;

/** The run's confirmation-gated pending answer (args[0]), shared by the refusal checks. */
function pendingConfirmation(ctx: KitContext): Promise<{ tv: DeclaredTestVerb; p: Pending }> {
  return ctx.once('consent-pending', async () => {
    const tv = await ctx.testVerb('confirmation');
    return { tv, p: await preflight(ctx, tv.verb, tv.args[0]) };
  });
}

/** The run's typed-phrase pending answer (args[0]). */
function pendingPhrase(ctx: KitContext): Promise<{ tv: DeclaredTestVerb; p: Pending }> {
  return ctx.once('consent-phrase', async () => {
    const tv = await ctx.testVerb('typed_phrase');
    return { tv, p: await preflight(ctx, tv.verb, tv.args[0]) };
  });
}

/** Remember a denial's audit_id for consent.trail. */
function noteDenial(ctx: KitContext, env: KitEnvelope | undefined, reason: string): void {
  const list = (ctx.shared.get('denials') as Array<{ audit_id: unknown; reason: string }> | undefined) ?? [];
  list.push({ audit_id: env?.audit_id, reason });
  ctx.shared.set('denials', list);
}

/** A refusal of the agent's phrase because the server takes phrases only from human channels. */
function channelRefusal(env: KitEnvelope | undefined): string | undefined {
  const reason = reasonOf(env);
  if (reason === undefined || reason === 'phrase_mismatch') return undefined;
  const text = `${reason} ${String(env?.error?.message ?? '')}`;
  return /channel|human/i.test(text) ? `${reason}: ${String(env?.error?.message ?? '')}` : undefined;
}

/** Another spelling of a phrase: the case of its letters swapped (else one character added). */
function wrongPhrase(phrase: string): string {
  const swapped = [...phrase]
    .map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()))
    .join('');
  return swapped !== phrase ? swapped : `${phrase}x`;
}

/** A nonce with one character of its MAC (the last dot-separated part) changed. */
export function forgeNonce(nonce: string): string {
  const at = Math.max(0, nonce.length - 5);
  const c = nonce[at] === 'A' ? 'B' : 'A';
  return `${nonce.slice(0, at)}${c}${nonce.slice(at + 1)}`;
}

export const consentChecks: Check[] = [
  {
    id: 'consent.pending',
    section: 'consent',
    requirement:
      'A confirmation-gated write without consent answers 202 dispatch_pending with consent { class, gate: confirmation, nonce, expires_at, summary } and an audit_id, and nothing runs.',
    spec: 'spec/consent.md §pending',
    needs: WRITES,
    async run(ctx) {
      const tv = await ctx.testVerb('confirmation');
      const before = await readState(ctx, tv);
      const { p } = await pendingConfirmation(ctx);
      const env = p.d.env!;
      const c = env.consent ?? {};
      const problems: string[] = [];
      const schema = validateOurs('envelope.json', env);
      if (schema.length > 0) problems.push(`invalid envelope: ${schema[0]}`);
      if (c.gate !== 'confirmation') problems.push(`gate is ${JSON.stringify(c.gate)}`);
      for (const k of ['class', 'summary', 'expires_at'])
        if (typeof c[k] !== 'string' || c[k] === '') problems.push(`consent.${k} is missing`);
      if (typeof c.expires_at === 'string' && Number.isNaN(Date.parse(c.expires_at)))
        problems.push(`consent.expires_at ${c.expires_at} is not a date-time`);
      if (!Number.isInteger(env.audit_id)) problems.push('no audit_id (a pending answer is audited)');
      if (problems.length > 0) return fail(problems.join('; '), ctx.ev(p.d.answer));
      const after = await readState(ctx, tv);
      if (before !== undefined && after !== undefined && !same(before.value, after.value))
        return fail('the state changed: the write ran without consent', before.evidence, after.evidence);
      return pass(
        `202 dispatch_pending, ${String(c.class)}`,
        ctx.ev(p.d.answer, { consent: { ...c, nonce: '…' } }),
      );
    },
  },
  {
    id: 'consent.nonce_required',
    section: 'consent',
    requirement: 'confirm: true without a nonce answers 400 nonce_required, and nothing runs.',
    spec: 'spec/consent.md §protocol',
    needs: WRITES,
    async run(ctx) {
      const tv = await ctx.testVerb('confirmation');
      const d = await ctx.dispatch(tv.verb, { args: tv.args[0], confirm: true });
      return expectError(ctx, d, 400, 'nonce_required') ?? pass('400 nonce_required', ctx.ev(d.answer));
    },
  },
  {
    id: 'consent.tampered_args',
    section: 'consent',
    requirement:
      'A nonce confirmed with other arguments than it was issued for answers 403 nonce_invalid, and nothing runs.',
    spec: 'spec/consent.md §nonce',
    needs: WRITES,
    async run(ctx) {
      const { tv, p } = await pendingConfirmation(ctx);
      const before = await readState(ctx, tv);
      const d = await confirm(ctx, tv.verb, tv.args[1], p.nonce, { idempotencyKey: newKey(ctx, 'tampered') });
      const bad = expectError(ctx, d, 403, 'nonce_invalid');
      if (bad !== undefined) return bad;
      noteDenial(ctx, d.env, 'nonce_invalid');
      const after = await readState(ctx, tv);
      if (before !== undefined && after !== undefined && !same(before.value, after.value))
        return fail('the state changed: the write ran', before.evidence, after.evidence);
      return pass('403 nonce_invalid', ctx.ev(d.answer));
    },
  },
  {
    id: 'consent.other_verb',
    section: 'consent',
    requirement: 'A nonce confirmed on another verb than it was issued for answers 403 nonce_invalid.',
    spec: 'spec/consent.md §nonce',
    needs: WRITES,
    async run(ctx) {
      const { p } = await pendingConfirmation(ctx);
      const other = await pendingPhrase(ctx).catch((err: unknown) => {
        if (err instanceof Skip)
          throw new Skip('needs a second declared gated verb (a typed_phrase one) to confirm the nonce on');
        throw err;
      });
      const d = await confirm(ctx, other.tv.verb, other.tv.args[0], p.nonce, {
        ...(other.p.phrase !== undefined ? { phrase: other.p.phrase } : {}),
        idempotencyKey: newKey(ctx, 'other-verb'),
      });
      const bad = expectError(ctx, d, 403, 'nonce_invalid');
      if (bad !== undefined) return bad;
      noteDenial(ctx, d.env, 'nonce_invalid');
      return pass(`403 nonce_invalid on ${other.tv.verb}`, ctx.ev(d.answer));
    },
  },
  {
    id: 'consent.forged_nonce',
    section: 'consent',
    requirement: 'A nonce with one character of its MAC changed answers 403 nonce_invalid.',
    spec: 'spec/consent.md §nonce',
    needs: WRITES,
    async run(ctx) {
      const { tv, p } = await pendingConfirmation(ctx);
      const d = await confirm(ctx, tv.verb, tv.args[0], forgeNonce(p.nonce), {
        idempotencyKey: newKey(ctx, 'forged'),
      });
      const bad = expectError(ctx, d, 403, 'nonce_invalid');
      if (bad !== undefined) return bad;
      noteDenial(ctx, d.env, 'nonce_invalid');
      return pass('403 nonce_invalid', ctx.ev(d.answer));
    },
  },
  {
    id: 'consent.replayed_nonce',
    section: 'consent',
    requirement:
      'The nonce, after the refusals above, still confirms the write once; used again (with a new idempotency key) it answers 403 nonce_replayed and the write does not run again.',
    spec: 'spec/consent.md §nonce',
    needs: WRITES,
    async run(ctx) {
      const { tv, p } = await pendingConfirmation(ctx);
      const before = await readState(ctx, tv);
      const first = await confirm(ctx, tv.verb, tv.args[0], p.nonce, {
        idempotencyKey: newKey(ctx, 'nonce-1'),
      });
      if (first.answer.status !== 200 || first.env?.ok !== true)
        return fail(
          `the confirmation answered HTTP ${first.answer.status} ${reasonOf(first.env) ?? ''} (a refused confirmation must not spend the nonce)`,
          ctx.ev(first.answer),
        );
      const mid = await readState(ctx, tv);
      const second = await confirm(ctx, tv.verb, tv.args[0], p.nonce, {
        idempotencyKey: newKey(ctx, 'nonce-2'),
      });
      const after = await readState(ctx, tv);
      const evidence: Evidence[] = [
        ctx.ev(first.answer, { ok: true, audit_id: first.env.audit_id }),
        ctx.ev(second.answer),
      ];
      if (second.env?.ok === true)
        return fail(
          'the spent nonce was accepted again: the write ran twice',
          ...evidence,
          ...(after ? [after.evidence] : []),
        );
      const bad = expectError(ctx, second, 403, 'nonce_replayed');
      if (bad !== undefined) return bad;
      noteDenial(ctx, second.env, 'nonce_replayed');
      if (mid !== undefined && after !== undefined && !same(mid.value, after.value))
        return fail('the state changed on the refused replay', mid.evidence, after.evidence);
      if (before !== undefined && mid !== undefined && same(before.value, mid.value))
        return fail('the confirmed write did not change the state', before.evidence, mid.evidence);
      return pass('ran once, then 403 nonce_replayed', ...evidence);
    },
  },
  {
    id: 'consent.typed_pending',
    section: 'consent',
    requirement:
      'A typed-phrase write without consent answers 202 dispatch_pending with gate typed_phrase and an approval_id, and either the exact typed_phrase to show or, where the tenant counts phrases only from a human (the default), phrase_channel "human" instead.',
    spec: 'spec/consent.md §pending',
    needs: WRITES,
    async run(ctx) {
      const { p } = await pendingPhrase(ctx);
      const c = p.d.env?.consent ?? {};
      if (c.gate !== 'typed_phrase')
        return fail(`gate is ${JSON.stringify(c.gate)}, not typed_phrase`, ctx.ev(p.d.answer));
      if (typeof c.approval_id !== 'string' || c.approval_id === '')
        return fail('no approval_id', ctx.ev(p.d.answer));
      // Human-only phrases (spec/consent.md §channels): an agent is not shown the phrase.
      if (c.phrase_channel === 'human' && c.typed_phrase === undefined)
        return pass(
          'phrase withheld from the agent (phrase_channel human); a human approves',
          ctx.ev(p.d.answer, { gate: c.gate, phrase_channel: c.phrase_channel, approval_id: c.approval_id }),
        );
      if (typeof c.typed_phrase !== 'string' || c.typed_phrase === '')
        return fail('no typed_phrase to show', ctx.ev(p.d.answer));
      return pass(
        `phrase "${c.typed_phrase}"`,
        ctx.ev(p.d.answer, { gate: c.gate, typed_phrase: c.typed_phrase, approval_id: c.approval_id }),
      );
    },
  },
  {
    id: 'consent.wrong_phrase',
    section: 'consent',
    requirement:
      'A phrase that differs from the one shown (its letters in the other case) answers 403 phrase_mismatch, with the exact phrase in the hint, and does not spend the nonce.',
    spec: 'spec/consent.md §typed-phrase',
    needs: WRITES,
    async run(ctx) {
      const { tv, p } = await pendingPhrase(ctx);
      if (p.phrase === undefined)
        return skip('the pending answer showed no phrase (see consent.typed_pending)');
      const d = await confirm(ctx, tv.verb, tv.args[0], p.nonce, {
        phrase: wrongPhrase(p.phrase),
        idempotencyKey: newKey(ctx, 'wrong'),
      });
      const channel = channelRefusal(d.env);
      if (channel !== undefined) {
        ctx.shared.set('phrase-channel', channel);
        return skip(`the server takes typed phrases only from human channels (${channel})`, ctx.ev(d.answer));
      }
      const bad = expectError(ctx, d, 403, 'phrase_mismatch');
      if (bad !== undefined) return bad;
      noteDenial(ctx, d.env, 'phrase_mismatch');
      if (!String(d.env?.error?.hint ?? '').includes(p.phrase))
        return fail('the hint does not repeat the exact phrase', ctx.ev(d.answer));
      return pass('403 phrase_mismatch', ctx.ev(d.answer));
    },
  },
  {
    id: 'consent.typed_phrase',
    section: 'consent',
    requirement: 'The exact phrase shown, with the nonce, runs the typed-phrase write once.',
    spec: 'spec/consent.md §protocol',
    needs: WRITES,
    async run(ctx) {
      const { tv, p } = await pendingPhrase(ctx);
      if (p.phrase === undefined)
        return skip('the pending answer showed no phrase (see consent.typed_pending)');
      const known = ctx.shared.get('phrase-channel');
      if (typeof known === 'string')
        return skip(`the server takes typed phrases only from human channels (${known})`);
      const before = await readState(ctx, tv);
      const d = await confirm(ctx, tv.verb, tv.args[0], p.nonce, {
        phrase: p.phrase,
        idempotencyKey: newKey(ctx, 'phrase'),
      });
      const channel = channelRefusal(d.env);
      if (channel !== undefined)
        return skip(`the server takes typed phrases only from human channels (${channel})`, ctx.ev(d.answer));
      if (d.answer.status !== 200 || d.env?.ok !== true)
        return fail(
          `the exact phrase answered HTTP ${d.answer.status} ${reasonOf(d.env) ?? ''}`,
          ctx.ev(d.answer),
        );
      const after = await readState(ctx, tv);
      if (before !== undefined && after !== undefined && same(before.value, after.value))
        return fail('the write answered ok but the state did not change', before.evidence, after.evidence);
      return pass(
        `ran with audit_id ${String(d.env.audit_id)}`,
        ctx.ev(d.answer, { ok: true, audit_id: d.env.audit_id }),
      );
    },
  },
  {
    id: 'consent.trail',
    section: 'consent',
    requirement:
      'Every refusal above carries an audit_id, and audit.trail lists each as a denied row with its reason.',
    spec: 'spec/consent.md §audit',
    needs: WRITES,
    final: true,
    async run(ctx) {
      const denials =
        (ctx.shared.get('denials') as Array<{ audit_id: unknown; reason: string }> | undefined) ?? [];
      if (denials.length === 0) return skip('no refusal of this section was observed');
      const missing = denials.filter((d) => !Number.isInteger(d.audit_id));
      if (missing.length > 0)
        return fail(`${missing.map((m) => m.reason).join(', ')} answered without an audit_id`, {
          request: 'the refusals above',
          answer: denials,
        });
      const d = await ctx.dispatch('audit.trail', { args: { status: 'denied', limit: 200 } });
      if (d.env?.ok !== true) return fail('audit.trail failed', ctx.ev(d.answer));
      const entries = (d.env.result?.entries ?? []) as Array<Record<string, unknown>>;
      for (const den of denials) {
        const row = entries.find((e) => e.audit_id === den.audit_id);
        if (row === undefined || row.status !== 'denied' || row.reason !== den.reason)
          return fail(
            `the ${den.reason} refusal (audit_id ${String(den.audit_id)}) is not a denied row with that reason`,
            ctx.ev(d.answer, row ?? entries.slice(0, 5)),
          );
      }
      return pass(
        `${denials.length} denials in the trail (${[...new Set(denials.map((x) => x.reason))].join(', ')})`,
      );
    },
  },
];

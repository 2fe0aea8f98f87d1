/**
 * Section `receipts`: the declaration, then one committed test write (a declared, revertible,
 * confirmation-gated verb) and what the spec promises about it: the receipt's fields and
 * signature, idempotent replay, a reused or invalid key, a repeat while it runs, revert once and
 * only once, a forged rollback handle, and the trail. Writes only with --allow-writes and a key,
 * and only with the declared verbs.
 * Spec: spec/receipts.md §fields, §attestation, §rollback_handle, §revert; spec/idempotency.md
 * §key, §outcomes, §atomicity; spec/audit.md §trail; spec/conformance.md §declaration.
 */
import { verifyReceipt } from '../../runtime/ledger/keys/receipts.ts';
import { profileKeys } from '../../transports/ucp/ucp-client.ts';
import { isReadRecord, type KitContext } from '../context.ts';
import { Skip, fail, pass, skip } from '../outcome.ts';
import { validateOurs } from '../schemas.ts';
import type { Check, Evidence } from '../types.ts';
import {
  committedWrite,
  confirm,
  newKey,
  preflight,
  readState,
  reasonOf,
  revertFlow,
  revertedWrite,
  same,
  skipIfRunLimited,
} from '../writes.ts';
import { expectError } from './envelope.ts';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const WRITES = { key: true, writes: true } as const;

/** The tenant's published public keys (its UCP profile, per tenant when whoami says which). */
async function publishedKeys(
  ctx: KitContext,
): Promise<{ keys: Record<string, unknown>[]; evidence: Evidence[] }> {
  const evidence: Evidence[] = [];
  const keys: Record<string, unknown>[] = [];
  const who = await ctx.whoami();
  const paths = [
    ...(who?.company_id !== undefined ? [`/t/${who.company_id}/.well-known/ucp`] : []),
    '/.well-known/ucp',
  ];
  for (const p of paths) {
    const answer = await ctx.http.get(p, { key: false });
    evidence.push(ctx.ev(answer, { keys: profileKeys(answer.json).map((k) => k.kid) }));
    if (answer.status === 200) keys.push(...profileKeys(answer.json));
    if (keys.length > 0) break;
  }
  return { keys, evidence };
}

export const receiptChecks: Check[] = [
  {
    id: 'receipts.declaration',
    section: 'receipts',
    requirement:
      'The server declares its test-safe verbs (GET /.well-known/solid-verbs-conformance, valid against schema/conformance-declaration.json), each a gated write on http, each state read a read on http.',
    spec: 'spec/conformance.md §declaration',
    async run(ctx) {
      const decl = await ctx.declaration();
      const { records } = await ctx.records('?surface=http');
      const byName = new Map(records.map((r) => [r.name, r]));
      for (const tv of decl.test_verbs) {
        const r = byName.get(tv.verb);
        if (r === undefined)
          return fail(`${tv.verb} is declared but not a verb of the http manifest`, {
            request: 'declaration',
            answer: tv,
          });
        if (r.requires_consent !== true || r.side_effects === 'read')
          return fail(`${tv.verb} is declared as a gated write but its record says otherwise`, {
            request: `GET /api/v1/agent/verbs/${tv.verb}`,
            answer: { requires_consent: r.requires_consent, side_effects: r.side_effects },
          });
        for (const args of [...tv.args, ...(tv.slow_args ? [tv.slow_args] : [])]) {
          const v = ctx.compile(r.input_schema);
          if (typeof v !== 'string' && !v(args))
            return fail(`declared arguments of ${tv.verb} are refused by its input schema`, {
              request: 'declaration',
              answer: args,
            });
        }
        if (tv.state !== undefined) {
          const s = byName.get(tv.state.verb);
          if (s === undefined || !isReadRecord(s))
            return fail(`the state read ${tv.state.verb} of ${tv.verb} is not a read verb on http`, {
              request: 'declaration',
              answer: tv.state,
            });
        }
      }
      return pass(decl.test_verbs.map((v) => `${v.verb} (${v.gate})`).join(', '));
    },
  },
  {
    id: 'receipts.fields',
    section: 'receipts',
    requirement:
      "A confirmed test write answers 200 with a receipt (status, integer audit_id, ISO timestamp, the caller's idempotency_key, a rollback_handle when revertible, an ES256 attestation) that the envelope repeats, and its effect happens.",
    spec: 'spec/receipts.md §fields',
    needs: WRITES,
    async run(ctx) {
      const w = await committedWrite(ctx);
      const env = w.confirmed.env!;
      const r = (env.result ?? {}) as Record<string, unknown>;
      const ev = ctx.ev(w.confirmed.answer, env);
      const att = r.attestation as Record<string, unknown> | undefined;
      const problems: string[] = [];
      if (typeof r.status !== 'string' || r.status === '') problems.push('result.status is missing');
      if (!Number.isInteger(r.audit_id) || (r.audit_id as number) < 1)
        problems.push('result.audit_id is not a positive integer');
      if (typeof r.timestamp !== 'string' || !ISO.test(r.timestamp))
        problems.push('result.timestamp is not ISO 8601');
      if (r.idempotency_key !== w.key)
        problems.push(`result.idempotency_key is ${JSON.stringify(r.idempotency_key)}, not the key sent`);
      if (w.tv.revertible && (typeof r.rollback_handle !== 'string' || r.rollback_handle === ''))
        problems.push('a revertible write answered no rollback_handle');
      if (att === undefined || typeof att !== 'object') problems.push('result.attestation is missing');
      else {
        if (att.alg !== 'ES256') problems.push(`attestation.alg is ${JSON.stringify(att.alg)}`);
        for (const k of ['kid', 'row_hash', 'jws'])
          if (typeof att[k] !== 'string') problems.push(`attestation.${k} is missing`);
        if (!Number.isInteger(att.seq)) problems.push('attestation.seq is not an integer');
      }
      if (env.audit_id !== r.audit_id) problems.push('the envelope audit_id differs from the receipt');
      if (env.idempotency_key !== r.idempotency_key)
        problems.push('the envelope idempotency_key differs from the receipt');
      if (r.rollback_handle !== undefined && env.rollback_handle !== r.rollback_handle)
        problems.push('the envelope rollback_handle differs from the receipt');
      const schema = validateOurs('shapes/receipt.json', r);
      if (schema.length > 0) problems.push(`invalid against schema/shapes/receipt.json: ${schema[0]}`);
      if (problems.length > 0) return fail(problems.join('; '), ev);
      if (w.before !== undefined && w.after !== undefined && same(w.before.value, w.after.value))
        return fail(
          'the receipt says completed but the declared state did not change',
          w.before.evidence,
          w.after.evidence,
        );
      return pass(`${w.tv.verb}: receipt with audit_id ${String(r.audit_id)}`, ev);
    },
  },
  {
    id: 'receipts.attestation',
    section: 'receipts',
    requirement: "The receipt's attestation verifies against a key the server publishes for the tenant.",
    spec: 'spec/receipts.md §attestation',
    needs: WRITES,
    async run(ctx) {
      const w = await committedWrite(ctx);
      const receipt = w.confirmed.env?.result;
      const kid = (receipt?.attestation as { kid?: unknown } | undefined)?.kid;
      if (typeof kid !== 'string') return skip('the receipt has no attestation kid (see receipts.fields)');
      const { keys, evidence } = await publishedKeys(ctx);
      if (!keys.some((k) => k.kid === kid))
        return skip(
          `the server publishes no key with kid ${kid} (the kit looks in /.well-known/ucp)`,
          ...evidence,
        );
      const v = verifyReceipt(receipt, keys as never);
      if (!v.valid)
        return fail(
          `the attestation does not verify: ${v.errors.join('; ')}`,
          ctx.ev(w.confirmed.answer, receipt?.attestation),
          ...evidence,
        );
      return pass(`verified with ${kid}`);
    },
  },
  {
    id: 'receipts.replay',
    section: 'receipts',
    requirement:
      'The same call with the same Idempotency-Key answers the stored receipt (replayed: true, Idempotent-Replayed: true, the same audit_id) without asking consent or running again.',
    spec: 'spec/idempotency.md §outcomes',
    needs: WRITES,
    async run(ctx) {
      const w = await committedWrite(ctx);
      const before = await readState(ctx, w.tv);
      const d = await ctx.dispatch(w.tv.verb, { args: w.args }, { idempotencyKey: w.key });
      const original = w.confirmed.env?.audit_id;
      if (d.answer.status !== 200 || d.env?.ok !== true)
        return fail(`the repeat answered HTTP ${d.answer.status} ${reasonOf(d.env) ?? ''}`, ctx.ev(d.answer));
      if (d.env.replayed !== true)
        return fail('the repeat is not marked replayed: true (did it run again?)', ctx.ev(d.answer));
      if (d.answer.headers.get('idempotent-replayed') !== 'true')
        return fail(
          'the repeat has no Idempotent-Replayed: true header',
          ctx.ev(d.answer, { headers: Object.fromEntries(d.answer.headers) }),
        );
      if (d.env.audit_id !== original || d.env.result?.audit_id !== original)
        return fail(
          `the replay names audit_id ${String(d.env.audit_id)} (its receipt: ${String(d.env.result?.audit_id)}), not the original ${String(original)}`,
          ctx.ev(d.answer),
        );
      const now = await readState(ctx, w.tv);
      if (now !== undefined && before !== undefined && !same(now.value, before.value))
        return fail('the state changed on the replay: the write ran again', before.evidence, now.evidence);
      ctx.shared.set('replayed', true);
      return pass(
        `stored receipt, audit_id ${String(original)}`,
        ctx.ev(d.answer, { replayed: true, audit_id: d.env.audit_id }),
      );
    },
  },
  {
    id: 'receipts.key_reused',
    section: 'receipts',
    requirement:
      'The same Idempotency-Key with other arguments answers 422 idempotency_key_reused, and nothing runs.',
    spec: 'spec/idempotency.md §outcomes',
    needs: WRITES,
    async run(ctx) {
      const w = await committedWrite(ctx);
      const before = await readState(ctx, w.tv);
      const d = await ctx.dispatch(w.tv.verb, { args: w.tv.args[1] }, { idempotencyKey: w.key });
      const bad = expectError(ctx, d, 422, 'idempotency_key_reused');
      if (bad !== undefined) return bad;
      const after = await readState(ctx, w.tv);
      if (before !== undefined && after !== undefined && !same(before.value, after.value))
        return fail('the state changed: the call ran', before.evidence, after.evidence);
      return pass('422 idempotency_key_reused', ctx.ev(d.answer));
    },
  },
  {
    id: 'receipts.key_invalid',
    section: 'receipts',
    requirement:
      'An Idempotency-Key longer than 255 characters answers 400 idempotency_key_invalid before anything runs.',
    spec: 'spec/idempotency.md §key',
    needs: WRITES,
    async run(ctx) {
      const tv = await ctx.testVerb('confirmation');
      const d = await ctx.dispatch(tv.verb, { args: tv.args[0] }, { idempotencyKey: 'k'.repeat(300) });
      skipIfRunLimited(ctx, d, tv.verb);
      return (
        expectError(ctx, d, 400, 'idempotency_key_invalid') ??
        pass('400 idempotency_key_invalid', ctx.ev(d.answer))
      );
    },
  },
  {
    id: 'receipts.in_flight',
    section: 'receipts',
    requirement:
      'A repeat of a write that is still running answers 409 idempotency_key_in_use (observable when the declaration gives slow_args).',
    spec: 'spec/idempotency.md §atomicity',
    needs: WRITES,
    async run(ctx) {
      const tv = await ctx.testVerb('confirmation');
      if (tv.slow_args === undefined)
        return skip(
          `the declaration gives no slow_args for ${tv.verb}, so a write in flight cannot be observed`,
        );
      const key = newKey(ctx, 'slow');
      const p = await preflight(ctx, tv.verb, tv.slow_args, { idempotencyKey: key });
      const first = confirm(ctx, tv.verb, tv.slow_args, p.nonce, { idempotencyKey: key });
      await new Promise((r) => setTimeout(r, 250));
      const second = await confirm(ctx, tv.verb, tv.slow_args, p.nonce, { idempotencyKey: key });
      const one = await first;
      if (one.env?.ok !== true)
        return fail(`the slow write answered HTTP ${one.answer.status}`, ctx.ev(one.answer));
      if (second.env?.ok === true && second.env.replayed === true)
        return skip(
          'not observable: the slow write finished before the repeat arrived (it was replayed)',
          ctx.ev(second.answer),
        );
      return (
        expectError(ctx, second, 409, 'idempotency_key_in_use') ??
        pass('409 idempotency_key_in_use while the first ran', ctx.ev(second.answer))
      );
    },
  },
  {
    id: 'receipts.revert',
    section: 'receipts',
    requirement:
      "audit.revert of the test write passes the write's own gate, answers reverted: true for that audit_id (valid against the revert shape), and restores the state.",
    spec: 'spec/receipts.md §revert',
    needs: WRITES,
    async run(ctx) {
      const rv = await revertedWrite(ctx);
      const { first, final, pending } = rv.revert;
      if (rv.write.tv.gate === 'confirmation' && pending === undefined && first.env?.ok === true)
        return fail('audit.revert ran without the confirmation its action needs', ctx.ev(first.answer));
      if (final.answer.status !== 200 || final.env?.ok !== true)
        return fail(
          `audit.revert answered HTTP ${final.answer.status} ${reasonOf(final.env) ?? ''}`,
          ctx.ev(first.answer),
          ctx.ev(final.answer),
        );
      const r = final.env.result ?? {};
      if (r.reverted !== true || r.audit_id !== rv.auditId)
        return fail(
          `the revert answered reverted ${JSON.stringify(r.reverted)} for audit_id ${JSON.stringify(r.audit_id)}`,
          ctx.ev(final.answer),
        );
      const errors = validateOurs('shapes/revert.json', r);
      if (errors.length > 0)
        return fail(`invalid against schema/shapes/revert.json: ${errors[0]}`, ctx.ev(final.answer, errors));
      const before = rv.write.before;
      if (before !== undefined && rv.restored !== undefined && !same(before.value, rv.restored.value))
        return fail('the state was not restored by the revert', before.evidence, rv.restored.evidence);
      ctx.shared.set('revert-audit-id', final.env.audit_id);
      return pass(`reverted audit_id ${rv.auditId}`, ctx.ev(final.answer));
    },
  },
  {
    id: 'receipts.already_reverted',
    section: 'receipts',
    requirement: 'Reverting the same action again answers 409 already_reverted, and nothing runs.',
    spec: 'spec/receipts.md §revert',
    needs: WRITES,
    async run(ctx) {
      const rv = await revertedWrite(ctx);
      if (rv.revert.final.env?.ok !== true)
        return skip('the first revert did not succeed (see receipts.revert)');
      const again = await revertFlow(ctx, rv.auditId);
      const d = reasonOf(again.first.env) === 'already_reverted' ? again.first : again.final;
      const bad = expectError(ctx, d, 409, 'already_reverted');
      if (bad !== undefined) return bad;
      const now = await readState(ctx, rv.write.tv);
      if (now !== undefined && rv.restored !== undefined && !same(now.value, rv.restored.value))
        return fail('the state changed on the second revert', rv.restored.evidence, now.evidence);
      return pass('409 already_reverted', ctx.ev(d.answer));
    },
  },
  {
    id: 'receipts.handle_invalid',
    section: 'receipts',
    requirement:
      'audit.revert with an altered rollback_handle answers 400 rollback_handle_invalid, and nothing runs.',
    spec: 'spec/receipts.md §rollback_handle',
    needs: WRITES,
    async run(ctx) {
      const w = await committedWrite(ctx);
      const handle = w.confirmed.env?.rollback_handle;
      if (typeof handle !== 'string' || handle.length < 8)
        return skip('the test write answered no rollback_handle');
      const at = handle.length - 6;
      const forged = `${handle.slice(0, at)}${handle[at] === 'A' ? 'B' : 'A'}${handle.slice(at + 1)}`;
      const d = await ctx.dispatch('audit.revert', { args: { rollback_handle: forged } });
      return (
        expectError(ctx, d, 400, 'rollback_handle_invalid') ??
        pass('400 rollback_handle_invalid', ctx.ev(d.answer))
      );
    },
  },
  {
    id: 'receipts.trail',
    section: 'receipts',
    requirement:
      'audit.trail lists the test write as completed, its replay (parent_id the write) and its revert (parent_id the write).',
    spec: 'spec/audit.md §trail',
    needs: WRITES,
    async run(ctx) {
      const w = await committedWrite(ctx);
      const id = w.confirmed.env?.audit_id;
      if (!Number.isInteger(id)) throw new Skip('the test write has no audit_id (see receipts.fields)');
      const page = async (verb: string) => {
        const d = await ctx.dispatch('audit.trail', { args: { verb, limit: 100 } });
        if (d.env?.ok !== true) return { d, entries: undefined };
        return { d, entries: (d.env.result?.entries ?? []) as Array<Record<string, unknown>> };
      };
      const writes = await page(w.tv.verb);
      if (writes.entries === undefined) return fail('audit.trail failed', ctx.ev(writes.d.answer));
      const row = writes.entries.find((e) => e.audit_id === id);
      if (row === undefined || row.status !== 'completed')
        return fail(
          `no completed row with audit_id ${String(id)} for ${w.tv.verb}`,
          ctx.ev(writes.d.answer, writes.entries.slice(0, 5)),
        );
      if (
        ctx.shared.get('replayed') === true &&
        !writes.entries.some((e) => e.status === 'replayed' && e.parent_id === id)
      )
        return fail(
          `no replayed row with parent_id ${String(id)}`,
          ctx.ev(writes.d.answer, writes.entries.slice(0, 5)),
        );
      const revertId = ctx.shared.get('revert-audit-id');
      if (revertId !== undefined) {
        const reverts = await page('audit.revert');
        const r = reverts.entries?.find((e) => e.audit_id === revertId);
        if (r === undefined || r.parent_id !== id)
          return fail(
            `no audit.revert row ${String(revertId)} with parent_id ${String(id)}`,
            ctx.ev(reverts.d.answer, reverts.entries?.slice(0, 5)),
          );
      }
      return pass(
        `write ${String(id)}${ctx.shared.get('replayed') ? ', its replay' : ''}${revertId !== undefined ? ` and revert ${String(revertId)}` : ''} in the trail`,
      );
    },
  },
];

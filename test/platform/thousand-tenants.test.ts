/**
 * One runtime, many businesses (spec/platform.md §isolation, docs/platform.md): 1,000 tenants are
 * created through the provisioning API (HTTP), each mapped to its external id; then for a sample
 * of pairs, a tenant's own agent key cannot read or write the other's rows through verbs of every
 * shape the runtime has here (receipt, preview, aggregate, trail, revert, explain, the receipt
 * check, transaction, subscribe, discovery); and the checkpointer's timer works on the tenants that
 * were active, not on all 1,000.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import type { Envelope } from '../../src/spec/types.ts';
import { installNotesPack } from '../support/notes-pack.ts';
import { platformFixture, type PlatformFixture } from './support.ts';
import { dispatchAs } from '../support/keyed.ts';

const N = 1000;
const PAIRS = 12;

async function confirmed(
  f: PlatformFixture,
  apiKey: string,
  verb: string,
  args: Record<string, unknown>,
): Promise<Envelope> {
  const first = await dispatchAs(f.h.rt, { apiKey, surface: 'cli' }, verb, args);
  if (first.error?.reason !== 'dispatch_pending') return first;
  return dispatchAs(f.h.rt, { apiKey, surface: 'cli' }, verb, args, {
    confirm: true,
    nonce: first.consent!.nonce,
  });
}

function dataOf(env: Envelope): Record<string, unknown> {
  assert.equal(env.ok, true, JSON.stringify(env.error));
  return (env.result as { data?: Record<string, unknown> }).data ?? (env.result as Record<string, unknown>);
}

it('1,000 tenants made through provisioning: each keeps to its own rows on every shape; checkpoints follow activity', async (t) => {
  const f = await platformFixture(t);
  await installNotesPack(f.h);
  const ids = new Map<string, number>();
  for (let i = 0; i < N; i++) {
    const r = await f.call('platform.tenants.create', {
      external_id: `acct_${i}`,
      name: `Business ${i}`,
      tier: 'professional',
    });
    ids.set(`acct_${i}`, (dataOf(r.env).tenant as { company_id: number }).company_id);
  }
  assert.equal(new Set(ids.values()).size, N, 'one tenant per external id');
  const listed = await f.h.rt.store.read((q) =>
    q.get<{ n: number }>('SELECT COUNT(*) AS n FROM tenants WHERE external_id IS NOT NULL'),
  );
  assert.equal(Number(listed!.n), N);

  // Whatever happened so far is signed; from here the timer's pass sees only active tenants.
  await f.h.rt.checkpoints.checkpointAll(true);
  await f.h.rt.checkpoints.checkpointAll();
  const seen: number[] = [];
  const original = f.h.rt.checkpoints.checkpoint.bind(f.h.rt.checkpoints);
  f.h.rt.checkpoints.checkpoint = (companyId: number) => {
    seen.push(companyId);
    return original(companyId);
  };

  // A sample of pairs spread over the range, each with its own admin agent key.
  const step = Math.floor(N / (PAIRS * 2));
  const active = new Set<number>();
  for (let p = 0; p < PAIRS; p++) {
    const a = `acct_${p * 2 * step}`;
    const b = `acct_${(p * 2 + 1) * step + 1}`;
    const keyOf = async (ext: string) =>
      String(
        (await f.call('platform.api_keys.create', { external_id: ext, role: 'admin' })).env.secret?.api_key,
      );
    const ka = await keyOf(a);
    const kb = await keyOf(b);
    active.add(ids.get(a)!).add(ids.get(b)!);

    // A subscribes first; B writes (receipt) and opens a transaction; A then tries to reach each.
    const sub = dataOf(await confirmed(f, ka, 'events.subscribe', { types: ['note.added'] }));
    const added = await confirmed(f, kb, 'notes_add', { text: `secret of ${b}` });
    const bAudit = Number(added.audit_id);
    assert.ok(bAudit > 0, JSON.stringify(added.error));
    const txn = dataOf(await dispatchAs(f.h.rt, { apiKey: kb, surface: 'cli' }, 'transaction.start', {}));
    const bTxn = String(txn.transaction_id);

    const as = (verb: string, args: Record<string, unknown>) =>
      dispatchAs(f.h.rt, { apiKey: ka, surface: 'cli' }, verb, args);
    // aggregate: A counts only its own notes (none).
    assert.equal(dataOf(await as('notes.count', {})).notes, 0);
    // preview: names nothing of B.
    assert.ok(!JSON.stringify(await as('notes.preview_add', { text: 'x' })).includes(`secret of ${b}`));
    // trail: none of B's rows.
    const trail = JSON.stringify(await as('audit.trail', {}));
    assert.ok(!trail.includes(`secret of ${b}`) && !trail.includes(`"audit_id":${bAudit},`), 'trail');
    // revert, explain, receipt check of B's row: not A's.
    const revert = await confirmed(f, ka, 'audit.revert', { audit_id: bAudit });
    assert.equal(revert.ok, false);
    assert.equal(revert.error?.reason, 'not_found', JSON.stringify(revert.error));
    const receipt = await as('audit.receipt', { audit_id: bAudit });
    assert.equal(receipt.ok, false);
    assert.equal(receipt.error?.reason, 'not_found');
    const explain = await as('audit.explain', { entity_type: 'note', entity_id: String(bAudit) });
    assert.ok(!JSON.stringify(explain).includes(`secret of ${b}`));
    // transaction: B's is not A's to see or append to.
    assert.equal(
      (await as('transaction.status', { transaction_id: bTxn })).error?.reason,
      'transaction_not_found',
    );
    assert.equal(
      (
        await as('transaction.append', {
          transaction_id: bTxn,
          verb: 'notes_add',
          args: { text: 'intruder' },
        })
      ).error?.reason,
      'transaction_not_found',
    );
    // writes land in A's own tenant only; naming B's id is refused.
    const override = await as('notes.count', { company_id: ids.get(b) });
    assert.equal(override.error?.reason, 'identity_override');
    assert.equal((await confirmed(f, ka, 'notes_add', { text: `mine ${a}` })).ok, true);
    assert.equal(
      dataOf(await dispatchAs(f.h.rt, { apiKey: kb, surface: 'cli' }, 'notes.count', {})).notes,
      1,
    );
    // discovery answers the same for both (no tenant data in it).
    assert.equal((await as('verbs.list', {})).ok, true);
    // subscribe: A's poll never carries B's events.
    const poll = JSON.stringify(await as('events.poll', { cursor: sub.cursor }));
    assert.ok(!poll.includes(`secret of ${b}`), 'events');
  }

  // The timer's pass signs the heads of the tenants that were active (and of the sandbox, whose
  // log holds the refusals of keyless calls), never the other ~976.
  await f.h.rt.auditBuffer.flush();
  await f.h.rt.checkpoints.checkpointAll();
  const signed = new Set(seen);
  for (const id of signed) assert.ok(active.has(id), `tenant ${id} was not active`);
  assert.ok(signed.size <= active.size && signed.size > 0, `${signed.size} checkpointed`);
  seen.length = 0;
  await f.h.rt.checkpoints.checkpointAll();
  assert.deepEqual(seen, [], 'no activity, no work');
});

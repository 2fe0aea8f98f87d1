/**
 * Crash consistency (issue 11): `solid serve` killed with SIGKILL in the middle of an HTTP write
 * load (confirmed WRITE_REVERSIBLE calls with Idempotency-Key headers), then restarted on the same
 * database. After the clients retried every request whose answer they never got (same key, same
 * nonce): every receipt a client received has its effect and its audit row; every effect has
 * exactly one receipt and one completed audit row (no lost and no doubled write); `solid audit
 * verify` passes. Normal and durable mode. Spec: spec/store.md §durability, spec/idempotency.md,
 * spec/audit.md.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { dispatchHttp, kill9, printedFact, serve, solid, stop } from './serve-process.ts';

interface Op {
  key: string;
  args: { contact_id: number; body: string };
  nonce?: string;
  receipt?: { audit_id: number; note_id: number; replayed: boolean };
}

async function confirm(base: string, apiKey: string, op: Op): Promise<void> {
  const r = await dispatchHttp(
    base,
    'crm.add_note',
    { args: op.args, confirm: true, nonce: op.nonce },
    { key: apiKey, idempotencyKey: op.key },
  );
  assert.equal(r.status, 200, `${op.key}: ${JSON.stringify(r.body)}`);
  const result = r.body.result as { note: { id: number } };
  op.receipt = {
    audit_id: Number(r.body.audit_id),
    note_id: result.note.id,
    replayed: r.body.replayed === true,
  };
}

/** Kills the server once armed, right after some client has sent a confirmation (so one is in flight). */
interface Killer {
  armed: boolean;
  fired: boolean;
  fire(): void;
}

/** One client: preflight + confirm, over and over, until a request fails (the server was killed). */
async function client(
  base: string,
  apiKey: string,
  contactId: number,
  name: string,
  ops: Op[],
  killer: Killer,
): Promise<void> {
  for (let i = 0; ; i++) {
    const op: Op = { key: `crash-${name}-${i}`, args: { contact_id: contactId, body: `crash-${name}-${i}` } };
    ops.push(op);
    try {
      const pre = await dispatchHttp(base, 'crm.add_note', { args: op.args }, { key: apiKey });
      assert.equal(pre.status, 202, JSON.stringify(pre.body));
      op.nonce = (pre.body.consent as { nonce: string }).nonce;
      const answer = confirm(base, apiKey, op);
      if (killer.armed && !killer.fired) {
        killer.fired = true;
        setTimeout(() => killer.fire(), 1);
      }
      await answer;
    } catch (err) {
      if (err instanceof assert.AssertionError) throw err;
      return; // the server was killed under this request: its outcome is unknown to the client
    }
  }
}

for (const durability of ['normal', 'full'] as const) {
  describe(`kill -9 during an HTTP write load (durability ${durability})`, () => {
    it('every receipt has its effect and audit row, no effect lacks one, nothing doubled, the chain verifies', async (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'solid-crash-'));
      t.after(() => rmSync(dir, { recursive: true, force: true }));
      const db = join(dir, 'solid.db');
      const first = await serve(t, db, ['--demo', '--durability', durability]);
      const apiKey = printedFact<Record<string, string>>(first.stdout, 'keys').owner!;
      const contactId = printedFact<{ customer_id: number }>(first.stdout, 'fixtures').customer_id;

      const ops: Op[] = [];
      const receipts = () => ops.filter((o) => o.receipt !== undefined).length;
      let killedNow!: () => void;
      const killed = new Promise<void>((r) => (killedNow = r));
      const killer: Killer = { armed: false, fired: false, fire: () => void kill9(first).then(killedNow) };
      const load = Promise.all(
        ['a', 'b', 'c', 'd'].map((n) => client(first.base, apiKey, contactId, n, ops, killer)),
      );
      // Once some writes went through, the next confirmation sent triggers the kill while the
      // four clients have requests in flight; each client stops at its first failed request.
      while (receipts() < 20) await new Promise((r) => setTimeout(r, 5));
      killer.armed = true;
      await killed;
      await load;
      const unknown = ops.filter((o) => o.nonce !== undefined && o.receipt === undefined);
      assert.ok(receipts() >= 20);
      assert.ok(unknown.length >= 1, 'a confirmation was in flight when the server died');

      const second = await serve(t, db, ['--durability', durability]);
      // Retry every confirmation whose answer was lost: the same key either replays the committed
      // receipt or, if the write never committed, runs it now (its nonce was never burned).
      for (const op of unknown) await confirm(second.base, apiKey, op);
      // And the server takes new writes.
      for (let i = 0; i < 5; i++) {
        const op: Op = { key: `crash-after-${i}`, args: { contact_id: contactId, body: `crash-after-${i}` } };
        const pre = await dispatchHttp(second.base, 'crm.add_note', { args: op.args }, { key: apiKey });
        op.nonce = (pre.body.consent as { nonce: string }).nonce;
        await confirm(second.base, apiKey, op);
        ops.push(op);
      }
      assert.equal(await stop(second), 0);
      t.diagnostic(
        `${receipts()} receipts; ${unknown.length} confirmations in flight at the kill, of which ${unknown.filter((o) => o.receipt!.replayed).length} had committed (replayed on retry)`,
      );

      const done = ops.filter((o) => o.receipt !== undefined);
      const file = new Database(db, { readonly: true });
      t.after(() => file.close());
      const auditRow = file.prepare(
        'SELECT action_type, status, idempotency_key, company_id FROM audit_log WHERE audit_id = ?',
      );
      const note = file.prepare('SELECT body FROM notes WHERE id = ?');
      for (const op of done) {
        assert.deepEqual(
          auditRow.get(op.receipt!.audit_id),
          { action_type: 'crm.add_note', status: 'completed', idempotency_key: op.key, company_id: 2 },
          `${op.key}: audit row of the receipt`,
        );
        assert.deepEqual(note.get(op.receipt!.note_id), { body: op.key }, `${op.key}: effect of the receipt`);
      }
      // Every effect of the test: exactly one note per key, each with one completed audit row, each known to a client.
      const notes = file
        .prepare(`SELECT body, COUNT(*) AS n FROM notes WHERE body LIKE 'crash-%' GROUP BY body`)
        .all() as Array<{ body: string; n: number }>;
      assert.deepEqual(
        notes.filter((n) => n.n !== 1),
        [],
        'no write executed twice',
      );
      assert.deepEqual(
        notes.map((n) => n.body).sort(),
        done.map((o) => o.key).sort(),
        'the effects are exactly the receipts',
      );
      const audited = file
        .prepare(
          `SELECT idempotency_key AS k, COUNT(*) AS n FROM audit_log WHERE action_type = 'crm.add_note' AND status = 'completed' AND idempotency_key LIKE 'crash-%' GROUP BY idempotency_key`,
        )
        .all() as Array<{ k: string; n: number }>;
      assert.deepEqual(
        audited.map((a) => `${a.k}:${a.n}`).sort(),
        done.map((o) => `${o.key}:1`).sort(),
        'one completed audit row per effect',
      );

      const verify = await solid(['--db', db, 'audit', 'verify', '--json']);
      assert.equal(verify.code, 0, verify.stdout + verify.stderr);
      assert.equal((JSON.parse(verify.stdout) as { ok: boolean }).ok, true);
    });
  });
}

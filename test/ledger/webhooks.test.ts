/**
 * Signed webhooks (docs/webhooks.md): endpoints added, listed and removed through audited owner
 * verbs, the secret shown once and kept nowhere in clear; events queued in the event's own
 * transaction and delivered by the outbox loop, signed with the Standard Webhooks scheme, verified
 * here with the `standardwebhooks` library by a receiver on 127.0.0.1 that fails twice first.
 * Both engines (SOLID_TEST_ENGINE).
 */
import { test, type TestContext } from 'node:test';
import { strict as assert } from 'node:assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { Webhook } from 'standardwebhooks';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import type { DispatchOptions } from '../../src/runtime/core.ts';
import type { Envelope } from '../../src/spec/types.ts';
import { operatorAtTerminal } from '../../src/identity/principal.ts';
import { emitWebhookEvent, WEBHOOK_KIND } from '../../src/runtime/ledger/write/webhook-endpoints.ts';
import { dispatchAs } from '../support/keyed.ts';

interface Delivery {
  id: string;
  status: number;
  body: { type: string; timestamp: string; data: Record<string, unknown> } | undefined;
  verified: boolean;
}

/** A receiver that verifies with the standardwebhooks library and answers 500 `failFirst` times per message id. */
async function receiver(t: TestContext, failFirst: number) {
  const deliveries: Delivery[] = [];
  const seen = new Map<string, number>();
  let secret = '';
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const id = String(req.headers['webhook-id'] ?? '');
      let body: Delivery['body'];
      let verified = false;
      try {
        body = new Webhook(secret).verify(raw, {
          'webhook-id': id,
          'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
          'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
        }) as Delivery['body'];
        verified = true;
      } catch {
        // a bad signature: answered 401 below
      }
      const n = (seen.get(id) ?? 0) + 1;
      seen.set(id, n);
      const status = !verified ? 401 : n <= failFirst ? 500 : 204;
      deliveries.push({ id, status, body, verified });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    deliveries,
    setSecret(s: string) {
      secret = s;
    },
    accepted: (type: string) => deliveries.filter((d) => d.status === 204 && d.body?.type === type),
  };
}

async function until(check: () => boolean | Promise<boolean>, ms = 8000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return check();
}

interface Harness extends TestRuntime {
  logs: string[];
  call(key: string, verb: string, args?: unknown, options?: DispatchOptions): Promise<Envelope>;
  confirmed(key: string, verb: string, args: unknown): Promise<Envelope>;
  /** The same pending → confirm round trip by the tenant's owner signed in to the dashboard (a human). */
  ownerConfirmed(verb: string, args: unknown, companyId?: number): Promise<Envelope>;
}

async function harness(t: TestContext, extra: Record<string, unknown> = {}): Promise<Harness> {
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const h = await createTestRuntime(t, {
    logger: pino({ level: 'trace' }, sink),
    outbox: { baseDelayMs: 40, maxDelayMs: 80, pollIntervalMs: 100 },
    ...extra,
  });
  const call = (key: string, verb: string, args: unknown = {}, options?: DispatchOptions) =>
    dispatchAs(h.rt, { surface: 'http', apiKey: key }, verb, args, options);
  return {
    ...h,
    logs,
    call,
    async confirmed(key, verb, args) {
      const pending = await call(key, verb, args);
      assert.equal(pending.error?.reason, 'dispatch_pending', JSON.stringify(pending));
      return call(key, verb, args, { confirm: true, nonce: pending.consent!.nonce });
    },
    async ownerConfirmed(verb, args, companyId = h.companyId) {
      const caller = { surface: 'http' as const, principal: h.human('owner', companyId) };
      const pending = await h.rt.dispatch(caller, verb, args);
      assert.equal(pending.error?.reason, 'dispatch_pending', JSON.stringify(pending));
      return h.rt.dispatch(caller, verb, args, { confirm: true, nonce: pending.consent!.nonce });
    },
  };
}

async function addEndpoint(h: Harness, url: string, events?: string[]) {
  const env = await h.ownerConfirmed('webhooks.add', { url, ...(events ? { events } : {}) });
  assert.equal(env.ok, true, JSON.stringify(env));
  const secret = env.secret?.secret as string;
  assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);
  const endpoint = (env.result as { endpoint: { endpoint_id: string } }).endpoint;
  return { secret, endpointId: endpoint.endpoint_id, env };
}

test('approval.requested is signed, verified by the Standard Webhooks library, and retried until the receiver accepts', async (t) => {
  const h = await harness(t);
  const rx = await receiver(t, 2);
  const { secret, env } = await addEndpoint(h, rx.url);
  rx.setSecret(secret);
  // The secret is in the answer once: not in the receipt, any row in clear, or a log line.
  assert.equal(JSON.stringify(env.result).includes(secret), false);
  const secretPart = secret.slice('whsec_'.length);
  const stored = await h.rt.store.read((q) =>
    q.all<Record<string, unknown>>('SELECT * FROM webhook_endpoints'),
  );
  assert.equal(stored.length, 1);
  assert.equal(JSON.stringify(stored).includes(secretPart), false, 'stored encrypted');
  const auditRows = await h.rt.store.read((q) => q.all<Record<string, unknown>>('SELECT * FROM audit_log'));
  assert.equal(JSON.stringify(auditRows).includes(secretPart), false);
  assert.ok(
    auditRows.some((r) => r.action_type === 'webhooks.add'),
    'audited',
  );

  // A typed-phrase write by the owner's agent key leaves a pending approval.
  const pending = await h.call(h.keys.owner, 'api_keys.revoke', { key_id: '0123456789ab' });
  assert.equal(pending.error?.reason, 'dispatch_pending', JSON.stringify(pending));
  const approvalId = pending.consent!.approval_id!;

  assert.ok(await until(() => rx.accepted('approval.requested').length === 1), 'delivered by the loop alone');
  const tries = rx.deliveries.filter((d) => d.body?.type === 'approval.requested');
  assert.deepEqual(
    tries.map((d) => d.status),
    [500, 500, 204],
    'failed twice, then accepted',
  );
  assert.ok(
    tries.every((d) => d.verified),
    'every attempt carries a valid signature',
  );
  assert.equal(new Set(tries.map((d) => d.id)).size, 1, 'one webhook-id across the retries');
  const body = tries[2]!.body!;
  assert.equal(body.data.approval_id, approvalId);
  assert.equal(body.data.verb, 'api_keys.revoke');
  const outboxRow = () =>
    h.rt.store.read((q) =>
      q.get<{ status: string; attempts: number }>('SELECT status, attempts FROM outbox WHERE kind = ?', [
        WEBHOOK_KIND,
      ]),
    );
  assert.ok(await until(async () => (await outboxRow())?.status === 'delivered'), 'marked delivered');
  const row = await h.rt.store.read((q) =>
    q.get<{ status: string; attempts: number }>('SELECT status, attempts FROM outbox WHERE kind = ?', [
      WEBHOOK_KIND,
    ]),
  );
  assert.deepEqual({ ...row, attempts: Number(row!.attempts) }, { status: 'delivered', attempts: 3 });

  // Decided: approval.decided (reject by the owner).
  // The owner at the terminal of this database: a human decides (spec/consent.md §channels).
  const ownerPrincipal = operatorAtTerminal(await h.rt.tenants.authenticate(h.keys.owner));
  const rejected = await h.rt.dispatch({ surface: 'cli', principal: ownerPrincipal }, 'approvals.reject', {
    approval_id: approvalId,
    note: 'no',
  });
  assert.equal(rejected.ok, true, JSON.stringify(rejected));
  assert.ok(await until(() => rx.accepted('approval.decided').length === 1));
  const decided = rx.accepted('approval.decided')[0]!.body!.data;
  assert.equal(decided.decision, 'rejected');
  assert.equal(decided.approval_id, approvalId);

  await new Promise((r) => setTimeout(r, 50));
  assert.equal(
    h.logs.some((l) => l.includes(secretPart)),
    false,
    'the secret is in no log line',
  );
});

test('approval.expired is announced once when the loop sees the approval expire; cap.reached with the write that reaches the cap', async (t) => {
  const h = await harness(t, { nonceTtlSeconds: 1 });
  const rx = await receiver(t, 0);
  const { secret } = await addEndpoint(h, rx.url, ['approval.expired', 'cap.reached']);
  rx.setSecret(secret);
  const pending = await h.call(h.keys.owner, 'api_keys.revoke', { key_id: '0123456789ab' });
  assert.equal(pending.error?.reason, 'dispatch_pending', JSON.stringify(pending));
  assert.ok(await until(() => rx.accepted('approval.expired').length === 1, 6000), 'expired announced');
  assert.equal(rx.accepted('approval.expired')[0]!.body!.data.approval_id, pending.consent!.approval_id);
  // Maintenance afterwards does not announce it again.
  await h.rt.maintenance();
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(rx.accepted('approval.expired').length, 1);

  // cap.reached: a WRITE_REVERSIBLE cap of 1, then one write uses it.
  const caps = await h.confirmed(h.keys.owner, 'tenant.caps_set', {
    consent_class: 'WRITE_REVERSIBLE',
    limit: 1,
  });
  assert.equal(caps.ok, true, JSON.stringify(caps));
  const made = await h.confirmed(h.keys.owner, 'api_keys.create', { name: 'x', role: 'employee' });
  assert.equal(made.ok, true, JSON.stringify(made));
  assert.ok(await until(() => rx.accepted('cap.reached').length === 1));
  const data = rx.accepted('cap.reached')[0]!.body!.data;
  assert.equal(data.consent_class, 'WRITE_REVERSIBLE');
  assert.equal(data.cap, 1);
});

test('a rolled-back write queues nothing', async (t) => {
  const h = await harness(t);
  await addEndpoint(h, 'https://hooks.example.com/x');
  await assert.rejects(
    h.rt.store.write(async (tx) => {
      await emitWebhookEvent(tx, { companyId: h.companyId, type: 'cap.reached', data: {}, now: new Date() });
      throw new Error('the write fails after the event');
    }),
  );
  const n = await h.rt.store.read((q) =>
    q.get<{ n: number }>('SELECT COUNT(*) AS n FROM outbox WHERE kind = ?', [WEBHOOK_KIND]),
  );
  assert.equal(Number(n!.n), 0);
});

test('endpoint URLs: http(s) only, plain http only to loopback, no credentials; refusals are audited envelopes', async (t) => {
  const h = await harness(t);
  for (const url of [
    'ftp://example.com/hook',
    'http://example.com/hook',
    'http://10.0.0.5/hook',
    'https://user:pw@example.com/hook',
    'file:///etc/passwd',
  ]) {
    const owner = { surface: 'http' as const, principal: h.human('owner') };
    const pending = await h.rt.dispatch(owner, 'webhooks.add', { url });
    const env =
      pending.error?.reason === 'dispatch_pending'
        ? await h.rt.dispatch(
            owner,
            'webhooks.add',
            { url },
            { confirm: true, nonce: pending.consent!.nonce },
          )
        : pending;
    assert.equal(env.error?.reason, 'invalid_input', `${url}: ${JSON.stringify(env)}`);
    assert.ok(env.error?.hint, 'with a hint');
  }
  const refused = await h.rt.store.read((q) =>
    q.all<{ status: string }>("SELECT status FROM audit_log WHERE action_type = 'webhooks.add'"),
  );
  assert.ok(refused.length >= 5, 'each refusal has its audit row');
  // https anywhere and http to loopback are accepted.
  await addEndpoint(h, 'https://hooks.example.com/solid');
  await addEndpoint(h, 'http://localhost:8080/hook');
});

test('webhooks verbs: owner only, listed without secrets, removed (and restored by revert)', async (t) => {
  const h = await harness(t);
  const denied = await h.call(h.keys.admin, 'webhooks.list');
  assert.equal(denied.error?.reason, 'role_denied');
  const added = await addEndpoint(h, 'https://hooks.example.com/a', ['approval.requested']);
  const list = await h.call(h.keys.owner, 'webhooks.list');
  assert.equal(list.ok, true, JSON.stringify(list));
  assert.equal(JSON.stringify(list).includes(added.secret.slice(6)), false);
  const eps = (list.result as { data: { endpoints: Array<{ endpoint_id: string; events: string[] }> } }).data
    .endpoints;
  assert.deepEqual(
    eps.map((e) => e.events),
    [['approval.requested']],
  );
  // Another tenant cannot see or remove it (not_found, no oracle).
  const other = await h.ownerConfirmed(
    'webhooks.remove',
    { endpoint_id: added.endpointId },
    h.otherCompanyId,
  );
  assert.equal(other.error?.reason, 'not_found', JSON.stringify(other));
  // An agent holding the owner key may not silence the endpoint (nor add one): a human decides.
  const byKey = await h.confirmed(h.keys.owner, 'webhooks.remove', { endpoint_id: added.endpointId });
  assert.equal(byKey.error?.reason, 'human_required', JSON.stringify(byKey));
  const addByKey = await h.confirmed(h.keys.owner, 'webhooks.add', { url: 'https://attacker.example.com/h' });
  assert.equal(addByKey.error?.reason, 'human_required', JSON.stringify(addByKey));
  const removed = await h.ownerConfirmed('webhooks.remove', { endpoint_id: added.endpointId });
  assert.equal(removed.ok, true, JSON.stringify(removed));
  assert.equal(JSON.stringify(removed).includes('secret_enc'), false);
  const empty = await h.call(h.keys.owner, 'webhooks.list');
  assert.equal((empty.result as { data: { endpoints: unknown[] } }).data.endpoints.length, 0);
  const revertByKey = await h.confirmed(h.keys.owner, 'audit.revert', { audit_id: removed.audit_id });
  assert.equal(revertByKey.error?.reason, 'human_required', JSON.stringify(revertByKey));
  const reverted = await h.ownerConfirmed('audit.revert', { audit_id: removed.audit_id });
  assert.equal(reverted.ok, true, JSON.stringify(reverted));
  const back = await h.call(h.keys.owner, 'webhooks.list');
  assert.equal((back.result as { data: { endpoints: unknown[] } }).data.endpoints.length, 1);
});

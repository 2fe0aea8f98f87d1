/**
 * Streaming the audit log (spec/audit.md §streaming, docs/compliance.md §6): a SIEM stand-in — a
 * local OTLP/HTTP receiver — and a webhook receiver each get every audit row once, in order per
 * tenant, and check the chain from what they received alone (each row re-hashed, each prev_hash
 * the previous row's hash). A receiver that fails once gets the rows again; a restart resumes
 * after the last row handed over. An agent's key cannot remove a streaming sink. Both engines.
 */
import { test, type TestContext } from 'node:test';
import { strict as assert } from 'node:assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { installNotesPack } from '../support/notes-pack.ts';
import type { DispatchOptions } from '../../src/runtime/core.ts';
import { storedRowHash } from '../../src/runtime/ledger/verify/chain-walk.ts';
import { GENESIS_HASH } from '../../src/runtime/ledger/write/audit.ts';
import { startOtlpAuditStream, otlpLogsEndpoint } from '../../src/runtime/ledger/stream/otlp-logs.ts';
import { dispatchAs } from '../support/keyed.ts';

async function until(check: () => boolean | Promise<boolean>, ms = 15_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return check();
}

/** Some of every kind of row: writes, buffered reads, refusals, for the main tenant and another. */
async function activity(h: TestRuntime, n: number): Promise<void> {
  const call = (key: string, verb: string, args: unknown = {}, o?: DispatchOptions) =>
    dispatchAs(h.rt, { surface: 'http', apiKey: key }, verb, args, o);
  for (let i = 0; i < n; i++) {
    const pending = await call(h.keys.employee, 'notes_add', { text: `note ${i}` });
    assert.equal(pending.error?.reason, 'dispatch_pending', JSON.stringify(pending));
    const done = await call(
      h.keys.employee,
      'notes_add',
      { text: `note ${i}` },
      { confirm: true, nonce: pending.consent!.nonce },
    );
    assert.equal(done.ok, true, JSON.stringify(done));
    await call(h.keys.employee, 'notes.count');
    await call(h.keys.read_only, 'notes_add', { text: 'refused' });
    await call(h.otherOwnerKey, 'notes.count');
  }
  await h.rt.auditBuffer.flush();
}

/** The tenant's committed rows: [seq, audit_id, row_hash] in seq order. */
async function dbRows(h: TestRuntime, companyId: number) {
  return h.rt.store.read((q) =>
    q.all<{ seq: number; audit_id: number; row_hash: string }>(
      'SELECT seq, audit_id, row_hash FROM audit_log WHERE company_id = ? ORDER BY seq',
      [companyId],
    ),
  );
}

/**
 * What a receiver checks with the received rows alone: each re-hashes to its row_hash, links to the
 * previous one, seq grows by one from 1. Returns the number of rows checked.
 */
function checkChain(rows: ReadonlyArray<Record<string, unknown>>, label: string): number {
  let prev = GENESIS_HASH;
  rows.forEach((row, i) => {
    assert.equal(Number(row.seq), i + 1, `${label}: seq ${i + 1} in order, once`);
    assert.equal(row.prev_hash, prev, `${label}: row ${String(row.seq)} links to the one before`);
    assert.equal(storedRowHash(row), row.row_hash, `${label}: row ${String(row.seq)} re-hashes`);
    prev = String(row.row_hash);
  });
  return rows.length;
}

interface OtlpRecord {
  attrs: Record<string, string | number>;
  body: Record<string, unknown>;
}

/** An OTLP/HTTP (JSON) logs receiver; refuses its first request with 400 when `failFirst`. */
async function otlpReceiver(t: TestContext, failFirst: boolean) {
  const accepted: OtlpRecord[] = [];
  let requests = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests++;
      if (req.url !== '/v1/logs' || (failFirst && requests === 1)) {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      const doc = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceLogs: Array<{
          scopeLogs: Array<{
            logRecords: Array<{
              body: { stringValue: string };
              attributes: Array<{ key: string; value: { stringValue?: string; intValue?: string | number } }>;
            }>;
          }>;
        }>;
      };
      for (const rl of doc.resourceLogs)
        for (const sl of rl.scopeLogs)
          for (const lr of sl.logRecords) {
            const attrs: Record<string, string | number> = {};
            for (const a of lr.attributes) attrs[a.key] = a.value.stringValue ?? Number(a.value.intValue);
            accepted.push({ attrs, body: JSON.parse(lr.body.stringValue) as Record<string, unknown> });
          }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/logs`,
    accepted,
    requests: () => requests,
    of: (companyId: number) => accepted.filter((r) => r.attrs['solid.company_id'] === companyId),
  };
}

test('the OTLP logs endpoint comes from the standard OTEL_* variables, and only when logs are asked for', () => {
  assert.equal(otlpLogsEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }), undefined, 'traces only');
  assert.equal(
    otlpLogsEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/', OTEL_LOGS_EXPORTER: 'otlp' }),
    'http://c:4318/v1/logs',
  );
  assert.equal(otlpLogsEndpoint({ OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: 'http://c:9/logs' }), 'http://c:9/logs');
  assert.equal(
    otlpLogsEndpoint({ OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: 'http://c:9/logs', OTEL_SDK_DISABLED: 'true' }),
    undefined,
  );
  assert.equal(
    otlpLogsEndpoint({ OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: 'http://c:9/logs', OTEL_LOGS_EXPORTER: 'none' }),
    undefined,
  );
});

test('a SIEM stand-in receives every audit row once, in order per tenant, as OTLP logs it can verify alone', async (t) => {
  const h = await createTestRuntime(t);
  await installNotesPack(h);
  const rx = await otlpReceiver(t, true);
  await activity(h, 6);
  const env = {
    OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: rx.url,
    OTEL_BLRP_SCHEDULE_DELAY: '20',
    OTEL_BLRP_MAX_EXPORT_BATCH_SIZE: '7',
  };
  const started = await startOtlpAuditStream(env, { store: h.rt.store, logger: h.rt.logger });
  assert.ok(started, 'started by the variables');
  let stopped = false;
  t.after(() => (stopped ? undefined : started.close()));

  const caughtUp = async (companyId: number) => {
    const rows = await dbRows(h, companyId);
    return rx.of(companyId).length >= rows.length && rows.length > 0;
  };
  assert.ok(await until(async () => (await caughtUp(h.companyId)) && (await caughtUp(h.otherCompanyId))));
  assert.ok(rx.requests() > 1, 'the first request was refused, and its rows sent again');

  // Restart: stop the stream, more activity, a new stream resumes after the last row acknowledged.
  await started.close();
  stopped = true;
  await activity(h, 3);
  const again = await startOtlpAuditStream(env, { store: h.rt.store, logger: h.rt.logger });
  assert.ok(again);
  t.after(() => again.close());
  assert.ok(await until(async () => (await caughtUp(h.companyId)) && (await caughtUp(h.otherCompanyId))));

  for (const companyId of [h.companyId, h.otherCompanyId]) {
    const received = rx.of(companyId);
    const stored = await dbRows(h, companyId);
    // The receiver's view alone: attributes match the body, and the chain holds from genesis.
    for (const r of received) {
      assert.equal(r.attrs['solid.audit_id'], r.body.audit_id);
      assert.equal(r.attrs['solid.seq'], r.body.seq);
      assert.equal(r.attrs['solid.row_hash'], r.body.row_hash);
      assert.equal(r.attrs['solid.prev_hash'], r.body.prev_hash);
      assert.equal(r.attrs['solid.verb'], r.body.action_type);
    }
    assert.equal(
      checkChain(
        received.map((r) => r.body),
        `tenant ${companyId}`,
      ),
      stored.length,
      'every committed row, once',
    );
    assert.deepEqual(
      received.map((r) => r.body.audit_id),
      stored.map((r) => Number(r.audit_id)),
    );
  }
  // Refusals and buffered reads are in the stream too.
  const verbs = rx.of(h.companyId).map((r) => `${String(r.body.action_type)}:${String(r.body.status)}`);
  assert.ok(verbs.includes('notes_add:denied'), 'a refusal');
  assert.ok(verbs.includes('notes.count:completed'), 'a buffered read, once flushed');
});

interface Delivery {
  id: string;
  status: number;
  body: { type: string; data: Record<string, unknown> };
}

/** A Standard Webhooks receiver that answers 500 to the first delivery it gets, then 204. */
async function webhookReceiver(t: TestContext) {
  const deliveries: Delivery[] = [];
  let secret = '';
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const id = String(req.headers['webhook-id'] ?? '');
      const body = new Webhook(secret).verify(raw, {
        'webhook-id': id,
        'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
        'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
      }) as Delivery['body'];
      const status = deliveries.length === 0 ? 500 : 204;
      deliveries.push({ id, status, body });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/audit`,
    deliveries,
    setSecret: (s: string) => void (secret = s),
    accepted: () => deliveries.filter((d) => d.status === 204),
  };
}

test('a webhook sink gets every audit row in order, once accepted, through a receiver that fails once; an agent cannot remove it', async (t) => {
  const h = await createTestRuntime(t, { outbox: { baseDelayMs: 20, maxDelayMs: 40, pollIntervalMs: 50 } });
  await installNotesPack(h);
  const rx = await webhookReceiver(t);
  const owner = { surface: 'http' as const, principal: h.human('owner') };
  const pending = await h.rt.dispatch(owner, 'webhooks.add', { url: rx.url, events: ['audit.row'] });
  assert.equal(pending.error?.reason, 'dispatch_pending', JSON.stringify(pending));
  const added = await h.rt.dispatch(
    owner,
    'webhooks.add',
    { url: rx.url, events: ['audit.row'] },
    {
      confirm: true,
      nonce: pending.consent!.nonce,
    },
  );
  assert.equal(added.ok, true, JSON.stringify(added));
  rx.setSecret(added.secret?.secret as string);
  const endpointId = (added.result as { endpoint: { endpoint_id: string } }).endpoint.endpoint_id;
  await activity(h, 4);

  const caughtUp = async () => {
    const rows = await dbRows(h, h.companyId);
    const got = new Set(rx.accepted().map((d) => d.id));
    return rows.every((r) => got.has(`audit_${Number(r.audit_id)}`));
  };
  assert.ok(await until(caughtUp), 'every row delivered by the loop alone');
  assert.equal(rx.deliveries[0]!.status, 500, 'the first delivery failed');
  assert.equal(
    rx.deliveries[1]!.id,
    rx.deliveries[0]!.id,
    'the same row again, same webhook-id, before any other',
  );

  // An agent's key (the owner's own) cannot remove the sink, nor add a new one.
  const agent = { surface: 'http' as const, apiKey: h.keys.owner };
  const asked = await dispatchAs(h.rt, agent, 'webhooks.remove', { endpoint_id: endpointId });
  const removal = asked.consent?.nonce
    ? await dispatchAs(
        h.rt,
        agent,
        'webhooks.remove',
        { endpoint_id: endpointId },
        { confirm: true, nonce: asked.consent.nonce },
      )
    : asked;
  assert.equal(removal.ok, false);
  assert.equal(removal.error?.reason, 'human_required', JSON.stringify(removal.error));

  // More rows (the refused removal among them) and the stream carries on, in order.
  await activity(h, 2);
  assert.ok(await until(caughtUp));
  const accepted = rx.accepted();
  for (const d of accepted) {
    assert.equal(d.body.type, 'audit.row');
    assert.equal(d.id, `audit_${Number(d.body.data.audit_id)}`, 'webhook-id is the row id');
  }
  const stored = await dbRows(h, h.companyId);
  assert.equal(
    checkChain(
      accepted.map((d) => d.body.data),
      'webhook',
    ),
    stored.length,
    'each row once, in order',
  );
  assert.ok(
    accepted.some((d) => d.body.data.action_type === 'webhooks.remove' && d.body.data.status === 'denied'),
    "the agent's refused removal is itself streamed",
  );
  // Only the subscribed tenant's rows.
  assert.ok(accepted.every((d) => Number(d.body.data.company_id) === h.companyId));
});

test('the webhook sink resumes after a restart with no gap; a row repeated across the restart carries its webhook-id', async (t) => {
  if (process.env.SOLID_TEST_ENGINE === 'postgres') {
    t.skip('reopens the SQLite file');
    return;
  }
  const { SqliteStore } = await import('../../src/store/sqlite/sqlite-store.ts');
  const { createRuntime } = await import('../../src/runtime/runtime.ts');
  const { systemVerbs } = await import('../../src/verbs/index.ts');
  const h = await createTestRuntime(t, { outbox: { baseDelayMs: 20, maxDelayMs: 40, pollIntervalMs: 50 } });
  await installNotesPack(h);
  const rx = await webhookReceiver(t);
  const owner = { surface: 'http' as const, principal: h.human('owner') };
  const pending = await h.rt.dispatch(owner, 'webhooks.add', { url: rx.url, events: ['audit.row'] });
  const added = await h.rt.dispatch(
    owner,
    'webhooks.add',
    { url: rx.url, events: ['audit.row'] },
    { confirm: true, nonce: pending.consent!.nonce },
  );
  rx.setSecret(added.secret?.secret as string);
  await activity(h, 3);
  assert.ok(await until(() => rx.accepted().length >= 5));
  await h.rt.close();
  const seen = rx.accepted().length;

  // The same database, a new process: the stream goes on from where it stood.
  const rt2 = await createRuntime({
    store: new SqliteStore({ path: h.dbPath }),
    secrets: h.rt.secrets,
    outbox: { pollIntervalMs: 50 },
  });
  rt2.register(...systemVerbs);
  t.after(() => rt2.close());
  const head = async () =>
    rt2.store.read((q) =>
      q.all<{ audit_id: number }>('SELECT audit_id FROM audit_log WHERE company_id = ? ORDER BY seq', [
        h.companyId,
      ]),
    );
  assert.ok(
    await until(async () => {
      const got = new Set(rx.accepted().map((d) => d.id));
      return (await head()).every((r) => got.has(`audit_${Number(r.audit_id)}`));
    }),
  );
  assert.ok(rx.accepted().length > seen, 'delivered after the restart');
  // At least once (docs/webhooks.md, spec/audit.md §streaming): a row in flight when the first
  // runtime closed may come again after the restart — with the same webhook-id and body, which is
  // how the receiver drops it. Dropped so, the rows are the chain: every seq once, in order.
  const byId = new Map<string, typeof rx.accepted extends () => Array<infer D> ? D : never>();
  for (const d of rx.accepted()) {
    const earlier = byId.get(d.id);
    if (earlier !== undefined) assert.deepEqual(d.body, earlier.body, `a repeat of ${d.id} is the same row`);
    else byId.set(d.id, d);
  }
  assert.ok(rx.accepted().length - byId.size <= 1, 'at most the one row in flight at the close repeats');
  const stored = await head();
  assert.equal(
    checkChain(
      [...byId.values()].map((d) => d.body.data),
      'restart',
    ),
    stored.length,
  );
});

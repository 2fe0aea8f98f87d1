/**
 * Operating the HTTP server (spec/transports.md §request-log §metrics §traces): request ids
 * honoured and echoed, one log line per request with verb, outcome and audit_id and never a
 * secret, Prometheus metrics that move with dispatches and stay bounded, and — through a real
 * `solid serve` — /metrics behind its token or on its own port, and dispatch spans exported over
 * OTLP/HTTP to an in-process receiver, parented to the caller's traceparent.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import parsePrometheusTextFormat, { type PromFamily } from 'parse-prometheus-text-format';
import { createTestRuntime } from '../../support/runtime.ts';
import { cliHarness } from '../../support/cli.ts';
import { serve, stop } from '../../reliability/serve-process.ts';
import { createHttpServer } from '../../../src/transports/http/server.ts';
import { createMetrics, UNKNOWN_VERB_LABEL } from '../../../src/transports/http/metrics.ts';
import { requestIdOf } from '../../../src/transports/http/request-log.ts';
import { defineVerb } from '../../../src/runtime/verb.ts';

const TOKEN = 'metrics-token-0123456789abcdef';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${PARENT_SPAN}-01`;

async function opsServer(t: import('node:test').TestContext) {
  const h = await createTestRuntime(t);
  h.rt.register(
    defineVerb({
      name: 'ops.echo',
      description: 'Echo a word back (a read).',
      shape: 'aggregate',
      category: 'crm',
      input: { type: 'object', properties: { word: { type: 'string' } }, additionalProperties: false },
      async handler(ctx, args) {
        return { entity_id: ctx.principal.company_id, data: { word: String(args.word ?? '') } };
      },
    }),
  );
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      raw.push(chunk.toString());
      for (const l of chunk.toString().split('\n').filter(Boolean))
        lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  const metrics = createMetrics(h.rt);
  t.after(() => metrics.close());
  const app = createHttpServer(h.rt, {
    logger: pino({ level: 'info' }, sink),
    metrics: { metrics, token: TOKEN },
  });
  t.after(() => app.close());
  await app.ready();
  return { h, app, lines, raw, metrics };
}

function family(text: string, name: string): PromFamily {
  const f = parsePrometheusTextFormat(text).find((x) => x.name === name);
  assert.ok(f !== undefined, `no ${name} in:\n${text.slice(0, 2000)}`);
  return f;
}

function sampleValue(f: PromFamily, labels: Record<string, string>): number {
  const m = f.metrics.find((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v));
  return m === undefined ? 0 : Number(m.value ?? m.count);
}

test('request ids: a sane x-request-id is kept, a traceparent gives its trace id, anything else a UUID', () => {
  const req = (headers: Record<string, string>) => ({ headers }) as unknown as http.IncomingMessage;
  assert.equal(requestIdOf(req({ 'x-request-id': 'abc-123.x:y_z' })), 'abc-123.x:y_z');
  assert.equal(requestIdOf(req({ traceparent: TRACEPARENT })), TRACE_ID);
  assert.equal(requestIdOf(req({ 'x-request-id': 'ok-1', traceparent: TRACEPARENT })), 'ok-1');
  for (const bad of ['has space', 'x'.repeat(129), 'a\u0000b', '"quoted"', '']) {
    const id = requestIdOf(req({ 'x-request-id': bad }));
    assert.match(id, /^[0-9a-f-]{36}$/, JSON.stringify(bad));
  }
  // An all-zero trace id is invalid (W3C): not used.
  assert.match(
    requestIdOf(req({ traceparent: `00-${'0'.repeat(32)}-${PARENT_SPAN}-01` })),
    /^[0-9a-f-]{36}$/,
  );
});

test('one log line per request: id echoed, verb, outcome, audit_id, and no secret', async (t) => {
  const { h, app, lines, raw } = await opsServer(t);
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/agent/dispatch/ops.echo?debug=secret-in-query',
    headers: {
      authorization: `Bearer ${h.keys.owner}`,
      'x-request-id': 'req-42',
      cookie: 'solid_session=cookie-secret',
    },
    payload: { args: { word: 'hello' } },
  });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.headers['x-request-id'], 'req-42');
  const auditId = (res.json() as { audit_id: number }).audit_id;
  const line = lines.find((l) => l.msg === 'request' && l.reqId === 'req-42');
  assert.ok(line !== undefined, raw.join(''));
  assert.equal(line.verb, 'ops.echo');
  assert.equal(line.outcome, 'ok');
  assert.equal(line.audit_id, auditId);
  assert.equal(line.status, 200);
  assert.equal(line.method, 'POST');
  assert.equal(line.path, '/api/v1/agent/dispatch/ops.echo');
  assert.equal(typeof line.duration_ms, 'number');
  assert.equal(lines.filter((l) => l.reqId === 'req-42' && l.msg === 'request').length, 1);

  // A denial is logged with its reason; a traceparent request carries trace_id.
  const denied = await app.inject({
    method: 'POST',
    url: '/api/v1/agent/dispatch/ops.echo',
    headers: { authorization: 'Bearer sk_live_not-a-real-key-000000', traceparent: TRACEPARENT },
    payload: { args: {} },
  });
  assert.equal(denied.headers['x-request-id'], TRACE_ID);
  const dl = lines.find((l) => l.reqId === TRACE_ID && l.msg === 'request');
  assert.ok(dl !== undefined, raw.join(''));
  assert.equal(dl.status, denied.statusCode);
  assert.equal(dl.trace_id, TRACE_ID);
  assert.ok(dl.outcome === 'denied' || dl.reason !== undefined || dl.status === 401, JSON.stringify(dl));

  // No API key, cookie, query string or argument ever reaches the log.
  const all = raw.join('');
  for (const secret of [
    h.keys.owner,
    'cookie-secret',
    'secret-in-query',
    'sk_live_not-a-real-key-000000',
    'hello',
  ])
    assert.ok(!all.includes(secret), `log holds ${secret}`);
});

test('over a real socket the log line still carries the dispatch (the body arrives later)', async (t) => {
  const { h, app, lines, raw } = await opsServer(t);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as AddressInfo).port;
  const answers = await Promise.all(
    ['one', 'two', 'three'].map(async (word, i) => {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/agent/dispatch/ops.echo`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${h.keys.owner}`,
          'x-request-id': `sock-${i}`,
        },
        body: JSON.stringify({ args: { word } }),
      });
      assert.equal(res.status, 200);
      return (await res.json()) as { audit_id: number };
    }),
  );
  // onResponse runs after the answer is sent: give the log lines a moment.
  for (let i = 0; i < 50 && lines.filter((l) => l.msg === 'request').length < 3; i++)
    await new Promise((r) => setTimeout(r, 10));
  answers.forEach((a, i) => {
    const line = lines.find((l) => l.msg === 'request' && l.reqId === `sock-${i}`);
    assert.ok(line !== undefined, raw.join(''));
    assert.equal(line.verb, 'ops.echo');
    assert.equal(line.outcome, 'ok');
    assert.equal(line.audit_id, a.audit_id);
    assert.equal(line.dispatches, undefined);
  });
});

test('/metrics needs its token and moves with dispatches; unknown verbs share one series', async (t) => {
  const { h, app } = await opsServer(t);
  const scrape = async () => {
    const r = await app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(r.statusCode, 200, r.body);
    assert.match(String(r.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    return r.body;
  };
  for (const authorization of [undefined, 'Bearer wrong-token', `Basic ${TOKEN}`]) {
    const r = await app.inject({
      method: 'GET',
      url: '/metrics',
      headers: authorization ? { authorization } : {},
    });
    assert.equal(r.statusCode, 401, r.body);
    assert.equal((r.json() as { error: { reason: string } }).error.reason, 'auth_required');
  }
  const before = await scrape();
  const okBefore = sampleValue(family(before, 'solid_dispatches_total'), { verb: 'ops.echo', outcome: 'ok' });
  for (let i = 0; i < 3; i++)
    await app.inject({
      method: 'POST',
      url: '/api/v1/agent/dispatch/ops.echo',
      headers: { authorization: `Bearer ${h.keys.owner}` },
      payload: { args: { word: String(i) } },
    });
  for (let i = 0; i < 5; i++)
    await app.inject({
      method: 'POST',
      url: `/api/v1/agent/dispatch/made.up_${i}`,
      headers: { authorization: `Bearer ${h.keys.owner}` },
      payload: { args: {} },
    });
  await h.rt.auditBuffer.flush();
  const after = await scrape();
  const dispatches = family(after, 'solid_dispatches_total');
  assert.equal(dispatches.type, 'COUNTER');
  assert.equal(sampleValue(dispatches, { verb: 'ops.echo', outcome: 'ok' }) - okBefore, 3);
  assert.equal(sampleValue(dispatches, { verb: UNKNOWN_VERB_LABEL }), 5);
  assert.ok(!after.includes('made.up_'), 'a made-up verb name became a label');
  const latency = family(after, 'solid_dispatch_duration_seconds');
  assert.equal(latency.type, 'HISTOGRAM');
  // (the parser keeps a histogram's buckets but not its labels: read the count line itself)
  const count = /^solid_dispatch_duration_seconds_count\{verb="ops\.echo",outcome="ok"\} (\d+)$/m.exec(after);
  assert.ok(count !== null && Number(count[1]) >= 3, after);
  const chain = family(after, 'solid_audit_chain_seq');
  assert.ok(sampleValue(chain, { tenant: String(h.companyId) }) >= 3);
  const waiting = family(after, 'solid_approvals_waiting');
  assert.equal(sampleValue(waiting, { tenant: String(h.companyId) }), 0);
  assert.equal(sampleValue(family(after, 'solid_store_up'), {}), 1);
  const appended = sampleValue(family(after, 'solid_audit_rows_appended_total'), {});
  assert.ok(appended >= 8, String(appended));
  family(after, 'solid_read_audit_buffer_rows');
  family(after, 'process_cpu_user_seconds_total');
});

/** An OTLP/HTTP receiver: collects the spans of every POST /v1/traces (JSON). */
async function otlpReceiver(t: import('node:test').TestContext) {
  const spans: {
    traceId: string;
    parentSpanId?: string;
    name: string;
    attributes: { key: string; value: Record<string, unknown> }[];
  }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const doc = JSON.parse(body) as {
          resourceSpans: { scopeSpans: { spans: (typeof spans)[number][] }[] }[];
        };
        for (const rs of doc.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans };
}

test(
  'solid serve: /metrics with its token or on --metrics-port; spans reach an OTLP receiver',
  { timeout: 300_000 },
  async (t) => {
    const cli = cliHarness(t);
    const init = await cli.run(['init', '--json']);
    assert.equal(init.code, 0, init.stderr);
    const key = init.json<{ owner_api_key: string }>().owner_api_key;
    const otlp = await otlpReceiver(t);

    const s = await serve(t, cli.db, [], {
      SOLID_METRICS_TOKEN: TOKEN,
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    assert.match(s.stdout, /Metrics\s+http:\/\/\S+\/metrics/);
    const res = await fetch(`${s.base}/api/v1/agent/dispatch/verbs.list`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${key}`,
        traceparent: TRACEPARENT,
      },
      body: JSON.stringify({ args: {} }),
    });
    assert.equal(res.status, 200, await res.text());
    assert.equal(res.headers.get('x-request-id'), TRACE_ID);
    const m = await fetch(`${s.base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(m.status, 200);
    assert.ok(
      sampleValue(family(await m.text(), 'solid_dispatches_total'), { verb: 'verbs.list', outcome: 'ok' }) >=
        1,
    );
    assert.equal((await fetch(`${s.base}/metrics`)).status, 401);

    // The batch processor exports within its delay; the guard only bounds a broken export.
    for (let i = 0; i < 200 && !otlp.spans.some((x) => x.name === 'execute_tool verbs.list'); i++)
      await new Promise((r) => setTimeout(r, 50));
    const span = otlp.spans.find((x) => x.name === 'execute_tool verbs.list');
    assert.ok(span !== undefined, JSON.stringify(otlp.spans.map((x) => x.name)));
    assert.equal(span.traceId, TRACE_ID);
    assert.equal(span.parentSpanId, PARENT_SPAN);
    const attr = Object.fromEntries(span.attributes.map((a) => [a.key, Object.values(a.value)[0]]));
    assert.equal(attr['gen_ai.tool.name'], 'verbs.list');
    assert.equal(attr['gen_ai.operation.name'], 'execute_tool');
    assert.equal(attr['solid.outcome'], 'ok');
    assert.equal(await stop(s), 0);

    // --metrics-port: its own listener, no token needed; the main port has no /metrics.
    const p = await serve(t, cli.db, ['--metrics-port', '0'], { SOLID_METRICS_TOKEN: '' });
    const url = /Metrics\s+(http:\/\/\S+\/metrics)/.exec(p.stdout)?.[1];
    assert.ok(url !== undefined, p.stdout);
    const own = await fetch(url);
    assert.equal(own.status, 200);
    family(await own.text(), 'solid_dispatches_total');
    assert.equal((await fetch(`${p.base}/metrics`)).status, 404);
    assert.equal(await stop(p), 0);

    // A short token is refused at start.
    const short = await serve(t, cli.db, [], { SOLID_METRICS_TOKEN: 'short' }).then(
      () => 'started',
      (err: Error) => err.message,
    );
    assert.match(short, /at least 16 characters/);
  },
);

/**
 * SSE priming events, `retry` and resumption on `/mcp` (MCP 2025-11-25 `basic/transports`,
 * SEP-1699): a 2025-11-25 client's POST stream opens with an event that has an id, empty data and
 * the server's `retry`; `GET /mcp` with `Last-Event-ID` replays what followed on that stream; an
 * older client gets no priming event (it could not parse empty data). Raw HTTP on a real socket,
 * as the official conformance suite probes it. Spec: spec/transports.md §mcp-http.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { createHttpServer } from '../../../src/transports/http/server.ts';
import { createMcpHttpPlugin } from '../../../src/transports/mcp/http-plugin.ts';
import { createMcpRuntime } from './harness.ts';
import { SessionEventStore } from '../../../src/transports/mcp/sse-event-store.ts';
import { resultOf } from '../../support/mcp.ts';

interface SseEvent {
  id?: string;
  retry?: number;
  data: string;
}

/** Parse an SSE body (text/event-stream) into its events; comments are skipped. */
function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    if (block.trim() === '' || block.split('\n').every((l) => l.startsWith(':'))) continue;
    const e: SseEvent = { data: '' };
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      const [field, ...rest] = line.split(':');
      const value = rest.join(':').replace(/^ /, '');
      if (field === 'id') e.id = value;
      else if (field === 'retry') e.retry = Number(value);
      else if (field === 'data') data.push(value);
    }
    e.data = data.join('\n');
    events.push(e);
  }
  return events;
}

async function serve(t: TestContext, sseRetryMs?: number): Promise<string> {
  const h = await createMcpRuntime(t);
  const app = createHttpServer(h.rt, {
    logger: false,
    plugins: [createMcpHttpPlugin(sseRetryMs === undefined ? {} : { sseRetryMs })],
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => app.close());
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`;
}

const ACCEPT = 'application/json, text/event-stream';

/** Open a session at `version`; its id. */
async function open(url: string, version: string): Promise<string> {
  const init = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'sse', version: '1' } },
    }),
  });
  assert.equal(init.status, 200);
  await init.text();
  const sid = init.headers.get('mcp-session-id');
  assert.ok(sid);
  const done = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: ACCEPT,
      'mcp-session-id': sid,
      'mcp-protocol-version': version,
    },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  assert.equal(done.status, 202);
  return sid;
}

/** POST tools/list in session `sid`; the SSE events of its answer. */
async function listTools(url: string, sid: string, version: string): Promise<SseEvent[]> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: ACCEPT,
      'mcp-session-id': sid,
      'mcp-protocol-version': version,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} }),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
  return parseSse(await res.text());
}

function resume(url: string, sid: string, lastEventId: string): Promise<Response> {
  return fetch(url, {
    method: 'GET',
    headers: {
      accept: 'text/event-stream',
      'mcp-session-id': sid,
      'mcp-protocol-version': '2025-11-25',
      'last-event-id': lastEventId,
    },
  });
}

test('a 2025-11-25 POST stream opens with a priming event: an id, empty data and the retry', async (t) => {
  const url = await serve(t, 250);
  const sid = await open(url, '2025-11-25');
  const events = await listTools(url, sid, '2025-11-25');
  assert.ok(events.length >= 2, 'a priming event, then the answer');
  const [priming, answer] = events;
  assert.ok(priming!.id, 'the priming event has an id');
  assert.equal(priming!.data, '');
  assert.equal(priming!.retry, 250, 'the configured retry (ms)');
  assert.ok(answer!.id, 'the answer has an event id too (a cursor for resumption)');
  const body = JSON.parse(answer!.data) as { id: number; result: { tools: unknown[] } };
  assert.equal(body.id, 7);
  assert.ok(body.result.tools.length > 0);
});

test('the default retry is sent when none is configured', async (t) => {
  const url = await serve(t);
  const sid = await open(url, '2025-11-25');
  const [priming] = await listTools(url, sid, '2025-11-25');
  assert.equal(priming!.data, '');
  assert.ok(Number.isInteger(priming!.retry) && priming!.retry! > 0);
});

test('GET with Last-Event-ID replays what followed on that stream; after the answer it is 204', async (t) => {
  const url = await serve(t);
  const sid = await open(url, '2025-11-25');
  const [priming, answer] = await listTools(url, sid, '2025-11-25');

  // A client whose stream dropped right after the priming event gets the answer back.
  const again = await resume(url, sid, priming!.id!);
  assert.equal(again.status, 200);
  assert.match(again.headers.get('content-type') ?? '', /text\/event-stream/);
  const replayed = parseSse(await again.text()); // the stream is over: the rest, then the end
  assert.equal(replayed.length, 1);
  assert.equal(replayed[0]!.id, answer!.id);
  assert.deepEqual(JSON.parse(replayed[0]!.data), JSON.parse(answer!.data));

  // A client that already holds the answer: nothing more will come on that stream.
  const over = await resume(url, sid, answer!.id!);
  assert.equal(over.status, 204);
});

test("a session cannot resume another session's stream; GET without Last-Event-ID stays 405", async (t) => {
  const url = await serve(t);
  const a = await open(url, '2025-11-25');
  const b = await open(url, '2025-11-25');
  const [priming] = await listTools(url, a, '2025-11-25');
  const stolen = await resume(url, b, priming!.id!);
  assert.equal(stolen.status, 400);
  assert.doesNotMatch(await stolen.text(), /"tools"/);
  const plain = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': a } });
  assert.equal(plain.status, 405);
});

test('a client of an older revision gets no priming event (empty data would break it)', async (t) => {
  const url = await serve(t);
  const sid = await open(url, '2025-06-18');
  const events = await listTools(url, sid, '2025-06-18');
  assert.ok(
    events.every((e) => e.data !== ''),
    'no event with empty data',
  );
  assert.equal((JSON.parse(events[0]!.data) as { id: number }).id, 7);
});

test('the event store is bounded: the oldest events go first and their ids are then unknown', async () => {
  const store = new SessionEventStore({ maxEvents: 3 });
  const ids: string[] = [];
  for (let i = 0; i < 5; i++)
    ids.push(await store.storeEvent('s', { jsonrpc: '2.0', method: 'notifications/x', params: { i } }));
  assert.equal(await store.getStreamIdForEventId(ids[0]!), undefined);
  assert.equal(await store.getStreamIdForEventId(ids[4]!), 's');
  const sent: unknown[] = [];
  await store.replayEventsAfter(ids[2]!, { send: async (_id, m) => void sent.push(m) });
  assert.equal(sent.length, 2);
  const big = new SessionEventStore({ maxBytes: 100 });
  const first = await big.storeEvent('s', { jsonrpc: '2.0', method: 'n', params: { x: 'a'.repeat(60) } });
  await big.storeEvent('s', { jsonrpc: '2.0', method: 'n', params: { x: 'b'.repeat(60) } });
  assert.equal(await big.getStreamIdForEventId(first), undefined, 'evicted by size');
});

test('a stream that drops while the tool still runs is resumed live: the answer arrives on the GET', async (t) => {
  const url = await serve(t, 50);
  const sid = await open(url, '2025-11-25');
  const abort = new AbortController();
  const res = await fetch(url, {
    method: 'POST',
    signal: abort.signal,
    headers: {
      'content-type': 'application/json',
      accept: ACCEPT,
      'mcp-session-id': sid,
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 9,
      method: 'tools/call',
      params: { name: 'test__slow', arguments: { steps: 10, delay_ms: 40 } },
    }),
  });
  const reader = res.body!.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  const priming = parseSse(first)[0]!;
  assert.equal(priming.data, '');
  abort.abort(); // the connection drops mid-call

  // As a client does: wait the retry the priming event gave, then resume (again while the server
  // has not yet seen the old connection go: 409).
  let again: Response;
  for (let attempt = 0; ; attempt++) {
    await new Promise((r) => setTimeout(r, priming.retry));
    again = await resume(url, sid, priming.id!);
    if (again.status !== 409 || attempt === 20) break;
    await again.body?.cancel();
  }
  assert.equal(again.status, 200);
  const live = again.body!.getReader();
  let text = '';
  while (!text.includes('"id":9')) {
    const { value, done } = await live.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  await live.cancel();
  const answer = parseSse(text)
    .map((e) => (e.data === '' ? undefined : (JSON.parse(e.data) as { id?: number; result?: unknown })))
    .find((m) => m?.id === 9);
  assert.ok(answer?.result, text);
  const data = (resultOf(answer.result) as { data?: { done: number } } | undefined)?.data;
  assert.equal(data?.done, 10, 'the call ran to its end although its first stream dropped');
});

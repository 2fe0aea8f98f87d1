/**
 * Fuzz and invariant suite (issue 20): generated bodies, headers and args — types, sizes, depth,
 * Unicode (NUL, lone surrogates, bidi), numbers (overflow to Infinity, -0, 2^53), duplicate keys,
 * prototype keys in any spelling, truncated and non-UTF-8 bodies, bad tool names, consent
 * round trips with right and wrong nonces and phrases — sent to a sample of verbs of every consent
 * class (READ, WRITE_REVERSIBLE, WRITE_FINANCIAL, delegated audit.revert, a BLOCKED name, an
 * unknown name) over HTTP, WebMCP, MCP and UCP, on the engine of the run (SQLite under
 * `npm test`, PostgreSQL under `npm run test:postgres`). After every request:
 *   - no 5xx (no store outage is injected here, so none is real);
 *   - exactly one audit row for the attempt, in the caller's tenant (the sandbox for a keyless
 *     or bad key); an anonymous request the HTTP layer refuses before anyone is known (a body it
 *     cannot parse, a 415, a 413) may leave none (spec/audit.md);
 *   - no partial business write: the notes table grows by one on an ok notes_add, else not at all;
 * and after each transport's batch: `audit verify` finds nothing and the server still serves.
 *
 * Budget: SOLID_FUZZ_RUNS generated cases per transport (default 650; a case with a consent
 * follow-up sends two requests), fixed seed SOLID_FUZZ_SEED (transport i uses seed + i).
 * `npm run fuzz -- --runs N [--seed S] [--only mcp]` runs longer (scripts/fuzz.ts). A violation
 * fails the property, so fast-check shrinks it and prints the counterexample with its seed and
 * path; replay it with SOLID_FUZZ_ONLY, SOLID_FUZZ_SEED and SOLID_FUZZ_PATH. Prints the counts it
 * tried, per transport and in total.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createUcpHarness, type UcpHarness } from '../transports/ucp/harness.ts';
import { createWebmcpPlugin } from '../../src/transports/webmcp/index.ts';
import { connectInMemory } from '../transports/mcp/harness.ts';
import { injectLogin, type InjectSession } from '../transports/webmcp/fixture.ts';
import { verifyStoreChain } from '../../src/runtime/ledger/verify/verify.ts';
import { errorEnvelopeOf } from '../../src/transports/mcp/envelope-map.ts';
import { META } from '../../src/transports/mcp/meta-keys.ts';
import type { Envelope } from '../../src/spec/types.ts';
import { testEngine } from '../support/runtime.ts';

const RUNS = Number(process.env.SOLID_FUZZ_RUNS ?? 650);
const SEED = Number(process.env.SOLID_FUZZ_SEED ?? 20_2026);
const PATH = process.env.SOLID_FUZZ_PATH || undefined;
const ONLY = process.env.SOLID_FUZZ_ONLY || undefined;
const DEBUG = Boolean(process.env.SOLID_FUZZ_DEBUG);
const ENGINE = testEngine();
const TRANSPORTS = ['http', 'webmcp', 'mcp', 'ucp'] as const;
type Transport = (typeof TRANSPORTS)[number];

const VERBS = ['notes.count', 'notes_add', 'notes_charge', 'audit.revert', 'customer_delete', 'notes.nope'];
const TOOLS = VERBS.map((v) => v.replace(/\./g, '__'));
const CAPABILITIES = [
  'com.example.sales.notes_count',
  'com.example.sales.notes_add',
  'com.example.ar.notes_charge',
  'com.example.ops.audit_revert',
  'com.example.sales.nope',
];

// ---- generators ---------------------------------------------------------------------------------

const trickyText = fc.constantFrom(
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfff',
  '😀',
  '\u202eevil',
  '__proto__',
  'constructor',
  '',
  ' ',
  'x'.repeat(3000),
  'REVERT notes_charge #1',
);
const numbers = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, 2 ** 53, -(2 ** 53), 1e308, 5e-324, 1, 42),
);
const keys = fc.oneof(
  fc.constantFrom(
    'text',
    'min_length',
    'amount_cents',
    'audit_id',
    'rollback_handle',
    'company_id',
    'user_id',
    '__proto__',
    'constructor',
    'prototype',
    '\u0000',
    '',
  ),
  fc.string({ maxLength: 8 }),
);
const { value } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', maxDepth: 4 },
    fc.string({ maxLength: 20 }),
    fc.string({ unit: 'binary', maxLength: 10 }),
    numbers,
    fc.boolean(),
    fc.constant(null),
    trickyText,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(keys, tie('value'), { maxKeys: 4 }),
  ),
}));
/** Args that are mostly plausible (so consent gates and handlers are reached) and often hostile. */
const args = fc.oneof(
  {
    arbitrary: fc.record({ text: fc.oneof(fc.string({ minLength: 1, maxLength: 20 }), trickyText) }),
    weight: 3,
  },
  {
    arbitrary: fc.record({ amount_cents: fc.oneof(fc.integer({ min: 1, max: 10_000 }), numbers) }),
    weight: 3,
  },
  { arbitrary: fc.record({ audit_id: fc.oneof(fc.integer({ min: 1, max: 50 }), numbers) }), weight: 2 },
  { arbitrary: fc.record({ min_length: fc.oneof(fc.nat(5), numbers) }), weight: 1 },
  { arbitrary: fc.constant({}), weight: 1 },
  { arbitrary: fc.dictionary(keys, value, { maxKeys: 5 }), weight: 2 },
  { arbitrary: value, weight: 2 },
);

/** Text-level mutations of a JSON body (what a JSON value cannot express). */
type BodyKind =
  'json' | 'overflow' | 'dup' | 'proto' | 'deep' | 'truncated' | 'utf8' | 'garbage' | 'empty' | 'options';
const bodyKinds = fc.oneof(
  { arbitrary: fc.constant<BodyKind>('json'), weight: 10 },
  { arbitrary: fc.constant<BodyKind>('options'), weight: 2 },
  {
    arbitrary: fc.constantFrom<BodyKind>(
      'overflow',
      'dup',
      'proto',
      'deep',
      'truncated',
      'utf8',
      'garbage',
      'empty',
    ),
    weight: 5,
  },
);

/** The JSON body of a call: HTTP `{args, …options}`, WebMCP `{input, surface, …options}`, UCP the args. */
type Wrap = (argsText: string, options?: string) => string;
const httpWrap: Wrap = (a, o) => `{"args":${a}${o ?? ''}}`;
const ucpWrap: Wrap = (a) => a;
const webmcpWrap =
  (surface: string): Wrap =>
  (a, o) =>
    `{"input":${a},"surface":${JSON.stringify(surface)}${o ?? ''}}`;

function bodyOf(kind: BodyKind, a: unknown, n: number, w: Wrap): string | Buffer {
  const argsText = JSON.stringify(a ?? null) ?? 'null';
  switch (kind) {
    case 'json':
      return w(argsText);
    case 'overflow':
      return w(`{"pad":1e${309 + (n % 500)},"text":"x","amount_cents":-1e999}`);
    case 'dup':
      return w(`{"text":"a","text":"b","amount_cents":1,"amount_cents":${n}}`);
    case 'proto':
      return w(
        [`{"\\u005f_proto__":{"x":1}}`, `{"constructor":{"\\u0070rototype":{}}}`, `{"__proto__":null}`][
          n % 3
        ]!,
      );
    case 'deep': {
      const d = [30, 33, 64, 65, 500, 5000][n % 6]!;
      return w(`${'['.repeat(d)}"__proto__"${']'.repeat(d)}`);
    }
    case 'truncated': {
      const full = w(argsText);
      return full.slice(0, Math.max(1, n % (full.length + 1)));
    }
    case 'utf8':
      return Buffer.concat([
        Buffer.from(w('{"text":"').slice(0, -2)),
        Buffer.from([0xff, 0xc3, 0x28]),
        Buffer.from('"}'),
      ]);
    case 'garbage':
      return ['{', 'nul', '[1,]', '{"args":}', '\u0000', '"just a string"', '123'][n % 7]!;
    case 'empty':
      return '';
    case 'options':
      return w(
        argsText,
        [
          `,"confirm":${n % 2 === 0},"nonce":"n${n}","typed_phrase":"CHARGE ${n} CENTS"`,
          `,"confirm":"yes"`,
          `,"nonce":${n}`,
          `,"typed_phrase":null`,
          `,"extra":1`,
          `,"idempotency_key":"k${n}"`,
        ][n % 6],
      );
  }
}

/**
 * What to do after a dispatch_pending answer: nothing, confirm with its nonce, confirm with its
 * nonce and the phrase the verb asks for, confirm with a forged nonce, or confirm twice (the
 * second use of a nonce).
 */
type FollowUp = 'none' | 'nonce' | 'phrase' | 'forged' | 'twice';
const followUps = fc.oneof(
  { arbitrary: fc.constant<FollowUp>('none'), weight: 3 },
  { arbitrary: fc.constantFrom<FollowUp>('nonce', 'phrase', 'forged', 'twice'), weight: 2 },
);

/** `arb` in about one case of `oneIn`, else undefined. */
const sometimes = <T>(arb: fc.Arbitrary<T>, oneIn: number) =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: oneIn - 1 }, { arbitrary: arb, weight: 1 });

const weighted = <T>(...xs: Array<[T, number]>) =>
  fc.oneof(...xs.map(([x, weight]) => ({ arbitrary: fc.constant(x), weight })));

/** Args the verb accepts (so gates, handlers and follow-ups are reached), from a case's number. */
function plausibleArgs(verb: string, n: number): Record<string, unknown> {
  switch (verb) {
    case 'notes.count':
      return n % 2 === 0 ? {} : { min_length: n % 5 };
    case 'notes_add':
      return { text: `note ${n}` };
    case 'notes_charge':
      return { amount_cents: 1 + (n % 10_000) };
    case 'audit.revert':
      return { audit_id: 1 + (n % 300) };
    default:
      return n % 2 === 0 ? {} : { id: n };
  }
}
/** The args of a case: generated, or (about one case in three) plausible for its verb. */
const caseArgs = (c: { plausible: boolean; args: unknown; verb: number; n: number }): unknown =>
  c.plausible ? plausibleArgs(VERBS[c.verb]!, c.n) : c.args;
const plausible = weighted<boolean>([true, 1], [false, 2]);

const httpCase = fc.record({
  verb: fc.nat(VERBS.length - 1),
  plausible,
  key: weighted<string>(['owner', 6], ['read_only', 1], ['employee', 1], ['none', 1], ['garbage', 1]),
  kind: bodyKinds,
  args,
  n: fc.nat(1_000_000),
  contentType: weighted<string>(
    ['application/json', 12],
    ['application/json; charset=utf-8', 1],
    ['text/plain', 1],
    ['application/x+json', 1],
    ['', 1],
  ),
  surface: weighted<string>(['dashboard', 8], ['public', 1], ['portal', 1], ['nope', 1]),
  clientSurface: sometimes(fc.constantFrom('cli', 'mcp_stdio', 'webmcp', 'nope', ''), 8),
  idem: sometimes(fc.oneof(fc.uuid(), fc.string({ maxLength: 300 }), fc.constant('"quoted"')), 5),
  follow: followUps,
});
type HttpCase = typeof httpCase extends fc.Arbitrary<infer T> ? T : never;

// ---- invariants ---------------------------------------------------------------------------------

/** One answer, as the invariants read it. */
interface Outcome {
  status: number;
  ok: boolean;
  reason: string | undefined;
  /** The verb that ran (for the business-write check). */
  verb: string;
  env?: Envelope;
}

interface Snapshot {
  audit: Map<number, number>;
  notes: number;
}

interface Tally {
  requests: number;
  statuses: Map<string, number>;
  violations: string[];
  snapshot?: Snapshot;
  failure?: string;
}

const TRANSPORT_REFUSALS = new Set(['invalid_request', 'unsupported_media_type', 'payload_too_large']);

/** Audit rows per tenant and the notes count, in one read (the reads of the previous check are reused). */
async function snapshot(u: UcpHarness): Promise<Snapshot> {
  await u.h.rt.auditBuffer.flush();
  return u.h.rt.store.read(async (q) => {
    const rows = await q.all<{ company_id: number; n: number }>(
      'SELECT company_id, COUNT(*) AS n FROM audit_log GROUP BY company_id',
    );
    const notes = await q.get<{ n: number }>('SELECT COUNT(*) AS n FROM notes');
    return { audit: new Map(rows.map((r) => [Number(r.company_id), Number(r.n)])), notes: Number(notes!.n) };
  });
}

/**
 * Send one request and check the per-request invariants; `tenant` is where its row must land.
 * `preflight`: the transport may confirm a pending preflight itself (UCP, where the signature is
 * the click: two dispatches, so a `pending` row of the verb, then the row of the answer, whatever
 * the confirmation answers). Returns the outcome; records violations in the tally.
 */
async function checked(
  u: UcpHarness,
  tally: Tally,
  label: string,
  tenant: number,
  anonymous: boolean,
  send: () => Promise<Outcome>,
  preflight = false,
): Promise<Outcome> {
  const before = tally.snapshot ?? (await snapshot(u));
  const r = await send();
  tally.requests++;
  const k = `${r.status} ${r.reason ?? 'ok'}`;
  tally.statuses.set(k, (tally.statuses.get(k) ?? 0) + 1);
  const fail = (why: string) => tally.violations.push(`${label}: ${why} (${k})`);
  if (r.status >= 500) fail('a 5xx without a store outage');
  const after = (tally.snapshot = await snapshot(u));
  let total = 0;
  for (const [c, n] of after.audit) {
    const d = n - (before.audit.get(c) ?? 0);
    total += d;
    if (d > 0 && c !== tenant) fail(`an audit row in tenant ${c}, expected ${tenant}`);
  }
  const mayBeSilent = anonymous && r.reason !== undefined && TRANSPORT_REFUSALS.has(r.reason);
  // A replay (a used idempotency key) runs nothing and writes one `replayed` row (spec/idempotency.md).
  const replayed = r.env?.replayed === true;
  if (preflight && total === 2) {
    const [answer, pending] = await u.h.rt.store.read((q) =>
      q.all<{ status: string; action_type: string }>(
        'SELECT status, action_type FROM audit_log WHERE company_id = ? ORDER BY audit_id DESC LIMIT 2',
        [tenant],
      ),
    );
    if (pending?.status !== 'pending' || pending.action_type !== answer?.action_type)
      fail(`2 audit rows for one attempt, not a preflight (${pending?.status}) and its confirmation`);
  } else if (total !== 1 && !(mayBeSilent && total === 0)) fail(`${total} audit rows for one attempt`);
  else if (preflight && r.ok && !replayed && r.verb === 'notes_add')
    fail('1 audit row for a write the signature confirmed (no preflight row)');
  const wrote = r.ok && !replayed && r.verb === 'notes_add';
  if (after.notes !== before.notes + (wrote ? 1 : 0))
    fail(`notes ${before.notes} → ${after.notes} on ${r.ok ? 'ok' : r.reason}`);
  return r;
}

async function afterBatch(u: UcpHarness, tally: Tally, transport: string): Promise<void> {
  const report = await verifyStoreChain(u.h.rt.store);
  const findings = report.tenants.flatMap((x) => x.findings);
  if (findings.length > 0)
    tally.violations.push(`${transport}: audit verify: ${JSON.stringify(findings[0])}`);
  const health = await u.app.inject({ method: 'GET', url: '/healthz' });
  if (health.statusCode !== 200) tally.violations.push(`${transport}: /healthz ${health.statusCode}`);
  const ok = await u.app.inject({
    method: 'POST',
    url: '/api/v1/agent/dispatch/notes.count',
    headers: { authorization: `Bearer ${u.h.keys.owner}` },
    payload: { args: {} },
  });
  if (ok.statusCode !== 200) tally.violations.push(`${transport}: still serves? ${ok.statusCode} ${ok.body}`);
}

/** Run one transport's property: a violation fails it, so fast-check shrinks it to a counterexample. */
async function runProperty<T>(
  tally: Tally,
  index: number,
  arb: fc.Arbitrary<T>,
  body: (c: T) => Promise<void>,
): Promise<void> {
  try {
    await fc.assert(
      fc.asyncProperty(arb, async (c) => {
        const seen = tally.violations.length;
        await body(c);
        if (tally.violations.length > seen) throw new Error(tally.violations.slice(seen).join('; '));
      }),
      { numRuns: RUNS, seed: SEED + index, ...(PATH !== undefined ? { path: PATH } : {}) },
    );
  } catch (err) {
    tally.failure = String((err as Error).message).slice(0, 4000);
  }
}

function report(transport: string, tally: Tally): void {
  for (const v of tally.violations.slice(0, 4)) console.log(`  violation: ${v}`);
  if (tally.failure !== undefined) {
    console.log(`  ${tally.failure.split('\n').slice(0, 8).join('\n  ')}`);
    const path = /path: "([^"]+)"/.exec(tally.failure)?.[1];
    if (path !== undefined)
      console.log(
        `  replay: npm run fuzz -- --engine ${ENGINE} --only ${transport} --seed ${SEED} --path ${path}`,
      );
  }
  const top = [...tally.statuses.entries()].sort((a, b) => b[1] - a[1]).slice(0, 14);
  console.log(
    `fuzz ${ENGINE} ${transport}: ${tally.requests} requests, ${tally.violations.length} violations; ` +
      top.map(([k, n]) => `${k}×${n}`).join(', '),
  );
}

function newTally(): Tally {
  return { requests: 0, statuses: new Map(), violations: [] };
}

function outcomeOf(status: number, text: string): Outcome {
  try {
    const env = JSON.parse(text) as Envelope;
    return { status, ok: env.ok === true, reason: env.error?.reason, verb: String(env.verb ?? ''), env };
  } catch {
    return { status, ok: false, reason: 'not_an_envelope', verb: '' };
  }
}

/** The confirmation options of a follow-up to a pending answer (HTTP and WebMCP body members). */
function confirmation(follow: FollowUp, env: Envelope, n: number): string {
  const nonce = follow === 'forged' ? `${env.consent!.nonce!.slice(0, -2)}zz` : env.consent!.nonce!;
  const phrase = follow === 'phrase' ? env.consent?.typed_phrase : undefined;
  return `,"confirm":true,"nonce":${JSON.stringify(nonce)}${
    phrase !== undefined ? `,"typed_phrase":${JSON.stringify(n % 5 === 0 ? `${phrase} ` : phrase)}` : ''
  }`;
}

function isPending(r: Outcome): boolean {
  return r.reason === 'dispatch_pending' && typeof r.env?.consent?.nonce === 'string';
}

// ---- the suite ----------------------------------------------------------------------------------

test(`fuzz: four transports on ${ENGINE}, ${RUNS} generated cases each, 0 invariant violations`, async (t) => {
  // One row per attempt, the invariant checked here: no auth-failure windows
  // (spec/audit.md §auth-failure-windows; covered by test/transports/http/rate-limit.test.ts).
  const u = await createUcpHarness(t, {
    extraPlugins: [createWebmcpPlugin()],
    runtime: { authFailureWindowMs: 0 },
  });
  await u.configure({
    platforms: [{ profile: u.platform.url, role: 'owner', max_class: 'WRITE_REVERSIBLE' }],
  });
  const { h } = u;
  const keyOf = (k: string) =>
    k === 'none'
      ? undefined
      : k === 'garbage'
        ? 'sk_solid_garbage_0000'
        : (h.keys as Record<string, string>)[k];
  const tenantOf = (k: string) =>
    k === 'owner' || k === 'read_only' || k === 'employee' ? h.companyId : h.sandboxId;
  const all: Partial<Record<Transport, Tally>> = {};
  const runs = (x: Transport) => ONLY === undefined || ONLY.split(',').includes(x);

  if (runs('http')) {
    const tally = (all.http = newTally());
    await runProperty(tally, 0, httpCase, async (c: HttpCase) => {
      const key = keyOf(c.key);
      const headers: Record<string, string> = {};
      if (key !== undefined) headers.authorization = `Bearer ${key}`;
      if (c.contentType !== '') headers['content-type'] = c.contentType;
      if (c.clientSurface !== undefined) headers['solid-surface'] = c.clientSurface;
      if (c.idem !== undefined)
        // eslint-disable-next-line no-control-regex -- header values are sent without control bytes
        headers['idempotency-key'] = c.idem.replace(/[\r\n\u0000-\u001f\u007f-\uffff]/g, '');
      const verb = VERBS[c.verb]!;
      const post = (payload: string | Buffer) => async () => {
        const res = await u.app.inject({
          method: 'POST',
          url: `/api/v1/agent/dispatch/${verb}`,
          headers,
          payload,
        });
        return outcomeOf(res.statusCode, res.body);
      };
      const label = `http ${verb}`;
      const first = await checked(
        u,
        tally,
        label,
        tenantOf(c.key),
        key === undefined,
        post(bodyOf(c.kind, caseArgs(c), c.n, httpWrap)),
      );
      if (c.follow === 'none' || !isPending(first)) return;
      const again = post(httpWrap(JSON.stringify(caseArgs(c)), confirmation(c.follow, first.env!, c.n)));
      await checked(u, tally, `${label} (confirm)`, tenantOf(c.key), false, again);
      if (c.follow === 'twice')
        await checked(u, tally, `${label} (confirm again)`, tenantOf(c.key), false, again);
    });
    await afterBatch(u, tally, 'http');
    report('http', tally);
  }

  // WebMCP: a signed-in page (session cookie, CSRF token, same Origin), or a page without a session.
  if (runs('webmcp')) {
    const tally = (all.webmcp = newTally());
    const sessions: Record<string, InjectSession> = {
      owner: await injectLogin(u.app, h.keys.owner),
      read_only: await injectLogin(u.app, h.keys.read_only),
    };
    await runProperty(tally, 1, httpCase, async (c: HttpCase) => {
      const who = c.key === 'read_only' ? 'read_only' : c.key === 'none' ? 'none' : 'owner';
      const headers: Record<string, string> =
        who === 'none' ? { origin: 'http://localhost' } : { ...sessions[who]!.headers };
      if (c.contentType !== '') headers['content-type'] = c.contentType;
      const tool = TOOLS[c.verb]!;
      const tenant = who === 'none' ? h.sandboxId : h.companyId;
      const post = (payload: string | Buffer) => async () => {
        const res = await u.app.inject({
          method: 'POST',
          url: `/api/v1/webmcp/execute/${tool}`,
          headers,
          payload,
        });
        return outcomeOf(res.statusCode, res.body);
      };
      const wrap = webmcpWrap(c.surface);
      const label = `webmcp ${tool}`;
      const first = await checked(
        u,
        tally,
        label,
        tenant,
        who === 'none',
        post(bodyOf(c.kind, caseArgs(c), c.n, wrap)),
      );
      if (c.follow === 'none' || !isPending(first)) return;
      const again = post(wrap(JSON.stringify(caseArgs(c)), confirmation(c.follow, first.env!, c.n)));
      await checked(u, tally, `${label} (confirm)`, tenant, false, again);
      if (c.follow === 'twice') await checked(u, tally, `${label} (confirm again)`, tenant, false, again);
    });
    await afterBatch(u, tally, 'webmcp');
    report('webmcp', tally);
  }

  // MCP: the SDK Client over an in-memory pair, one connection per key. Most calls go through
  // Client.callTool (which also checks a success against the tool's outputSchema); some send a raw
  // tools/call whose name is not a string.
  if (runs('mcp')) {
    const tally = (all.mcp = newTally());
    const clients = {
      owner: await connectInMemory(t, u.h, { apiKey: h.keys.owner }),
      read_only: await connectInMemory(t, u.h, { apiKey: h.keys.read_only }),
      none: await connectInMemory(t, u.h, { apiKey: null }),
    };
    for (const c of Object.values(clients)) await c.listTools();
    const badNames: unknown[] = [
      undefined,
      42,
      null,
      ['notes__count'],
      { name: 'notes__count' },
      '',
      'x'.repeat(300),
    ];
    const mcpCase = fc.record({
      verb: fc.nat(VERBS.length - 1),
      key: weighted<keyof typeof clients>(['owner', 6], ['read_only', 1], ['none', 1]),
      args,
      plausible,
      n: fc.nat(1_000_000),
      badName: sometimes(fc.nat(badNames.length - 1), 10),
      idem: sometimes(fc.oneof(fc.uuid(), fc.string({ maxLength: 300 }), fc.integer()), 5),
      follow: followUps,
    });
    await runProperty(tally, 2, mcpCase, async (c) => {
      const named = c.badName === undefined;
      const tool = named ? TOOLS[c.verb]! : badNames[c.badName!];
      const client = clients[c.key];
      const verb = named ? VERBS[c.verb]! : '';
      const call = (meta: Record<string, unknown> | undefined) => async (): Promise<Outcome> => {
        try {
          const r = (
            named
              ? await client.callTool({
                  name: tool as string,
                  arguments: caseArgs(c) as Record<string, unknown>,
                  ...(meta !== undefined ? { _meta: meta } : {}),
                })
              : await client.request(
                  { method: 'tools/call', params: { name: tool, arguments: caseArgs(c) } } as never,
                  CallToolResultSchema,
                )
          ) as CallToolResult;
          if (r.isError !== true) {
            // A success carries no envelope: a replay says so in _meta (spec/transports.md §mcp-results).
            const replayed = r._meta?.[META.replayed] === true;
            return { status: 200, ok: true, reason: undefined, verb, env: { ok: true, verb, replayed } };
          }
          const env = errorEnvelopeOf(r);
          return {
            status: env ? 400 : 500,
            ok: false,
            reason: env?.error?.reason ?? 'no_envelope',
            verb,
            env,
          };
        } catch (err) {
          const code = (err as { code?: number }).code;
          const env = (err as { data?: { envelope?: Envelope } }).data?.envelope;
          if (code === -32602 && env !== undefined)
            return { status: 404, ok: false, reason: env.error?.reason, verb };
          if (DEBUG) console.log(String(err), JSON.stringify(c));
          return { status: 500, ok: false, reason: `jsonrpc_${code}`, verb };
        }
      };
      const label = `mcp ${String(tool).slice(0, 40)}`;
      const meta = c.idem !== undefined ? { [META.idempotencyKey]: c.idem } : undefined;
      const first = await checked(u, tally, label, tenantOf(c.key), false, call(meta));
      if (c.follow === 'none' || !isPending(first)) return;
      const nonce = first.env!.consent!.nonce!;
      const again = call({
        ...meta,
        [META.confirm]: true,
        [META.nonce]: c.follow === 'forged' ? `${nonce}x` : nonce,
      });
      await checked(u, tally, `${label} (confirm)`, tenantOf(c.key), false, again);
      if (c.follow === 'twice')
        await checked(u, tally, `${label} (confirm again)`, tenantOf(c.key), false, again);
    });
    await afterBatch(u, tally, 'mcp');
    report('mcp', tally);
  }

  // UCP: signed RFC 9421 requests from the configured platform (consent by its signature, up to
  // WRITE_REVERSIBLE).
  if (runs('ucp')) {
    const tally = (all.ucp = newTally());
    await runProperty(tally, 3, httpCase, async (c: HttpCase) => {
      const cap = CAPABILITIES[c.verb % CAPABILITIES.length]!;
      const body = bodyOf(c.kind, caseArgs(c), c.n, ucpWrap);
      const idempotencyKey = c.idem?.replace(/[^\x20-\x7e]/g, '');
      await checked(
        u,
        tally,
        `ucp ${cap}`,
        h.companyId,
        false,
        async () => {
          const res = await u.call(cap, undefined, {
            rawBody: body.toString(),
            ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
          });
          const r = outcomeOf(res.status, res.text);
          return { ...r, verb: r.ok && cap.endsWith('notes_add') ? 'notes_add' : r.verb };
        },
        true,
      );
    });
    await afterBatch(u, tally, 'ucp');
    report('ucp', tally);
  }

  const total = Object.values(all).reduce((n, x) => n + x.requests, 0);
  const counts = TRANSPORTS.filter((x) => all[x] !== undefined)
    .map((x) => `${x} ${all[x]!.requests}`)
    .join(', ');
  const violations = Object.values(all).flatMap((x) => x.violations);
  console.log(
    `fuzz ${ENGINE}: ${total} generated requests (${counts}), ${violations.length} violations, seed ${SEED}`,
  );
  assert.deepEqual(violations.slice(0, 20), [], `${violations.length} invariant violations`);
});

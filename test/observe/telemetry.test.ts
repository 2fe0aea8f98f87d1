/**
 * system.telemetry (shape telemetry) and the OpenTelemetry execute_tool spans.
 * Spec: spec/shapes.md §telemetry.
 *
 * Run: node --import tsx --test test/observe/telemetry.test.ts
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  trace,
  SpanKind,
  SpanStatusCode,
  type Attributes,
  type Context,
  type Span,
  type SpanOptions,
  type SpanStatus,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { call, createObserveRuntime, okResult, refused } from '../support/observe-verbs.ts';
import { defineVerb } from '../../src/runtime/verb.ts';

interface Recorded {
  name: string;
  kind: SpanKind | undefined;
  attributes: Attributes;
  status?: SpanStatus;
  start: unknown;
  end?: unknown;
}

/** A tiny tracer provider that keeps every span it is given (no SDK needed). */
class RecordingProvider implements TracerProvider {
  readonly spans: Recorded[] = [];
  getTracer(): Tracer {
    const spans = this.spans;
    const startSpan = (name: string, options: SpanOptions = {}, _ctx?: Context): Span => {
      const rec: Recorded = {
        name,
        kind: options.kind,
        attributes: { ...(options.attributes ?? {}) },
        start: options.startTime,
      };
      spans.push(rec);
      const span: Span = {
        spanContext: () => ({ traceId: '0'.repeat(31) + '1', spanId: '0'.repeat(15) + '1', traceFlags: 1 }),
        setAttribute: (k, v) => ((rec.attributes[k] = v), span),
        setAttributes: (a) => (Object.assign(rec.attributes, a), span),
        addEvent: () => span,
        addLink: () => span,
        addLinks: () => span,
        setStatus: (s) => ((rec.status = s), span),
        updateName: (n) => ((rec.name = n), span),
        end: (t) => {
          rec.end = t;
        },
        isRecording: () => true,
        recordException: () => {},
      };
      return span;
    };
    return {
      startSpan,
      startActiveSpan: ((name: string, ...rest: unknown[]) => {
        const fn = rest[rest.length - 1] as (s: Span) => unknown;
        return fn(startSpan(name, (typeof rest[0] === 'object' ? rest[0] : {}) as SpanOptions));
      }) as Tracer['startActiveSpan'],
    };
  }
}

describe('system.telemetry', () => {
  it("reports this tenant's dispatch counts, rates, latency, store size and queues", async (t) => {
    const h = await createObserveRuntime(t, { readAuditFlushMs: 60_000 });
    h.rt.register(
      defineVerb({
        name: 'counter.notify',
        description: 'Queue a notification (outbox).',
        shape: 'receipt',
        category: 'test',
        input: { type: 'object', additionalProperties: false },
        delegateConsent: async () => ({ consentClass: null, roleFloor: 'employee', summary: 'Notify.' }),
        async handler(ctx) {
          ctx.outbox('test.nowhere', { hello: 1 });
          return {};
        },
      }),
    );
    for (let i = 0; i < 4; i++) okResult(await call(h, 'employee', 'counter.bump', { name: 't' }), 'receipt');
    await call(h, 'employee', 'counter.bump', { name: 't', fail: true });
    await call(h, 'employee', 'counter.charge', { name: 't', amount: 1 });
    await call(h, 'owner', 'counter.charge', { name: 't', amount: 1 });
    await call(h, 'employee', 'counter.notify', {});
    await call(h, h.principal('owner', h.otherCompanyId), 'counter.bump', { name: 'other' });
    // Last before the telemetry read: a later write of this tenant would write it to the log.
    await call(h, 'employee', 'counter.get', { name: 't' });
    const r = okResult(await call(h, 'read_only', 'system.telemetry', { window_seconds: 600 }), 'telemetry');
    assert.equal(r.window_seconds, 600);
    const d = r.dispatch as Record<string, number>;
    assert.deepEqual([d.total, d.ok, d.errors, d.denials, d.pending], [9, 6, 1, 1, 1]);
    assert.equal(d.error_rate, 1 / 9);
    assert.equal(d.denial_rate, 1 / 9);
    assert.deepEqual(r.by_reason, { bump_refused: 1, role_denied: 1 });
    const lat = r.latency_ms as Record<string, number | null>;
    assert.ok(lat.p50! > 0 && lat.p50! <= lat.p95! && lat.p95! <= lat.p99!);
    const store = r.store as Record<string, number | string>;
    assert.equal(store.engine, h.rt.store.engine);
    assert.ok((store.size_bytes as number) > 0);
    const head = await h.rt.store.read((q) =>
      q.get<{ audit_seq: number }>('SELECT audit_seq FROM tenant_heads WHERE company_id = ?', [h.companyId]),
    );
    assert.equal(store.audit_rows, Number(head!.audit_seq));
    assert.equal(store.event_rows, 4);
    const queues = r.queues as Record<string, number>;
    assert.equal(queues.outbox_pending, 1);
    assert.ok(queues.read_audit_buffered >= 1, 'the read of counter.get is still buffered');
    assert.equal(
      queues.read_audit_buffered,
      h.rt.auditBuffer.size - 1,
      'the telemetry read itself is buffered after it answered',
    );
  });

  it('refuses absurd windows with invalid_input', async (t) => {
    const h = await createObserveRuntime(t);
    for (const w of [0, 5, 3601, 86400 * 365])
      assert.equal(
        refused(await call(h, 'read_only', 'system.telemetry', { window_seconds: w }), 'invalid_input').path,
        '/window_seconds',
      );
  });
});

describe('OpenTelemetry spans', () => {
  it('records nothing without an SDK, and one execute_tool span per dispatch with one installed', async (t) => {
    const h = await createObserveRuntime(t);
    assert.equal(h.rt.observers.spans.tracer(), null, 'no provider: the hook is a no-op');
    const provider = new RecordingProvider();
    assert.equal(trace.setGlobalTracerProvider(provider), true);
    t.after(() => trace.disable());
    const ok = await call(h, 'employee', 'counter.bump', { name: 'o' });
    await call(h, 'employee', 'counter.charge', { name: 'o', amount: 2 });
    const pending = await call(h, 'owner', 'counter.charge', { name: 'o', amount: 2 });
    await call(h, 'employee', 'counter.bump', { name: 'o', fail: true });
    assert.equal(provider.spans.length, 4);
    const [s1, s2, s3, s4] = provider.spans as [Recorded, Recorded, Recorded, Recorded];
    assert.equal(s1.name, 'execute_tool counter.bump');
    assert.equal(s1.kind, SpanKind.INTERNAL);
    const { 'solid.consent_class': _cls, ...rest } = s1.attributes;
    assert.deepEqual(rest, {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'counter.bump',
      'gen_ai.tool.type': 'function',
      'solid.outcome': 'ok',
      'solid.tenant': h.companyId,
      'solid.surface': 'http',
      'solid.shape': 'receipt',
      'solid.audit_id': ok.audit_id,
    });
    assert.ok(
      typeof s1.start === 'number' &&
        typeof s1.end === 'number' &&
        (s1.start as number) <= (s1.end as number),
    );
    assert.equal(s1.status, undefined);
    assert.equal(s2.attributes['solid.outcome'], 'denied');
    assert.equal(s2.attributes['error.type'], 'role_denied');
    assert.equal(s2.attributes['solid.consent_class'], 'WRITE_FINANCIAL');
    assert.deepEqual(s2.status, { code: SpanStatusCode.ERROR, message: 'role_denied' });
    assert.equal(s3.attributes['solid.outcome'], 'pending');
    assert.equal(s3.attributes['solid.audit_id'], pending.audit_id);
    assert.equal(s3.status, undefined, 'a consent request is not an error');
    assert.equal(s4.attributes['solid.outcome'], 'failed');
    assert.equal(s4.attributes['error.type'], 'bump_refused');
    trace.disable();
    await call(h, 'employee', 'counter.get', { name: 'o' });
    assert.equal(provider.spans.length, 4, 'uninstalling the SDK stops the spans');
  });
});

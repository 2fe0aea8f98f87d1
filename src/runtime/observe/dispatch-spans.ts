/**
 * OpenTelemetry spans for dispatches, through @opentelemetry/api only: nothing is recorded unless
 * the host registers a tracer provider (an SDK), and then every dispatch becomes one span.
 *
 * Span (OpenTelemetry semantic conventions for GenAI, "execute_tool", status Development, as of
 * semconv v1.37): name `execute_tool {verb}`, kind INTERNAL, start and end = the dispatch's own
 * start and end (it is recorded from the onDispatch outcome, parented to the caller's active
 * context), attributes
 *   gen_ai.operation.name = "execute_tool", gen_ai.tool.name = verb, gen_ai.tool.type = "function",
 *   solid.shape, solid.consent_class, solid.outcome (ok | pending | denied | failed), solid.reason,
 *   solid.audit_id, solid.tenant (company_id), solid.surface; error.type = reason on denied/failed,
 *   with span status ERROR. (gen_ai.tool.call.id is left out: a dispatch has no model call id.)
 *
 * Cost without an SDK: while no tracer provider was ever registered (OpenTelemetry's global slot
 * has no `trace` member) the hook returns at once and @opentelemetry/api is not even imported
 * (issue 36: start-up); after that it compares the global provider's delegate with the no-op one
 * it saw last (one property read and a comparison), creating no span and no attribute object.
 * Spec: spec/shapes.md §telemetry.
 */
import { createRequire } from 'node:module';
import type { Attributes, Tracer, TracerProvider } from '@opentelemetry/api';
import type { DispatchOutcome } from '../core.ts';
import { outcomeLabel } from './outcome-label.ts';

/** Instrumentation scope name of the spans. */
export const TRACER_NAME = 'solid-verbs';
/** Semantic-conventions version the attributes follow. */
export const SEMCONV_VERSION = '1.37.0';

type OtelApi = typeof import('@opentelemetry/api');

/** OpenTelemetry API 1.x keeps its registered globals here (any copy of the package finds them). */
const OTEL_GLOBAL = Symbol.for('opentelemetry.js.api.1');

let loaded: { api: OtelApi; noop: TracerProvider } | undefined;

/** @opentelemetry/api and the provider's no-op delegate (what an unset global proxy returns). */
function otel(): { api: OtelApi; noop: TracerProvider } {
  if (loaded === undefined) {
    const api = createRequire(import.meta.url)('@opentelemetry/api') as OtelApi;
    loaded = { api, noop: new api.ProxyTracerProvider().getDelegate() };
  }
  return loaded;
}

export class DispatchSpans {
  #seen: TracerProvider | undefined;
  #tracer: Tracer | null = null;

  /** The tracer to use now, or null when no SDK is installed. */
  tracer(): Tracer | null {
    const slot = (globalThis as Record<symbol, { trace?: unknown } | undefined>)[OTEL_GLOBAL];
    if (slot?.trace === undefined && loaded === undefined) return null;
    const { api, noop } = otel();
    const global = api.trace.getTracerProvider();
    const delegate = global instanceof api.ProxyTracerProvider ? global.getDelegate() : global;
    if (delegate !== this.#seen) {
      this.#seen = delegate;
      this.#tracer = delegate === noop ? null : api.trace.getTracer(TRACER_NAME, SEMCONV_VERSION);
    }
    return this.#tracer;
  }

  /** Record one dispatch as a span (the onDispatch hook). */
  record(o: DispatchOutcome): void {
    const tracer = this.tracer();
    if (tracer === null) return;
    const outcome = outcomeLabel(o);
    const attributes: Attributes = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': o.verb,
      'gen_ai.tool.type': 'function',
      'solid.outcome': outcome,
      'solid.tenant': o.company_id,
      'solid.surface': o.surface,
    };
    if (o.shape !== null) attributes['solid.shape'] = o.shape;
    if (o.consent_class !== null) attributes['solid.consent_class'] = o.consent_class;
    if (o.reason !== null) attributes['solid.reason'] = o.reason;
    if (o.audit_id !== null) attributes['solid.audit_id'] = o.audit_id;
    if (outcome === 'denied' || outcome === 'failed') attributes['error.type'] = o.reason ?? 'unknown';
    const { api } = otel();
    const span = tracer.startSpan(
      `execute_tool ${o.verb}`,
      { kind: api.SpanKind.INTERNAL, startTime: o.at - o.latency_ms, attributes },
      api.context.active(),
    );
    if (outcome === 'denied' || outcome === 'failed')
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: o.reason ?? undefined });
    span.end(o.at);
  }
}

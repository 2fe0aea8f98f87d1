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
 * Cost without an SDK: the hook compares the global provider's delegate with the no-op one it saw
 * last (one property read and a comparison), creating no span and no attribute object.
 * Spec: spec/shapes.md §telemetry.
 */
import {
  context,
  ProxyTracerProvider,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import type { DispatchOutcome } from '../core.ts';
import { outcomeLabel } from './outcome-label.ts';

/** Instrumentation scope name of the spans. */
export const TRACER_NAME = 'solid-verbs';
/** Semantic-conventions version the attributes follow. */
export const SEMCONV_VERSION = '1.37.0';

/** The provider's no-op delegate (what an unset global proxy returns). */
const NOOP_DELEGATE: TracerProvider = new ProxyTracerProvider().getDelegate();

export class DispatchSpans {
  #seen: TracerProvider | undefined;
  #tracer: Tracer | null = null;

  /** The tracer to use now, or null when no SDK is installed. */
  tracer(): Tracer | null {
    const global = trace.getTracerProvider();
    const delegate = global instanceof ProxyTracerProvider ? global.getDelegate() : global;
    if (delegate !== this.#seen) {
      this.#seen = delegate;
      this.#tracer = delegate === NOOP_DELEGATE ? null : trace.getTracer(TRACER_NAME, SEMCONV_VERSION);
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
    const span = tracer.startSpan(
      `execute_tool ${o.verb}`,
      { kind: SpanKind.INTERNAL, startTime: o.at - o.latency_ms, attributes },
      context.active(),
    );
    if (outcome === 'denied' || outcome === 'failed')
      span.setStatus({ code: SpanStatusCode.ERROR, message: o.reason ?? undefined });
    span.end(o.at);
  }
}

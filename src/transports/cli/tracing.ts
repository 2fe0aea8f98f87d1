/**
 * OTLP trace export for `solid serve` (spec/transports.md §traces).
 *
 * When `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (and
 * `OTEL_SDK_DISABLED` is not `true`), the OpenTelemetry Node SDK is loaded and registered as the
 * global tracer provider with a batch processor and the OTLP/HTTP (JSON) exporter; the runtime's
 * dispatch spans (src/runtime/observe/dispatch-spans.ts, GenAI `execute_tool` conventions) and the
 * W3C `traceparent` of incoming HTTP requests then flow to the collector. The exporter reads the
 * standard OTEL_* variables itself (headers, timeout, `OTEL_BSP_SCHEDULE_DELAY`, …);
 * `OTEL_SERVICE_NAME` defaults to `solid-verbs`. Without those variables nothing is loaded: the
 * SDK costs nothing at start.
 */
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';

/** This package's version (package.json, three folders up from src/ and from dist/ alike). */
function packageVersion(): string {
  try {
    return (
      JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
        version: string;
      }
    ).version;
  } catch {
    return '0.0.0';
  }
}

/** Stop exporting: flush the spans still batched and unregister. Resolves even on errors. */
export type StopTracing = () => Promise<void>;

/**
 * Start exporting traces if the environment asks for it; returns how to stop, or undefined when
 * tracing is off. Never throws: an SDK that fails to load is logged and tracing stays off.
 */
export async function startTracing(env: NodeJS.ProcessEnv, logger: Logger): Promise<StopTracing | undefined> {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (endpoint === undefined || endpoint === '' || env.OTEL_SDK_DISABLED === 'true') return undefined;
  try {
    const [{ NodeTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] =
      await Promise.all([
        import('@opentelemetry/sdk-trace-node'),
        import('@opentelemetry/exporter-trace-otlp-http'),
        import('@opentelemetry/resources'),
      ]);
    const provider = new NodeTracerProvider({
      resource: resourceFromAttributes({
        'service.name': env.OTEL_SERVICE_NAME || 'solid-verbs',
        'service.version': packageVersion(),
      }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    provider.register();
    logger.info({ endpoint: safeEndpoint(endpoint) }, 'tracing: exporting spans over OTLP/HTTP');
    return async () => {
      await provider.shutdown().catch((err: unknown) => {
        logger.warn({ err: (err as Error).message }, 'tracing: the last spans could not be exported');
      });
    };
  } catch (err) {
    logger.error({ err: (err as Error).message }, 'tracing: the OpenTelemetry SDK could not start');
    return undefined;
  }
}

/** The endpoint without credentials or query (it may carry a token). */
function safeEndpoint(endpoint: string): string {
  try {
    const u = new URL(endpoint);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(unparseable)';
  }
}

/**
 * The OpenTelemetry logs sink of the audit log (spec/audit.md §streaming): every committed audit
 * row of every tenant, as one OTLP log record, to the collector named by the standard
 * OTEL_EXPORTER_OTLP_* variables — a SIEM or log pipeline receives the log as it is written.
 *
 * - **Record**: body = the row as JSON text, exactly as an export writes it (every column, so the
 *   receiver re-hashes it: `row_hash` = SHA-256(0x00 ‖ RFC 8785 JSON of the other columns));
 *   attributes `solid.audit_id`, `solid.company_id`, `solid.seq`, `solid.row_hash`,
 *   `solid.prev_hash`, `solid.verb`, `solid.status`, `solid.reason`; the time is the row's
 *   `created_at`; severity INFO, WARN for a refusal or failure. Event name `solid.audit.row`.
 * - **Order and once**: per tenant, rows go in `seq` order, a batch at a time (at most
 *   `batchRows`); the cursor (`audit_stream_cursors`, sink `otlp`) moves only after the collector
 *   acknowledged the batch, so a restart resumes with no gap, and a failed or unanswered export is
 *   sent again (at-least-once: the receiver drops a repeated `solid.audit_id`).
 * - **Cost**: the SDK is loaded only when the variables ask for it; one read per interval when
 *   nothing is new.
 *
 * One node should stream (several would each send every row: still at-least-once, but twice).
 */
import type { Logger as PinoLogger } from 'pino';
import type { Store } from '../../../store/store.ts';
import { advanceCursor, auditRowsAfter, readCursor, tenantsBehind } from './audit-stream.ts';

/** The cursor name of the OTLP logs sink. */
export const OTLP_SINK = 'otlp';

/** Sends one batch of rows; resolves when the collector acknowledged it, rejects otherwise. */
export type AuditRowExport = (rows: ReadonlyArray<Record<string, unknown>>) => Promise<void>;

/** Tuning of the OTLP audit stream. */
export interface OtlpAuditStreamOptions {
  /** Time between passes when idle or after a failure (ms). Default 1000 (OTEL_BLRP_SCHEDULE_DELAY). */
  intervalMs?: number;
  /** Rows per export request. Default 512 (OTEL_BLRP_MAX_EXPORT_BATCH_SIZE). */
  batchRows?: number;
}

/** The pump: reads rows after the cursor, exports them, records the cursor. */
export class OtlpAuditStream {
  readonly #store: Store;
  readonly #send: AuditRowExport;
  readonly #logger: PinoLogger;
  readonly #clock: () => Date;
  readonly #intervalMs: number;
  readonly #batchRows: number;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #running: Promise<number> | undefined;
  #failing = false;

  constructor(
    deps: { store: Store; send: AuditRowExport; logger: PinoLogger; clock?: () => Date },
    options: OtlpAuditStreamOptions = {},
  ) {
    this.#store = deps.store;
    this.#send = deps.send;
    this.#logger = deps.logger;
    this.#clock = deps.clock ?? (() => new Date());
    this.#intervalMs = Math.max(10, options.intervalMs ?? 1000);
    this.#batchRows = Math.max(1, Math.min(10_000, options.batchRows ?? 512));
  }

  /** Start the timer (a pass at once, then every interval). */
  start(): void {
    this.#schedule(0);
  }

  #schedule(ms: number): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.pass().finally(() => this.#schedule(this.#intervalMs));
    }, ms);
    this.#timer.unref();
  }

  /**
   * One pass: for each tenant behind the cursor, export its new rows batch by batch until it is
   * caught up or an export fails. Resolves to the rows acknowledged; never rejects (a failure is
   * logged once until the next success, and retried next pass).
   */
  pass(): Promise<number> {
    this.#running ??= this.#pass().finally(() => (this.#running = undefined));
    return this.#running;
  }

  async #pass(): Promise<number> {
    let sent = 0;
    try {
      const behind = await this.#store.read((q) => tenantsBehind(q, OTLP_SINK));
      for (const t of behind) {
        for (;;) {
          if (this.#closed) return sent;
          const cursor = await this.#store.read((q) => readCursor(q, t.company_id, OTLP_SINK));
          const rows = await this.#store.read((q) =>
            auditRowsAfter(q, t.company_id, cursor.through_seq, this.#batchRows),
          );
          if (rows.length === 0) break;
          await this.#send(rows);
          const last = Number(rows[rows.length - 1]!.seq);
          const moved = await this.#store.write(
            (tx) => advanceCursor(tx, cursor, last, null, this.#clock()),
            {
              label: 'audit stream cursor',
            },
          );
          if (!moved) break; // another pass moved it: it sends from there
          sent += rows.length;
          if (this.#failing) this.#logger.info({ sink: OTLP_SINK }, 'audit stream: exporting again');
          this.#failing = false;
          if (rows.length < this.#batchRows) break;
        }
      }
    } catch (err) {
      if (!this.#failing)
        this.#logger.warn(
          { sink: OTLP_SINK, err: (err as Error).message },
          'audit stream: export failed; the rows are sent again on the next pass',
        );
      this.#failing = true;
    }
    return sent;
  }

  /** Stop the timer and wait for a pass in progress. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await this.#running;
  }
}

/** Where the logs go, from the standard variables; undefined when log export is not asked for. */
export function otlpLogsEndpoint(env: NodeJS.ProcessEnv): string | undefined {
  if (env.OTEL_SDK_DISABLED === 'true') return undefined;
  const exporters = (env.OTEL_LOGS_EXPORTER ?? '').split(',').map((s) => s.trim());
  if (exporters.includes('none')) return undefined;
  if (env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT) return env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT;
  if (exporters.includes('otlp') && env.OTEL_EXPORTER_OTLP_ENDPOINT)
    return `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/logs`;
  return undefined;
}

const DENIED = new Set(['denied', 'failed', 'rejected']);

/**
 * Start streaming the audit log over OTLP/HTTP (JSON) when the environment asks for it:
 * `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`, or `OTEL_LOGS_EXPORTER=otlp` with `OTEL_EXPORTER_OTLP_ENDPOINT`
 * (then `<endpoint>/v1/logs`); not when `OTEL_SDK_DISABLED=true` or `OTEL_LOGS_EXPORTER=none`.
 * `OTEL_BLRP_SCHEDULE_DELAY` and `OTEL_BLRP_MAX_EXPORT_BATCH_SIZE` tune the pass interval and the
 * batch; headers and timeout come from the exporter's own OTEL_* variables. Returns the running
 * stream, or undefined when off. Never throws: an SDK that fails to load is logged.
 */
export async function startOtlpAuditStream(
  env: NodeJS.ProcessEnv,
  deps: {
    store: Store;
    logger: PinoLogger;
    clock?: () => Date;
    serviceName?: string;
    serviceVersion?: string;
  },
): Promise<{ stream: OtlpAuditStream; close(): Promise<void> } | undefined> {
  const url = otlpLogsEndpoint(env);
  if (url === undefined) return undefined;
  try {
    const [{ LoggerProvider }, { OTLPLogExporter }, { resourceFromAttributes }, { SeverityNumber }] =
      await Promise.all([
        import('@opentelemetry/sdk-logs'),
        import('@opentelemetry/exporter-logs-otlp-http'),
        import('@opentelemetry/resources'),
        import('@opentelemetry/api-logs'),
      ]);
    type Record_ = Parameters<InstanceType<typeof OTLPLogExporter>['export']>[0][number];
    let collected: Record_[] = [];
    const provider = new LoggerProvider({
      resource: resourceFromAttributes({
        'service.name': env.OTEL_SERVICE_NAME || deps.serviceName || 'solid-verbs',
        ...(deps.serviceVersion !== undefined ? { 'service.version': deps.serviceVersion } : {}),
      }),
      processors: [
        {
          onEmit: (r) => void collected.push(r as unknown as Record_),
          forceFlush: () => Promise.resolve(),
          shutdown: () => Promise.resolve(),
        },
      ],
    });
    const otelLogger = provider.getLogger('solid-verbs.audit');
    const exporter = new OTLPLogExporter({ url });
    const send: AuditRowExport = async (rows) => {
      collected = [];
      for (const row of rows) {
        const status = String(row.status);
        otelLogger.emit({
          eventName: 'solid.audit.row',
          timestamp: new Date(String(row.created_at)),
          severityNumber: DENIED.has(status) ? SeverityNumber.WARN : SeverityNumber.INFO,
          severityText: DENIED.has(status) ? 'WARN' : 'INFO',
          body: JSON.stringify(row),
          attributes: {
            'solid.audit_id': Number(row.audit_id),
            'solid.company_id': Number(row.company_id),
            'solid.seq': Number(row.seq),
            'solid.row_hash': String(row.row_hash),
            'solid.prev_hash': String(row.prev_hash),
            'solid.verb': String(row.action_type),
            'solid.status': status,
            ...(row.reason !== null ? { 'solid.reason': String(row.reason) } : {}),
          },
        });
      }
      const batch = collected;
      collected = [];
      await new Promise<void>((resolve, reject) =>
        exporter.export(batch, (r) =>
          r.code === 0 ? resolve() : reject(r.error ?? new Error('the collector refused the batch')),
        ),
      );
    };
    const num = (v: string | undefined, d: number) => (v !== undefined && /^\d+$/.test(v) ? Number(v) : d);
    const stream = new OtlpAuditStream(
      { store: deps.store, send, logger: deps.logger, clock: deps.clock },
      {
        intervalMs: num(env.OTEL_BLRP_SCHEDULE_DELAY, 1000),
        batchRows: num(env.OTEL_BLRP_MAX_EXPORT_BATCH_SIZE, 512),
      },
    );
    stream.start();
    deps.logger.info({ endpoint: safeEndpoint(url) }, 'audit stream: exporting audit rows as OTLP logs');
    return {
      stream,
      async close() {
        await stream.close();
        await exporter.shutdown().catch(() => {});
        await provider.shutdown().catch(() => {});
      },
    };
  } catch (err) {
    deps.logger.error(
      { err: (err as Error).message },
      'audit stream: the OpenTelemetry logs SDK could not start',
    );
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

/**
 * The options of createRuntime, and the settings the pipeline reads (the options with their
 * defaults applied).
 */
import type { Logger } from 'pino';
import type { Store } from '../store/store.ts';
import type { Secrets } from './secrets.ts';
import type { RuntimeSettings } from './core.ts';
import type { ObserveOptions } from './observe/observers.ts';
import type { OutboxDeliveryOptions } from './delivery/delivery.ts';
import { IDEMPOTENCY_TTL_SECONDS } from './ledger/write/idempotency.ts';
import { NONCE_TTL_SECONDS } from './consent/nonce.ts';
import { DEFAULT_MAX_WRITE_RESULT_BYTES } from './ledger/write/execute.ts';

/** Options of `createRuntime`: the store (required), secrets, logger, clock, limits and the delivery, observe and consent settings. Every member is optional except `store`; defaults are in src/runtime/options.ts. spec/store.md, spec/consent.md */
export interface RuntimeOptions {
  store: Store;
  /**
   * Secrets (nonce + master key). Default (runtimeSecrets, secrets.ts): a file database keeps them
   * in `<db>.keys.json` beside it (created on first start) unless SOLID_NONCE_SECRET and
   * SOLID_MASTER_KEY are set; in memory or on PostgreSQL without those, ephemeral with a warning.
   */
  secrets?: Secrets;
  /** The clock. Default `() => new Date()`. Inject to test expiry. */
  clock?: () => Date;
  logger?: Logger;
  /** Tenant whose data keyless callers may read. Undefined: keyless calls are refused. */
  sandboxCompanyId?: number;
  /** Extra blocked verb names for every tenant. */
  blocklist?: readonly string[];
  /** Validate every verb output against its schema (tests; off in production for speed). */
  validateOutputs?: boolean;
  /** Read-audit flush interval (ms) and batch size. Defaults 100 ms / 256 rows. */
  readAuditFlushMs?: number;
  readAuditBatch?: number;
  /**
   * Window (ms) over which repeated unauthenticated failures of one kind from one address are
   * counted into one aggregated audit row (default 60000; 0: one row per attempt).
   * spec/audit.md §auth-failure-windows
   */
  authFailureWindowMs?: number;
  /** Signed checkpoint every N rows per tenant (default 1000) or T ms (default 60000). */
  checkpointEvery?: number;
  checkpointIntervalMs?: number;
  idempotencyTtlSeconds?: number;
  nonceTtlSeconds?: number;
  /**
   * Largest write result (bytes of its JSON, receipt fields included) that may commit, default
   * 4 MiB (4_194_304, MCP's result limit): a write whose handler returns more is refused
   * `result_too_large` inside its transaction and nothing commits (spec/transports.md §mcp-results).
   */
  maxResultBytes?: number;
  /**
   * The server's public base URL (e.g. `http://localhost:4400`): pending answers carry
   * `consent.approval_url` on every transport. Also settable later (`rt.options.publicUrl`), as
   * `solid serve` does once it listens. spec/consent.md §approval-page
   */
  publicUrl?: string;
  /** Interval of the housekeeping pass (expired nonces, approvals, idempotency rows; maintenance.ts). Default 600000 ms; 0 disables the timer. */
  maintenanceIntervalMs?: number;
  /**
   * Where the maintenance pass archives audit rows of tenants with a retention policy before
   * pruning them (ledger/retention/policy.ts). Unset: no policy prunes anything.
   */
  auditArchiveDir?: string;
  /** Observe hooks (reputation, telemetry, OpenTelemetry spans) and their housekeeping; observe/observers.ts. */
  observe?: ObserveOptions;
  /** Skip migrations (the caller ran them). */
  skipMigrations?: boolean;
  /** The outbox delivery loop: attempts, backoff, deadlines, polling (delivery/outbox-worker.ts). */
  outbox?: OutboxDeliveryOptions;
}

/** The settings of `options`, defaults applied. */
export function resolveSettings(options: RuntimeOptions): RuntimeSettings {
  return {
    validateOutputs: options.validateOutputs ?? false,
    readAuditFlushMs: options.readAuditFlushMs ?? 100,
    readAuditBatch: options.readAuditBatch ?? 256,
    checkpointEvery: options.checkpointEvery ?? 1000,
    checkpointIntervalMs: options.checkpointIntervalMs ?? 60_000,
    idempotencyTtlSeconds: options.idempotencyTtlSeconds ?? IDEMPOTENCY_TTL_SECONDS,
    nonceTtlSeconds: options.nonceTtlSeconds ?? NONCE_TTL_SECONDS,
    maxResultBytes: options.maxResultBytes ?? DEFAULT_MAX_WRITE_RESULT_BYTES,
    ...(options.publicUrl !== undefined ? { publicUrl: options.publicUrl.replace(/\/+$/, '') } : {}),
  };
}

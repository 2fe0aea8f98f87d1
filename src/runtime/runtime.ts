/**
 * createRuntime(): wires the registry, the store, the clock, the secrets, the tenant keys and the
 * logger, and exposes `dispatch` — the one pipeline every transport calls.
 *
 * Spec: spec/README.md (overview); ARCHITECTURE.md (layers and call flow).
 */
import type { Logger } from 'pino';
import { stderrLogger } from './lazy-logger.ts';
import type { Envelope, Principal, Tier } from '../spec/types.ts';
import type { Queryable, Store } from '../store/store.ts';
import { ReadView } from '../store/read-view.ts';
import { Registry } from './registry.ts';
import type { VerbDefinition } from './verb.ts';
import { previewFor } from './verb-context.ts';
import { Secrets, chooseRuntimeSecrets } from './secrets.ts';
import { TenantKeys } from './ledger/keys/tenant-keys.ts';
import { Tenants } from './tenants.ts';
import type { ConsentSettings } from '../identity/consent-predicate.ts';
import { Provisioning, type NewApiKey, type NewTenant } from './provisioning.ts';
import type { AuditRow } from './ledger/write/audit.ts';
import { ReadAuditBuffer } from './ledger/write/read-audit-buffer.ts';
import { RefusalRows } from './ledger/write/refusal-rows.ts';
import { InflightKeys } from './ledger/write/idempotency.ts';
import { Checkpointer } from './ledger/keys/checkpointer.ts';
import { resolveSettings, type RuntimeOptions } from './options.ts';
import { dispatch as runPipeline } from './dispatch.ts';
import type {
  Caller,
  DispatchOptions,
  DispatchOutcome,
  OutboxHandler,
  PackRuntime,
  RuntimeCore,
  RuntimeSettings,
} from './core.ts';
import { Blocklist, DEFAULT_BLOCKLIST, listBlocks } from './consent/blocklist.ts';
import { runMaintenance, type MaintenanceReport } from './maintenance.ts';
import { Observers } from './observe/observers.ts';
import { DispatchHooks } from './observe/hooks.ts';
import { AuthFailureLog } from '../identity/auth-failure-log.ts';
import { Sandbox } from './sandbox.ts';
import { Lifecycle } from './lifecycle.ts';
import { RUNTIME_MIGRATION_SCOPES } from './migration-scopes.ts';
import { createDelivery, type OutboxWorker } from './delivery/delivery.ts';
import { runRetention } from './ledger/retention/policy.ts';

export class Runtime implements PackRuntime {
  readonly store: Store;
  readonly registry: Registry;
  readonly secrets: Secrets;
  readonly keys: TenantKeys;
  readonly tenants: Tenants;
  readonly logger: Logger;
  /** The clock every call reads `ctx.now` from (RuntimeOptions.clock, default the real time). */
  readonly clock: () => Date;
  readonly options: RuntimeSettings;
  readonly inflight = new InflightKeys();
  readonly auditBuffer: ReadAuditBuffer;
  /** Reputation, telemetry and span hooks (spec/shapes.md §reputation §telemetry). */
  readonly observers: Observers;
  readonly readView: Queryable;
  readonly outboxHandlers = new Map<string, OutboxHandler>();
  /** onDispatch / onAuditRow subscribers (observe/hooks.ts). */
  readonly hooks: DispatchHooks;
  readonly #blocklist: Blocklist;
  /** The keyless principal (sandbox.ts). */
  readonly #sandbox: Sandbox;
  /** Maintenance timer, closing signal and close() (lifecycle.ts). */
  readonly #life = new Lifecycle(this);
  /** The outbox delivery loop (delivery/): retries with backoff, start-up pass, dead letters, webhooks. */
  readonly delivery: OutboxWorker<Runtime>;
  /** Windows of repeated unauthenticated failures (spec/audit.md §auth-failure-windows). */
  readonly authFailures: AuthFailureLog;
  /** The rows of refusals transports decide (ledger/write/refusal-rows.ts). */
  readonly refusals: RefusalRows;
  /** Signed checkpoints' cadence (ledger/keys/checkpointer.ts). */
  readonly checkpoints: Checkpointer;
  /** Tenant and API key creation (provisioning.ts). */
  readonly provisioning: Provisioning;

  readonly #archiveDir: string | undefined;

  constructor(options: RuntimeOptions) {
    this.#archiveDir = options.auditArchiveDir;
    this.store = options.store;
    this.registry = new Registry({ compileOutputs: options.validateOutputs ?? false });
    this.secrets = options.secrets ?? Secrets.ephemeral();
    this.clock = options.clock ?? (() => new Date());
    this.logger = options.logger ?? stderrLogger(process.env.SOLID_LOG_LEVEL ?? 'info');
    this.hooks = new DispatchHooks(this.logger);
    this.keys = new TenantKeys(this.store, this.secrets);
    this.tenants = new Tenants(this.store, this.logger, this.clock);
    this.readView = new ReadView(this.store);
    this.#blocklist = new Blocklist([...DEFAULT_BLOCKLIST, ...(options.blocklist ?? [])]);
    this.options = resolveSettings(options);
    this.provisioning = new Provisioning(this.store, this.keys, this.tenants, this.clock);
    this.refusals = new RefusalRows(this);
    this.#sandbox = new Sandbox(this.tenants, options.sandboxCompanyId);
    const { store, keys, clock, logger, secrets } = this;
    const windowMs = options.authFailureWindowMs ?? 60_000;
    const writeAggregate = this.refusals.writeAggregate.bind(this.refusals);
    this.authFailures = new AuthFailureLog({ windowMs, clock, logger, writeAggregate });
    this.auditBuffer = new ReadAuditBuffer(this, this.options.readAuditFlushMs, this.options.readAuditBatch);
    this.observers = new Observers(this, options.observe);
    this.observers.attach();
    const { checkpointEvery: every, checkpointIntervalMs: intervalMs } = this.options;
    this.checkpoints = new Checkpointer({ store, keys, clock, logger, every, intervalMs });
    const handlers = this.outboxHandlers;
    this.delivery = createDelivery<Runtime>(
      { store, secrets, clock, logger, handlers, runtime: this },
      options.outbox,
    );
    this.#life.startMaintenance(() => this.maintenance(), options.maintenanceIntervalMs ?? 600_000);
  }

  /**
   * One housekeeping pass now (expired nonces, approvals, idempotency rows, old cap counters; see
   * maintenance.ts), then, with an archive directory, the tenants' audit retention policies.
   */
  async maintenance(): Promise<MaintenanceReport> {
    const report = await runMaintenance(this.store, this.clock());
    if (this.#archiveDir !== undefined) {
      await this.auditBuffer.flush();
      report.audit_rows_archived = await runRetention({
        store: this.store,
        keys: this.keys,
        logger: this.logger,
        dir: this.#archiveDir,
        now: this.clock(),
      });
    }
    return report;
  }

  /**
   * Dispatch one verb call through the pipeline (dispatch.ts); resolves to an envelope. `principal`
   * comes from src/identity (a key: api-key-auth.ts); none is the sandbox principal. A caller with
   * a raw `apiKey` (a programming error: it would run keyless) rejects with a TypeError.
   */
  dispatch(caller: Caller, verb: string, args?: unknown, options?: DispatchOptions): Promise<Envelope> {
    if ((caller as { apiKey?: unknown }).apiKey !== undefined)
      return Promise.reject(
        new TypeError('Runtime.dispatch takes a principal, not an API key: use dispatchWithKey.'),
      );
    return runPipeline(this, caller, verb, args, options);
  }

  /** Answer and audit a refusal a transport decided (bad key, no session, CSRF): ledger/write/refusal-rows.ts. */
  recordRefusal(...a: Parameters<RefusalRows['record']>): Promise<Envelope> {
    return this.refusals.record(...a);
  }

  /** Register verbs (validated and compiled now; last write wins). */
  register(...definitions: VerbDefinition[]): void {
    this.registry.registerAll(definitions);
  }

  /** The keyless principal: read_only on the sandbox tenant. Throws auth_required when none is configured. */
  sandboxPrincipal(): Promise<Principal> {
    return this.#sandbox.principal();
  }

  /** Is this name blocked for this tenant (global list, runtime option, tenant settings)? Compared by block key (consent/blocklist.ts). */
  async isBlocked(name: string, companyId: number): Promise<boolean> {
    if (this.#blocklist.has(name)) return true;
    const t = await this.tenants.get(companyId);
    return listBlocks(t?.settings.blocklist, name);
  }

  /** The tenant's consent settings as stored (cached up to 5 s across processes). spec/consent.md §channels */
  async consentSettings(companyId: number): Promise<ConsentSettings> {
    return (await this.tenants.get(companyId))?.settings ?? {};
  }

  /** The preview a write verb declares, for pending answers (verb-context.ts). Undefined when none. */
  previewFor(...a: Parameters<RuntimeCore['previewFor']>): ReturnType<RuntimeCore['previewFor']> {
    return previewFor(this, ...a);
  }

  /** Subscribe to every dispatch outcome (reputation, telemetry). Returns an unsubscribe. */
  onDispatch(fn: (o: DispatchOutcome) => void): () => void {
    return this.hooks.onDispatch(fn);
  }

  /** Subscribe to every committed audit row. */
  onAuditRow(fn: (row: AuditRow) => void): () => void {
    return this.hooks.onAuditRow(fn);
  }

  observe(o: DispatchOutcome): void {
    this.hooks.outcome(o);
  }

  /** Called after each committed audit row: observers and checkpoint cadence. */
  afterWrite(row: AuditRow): void {
    this.hooks.row(row);
    this.checkpoints.noteRow(row.company_id);
  }

  /** Deliver pending outbox rows soon (after a commit that queued some): the delivery loop's kick. */
  kickOutbox(): void {
    this.delivery.kick();
  }

  /** One delivery pass now, after this process's running ones; resolves to the rows delivered (delivery/). */
  deliverOutbox(limit = 100): Promise<number> {
    return this.delivery.deliver(limit);
  }

  /** Create a tenant with its chain head and an active signing key (provisioning.ts). */
  createTenant(t: NewTenant): Promise<{ company_id: number; name: string; tier: Tier }> {
    return this.provisioning.createTenant(t);
  }

  /** Create an API key for a user of a tenant; the plaintext key is returned once (provisioning.ts). */
  createApiKey(k: NewApiKey): Promise<string> {
    return this.provisioning.createApiKey(k);
  }

  /** Aborted by beginClose (and close): what long waits listen to. */
  get closing(): AbortSignal {
    return this.#life.closing;
  }

  /** Start shutting down: waiting calls (a long poll) answer now; call before closing a server (lifecycle.ts). */
  beginClose(): void {
    this.#life.beginClose();
  }

  /** Flush buffered rows, stop timers, sign the heads that moved, close the store (lifecycle.ts). */
  close(): Promise<void> {
    return this.#life.close();
  }
}

/** Create a runtime on a store: runs the runtime migrations unless told not to. */
export async function createRuntime(options: RuntimeOptions): Promise<Runtime> {
  if (!options.skipMigrations) {
    for (const [scope, migrations] of RUNTIME_MIGRATION_SCOPES)
      await options.store.migrate(scope, migrations);
  }
  const chosen = await chooseRuntimeSecrets(options.store, options.secrets);
  const rt = new Runtime({ ...options, secrets: chosen.secrets });
  if (chosen.warning !== undefined) rt.logger.warn(chosen.warning);
  rt.delivery.start();
  return rt;
}

/**
 * createRuntime(): wires the registry, the store, the clock, the secrets, the tenant keys and the
 * logger, and exposes `dispatch` — the one pipeline every transport calls.
 *
 * Spec: spec/README.md (overview); ARCHITECTURE.md (layers and call flow).
 */
import pino, { type Logger } from 'pino';
import type { Envelope, Principal, Tier } from '../spec/types.ts';
import type { Queryable, Store } from '../store/store.ts';
import { StoreError } from '../store/store.ts';
import { ReadView } from '../store/read-view.ts';
import { runtimeMigrations } from '../store/migrations/runtime.ts';
import { Registry } from './registry.ts';
import type { CompiledVerb, VerbDefinition } from './verb.ts';
import { previewFor } from './verb-context.ts';
import { Secrets, checkMasterKey, runtimeSecrets, type RuntimeSecrets } from './secrets.ts';
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
  RuntimeSettings,
} from './core.ts';
import { Blocklist, DEFAULT_BLOCKLIST, listBlocks } from './consent/blocklist.ts';
import { runMaintenance, type MaintenanceReport } from './maintenance.ts';
import { Observers } from './observe/observers.ts';
import { DispatchHooks } from './observe/hooks.ts';
import { HOW_TO_PASS_A_KEY, VerbError, WHERE_KEYS_COME_FROM } from './errors.ts';
import { AuthFailureLog } from '../identity/auth-failure-log.ts';
import { agentPrincipal } from '../identity/principal.ts';
import { createDelivery, type OutboxWorker } from './delivery/delivery.ts';
import { deliveryMigrations } from './delivery/migrations.ts';

export class Runtime implements PackRuntime {
  readonly store: Store;
  readonly registry: Registry;
  readonly secrets: Secrets;
  readonly keys: TenantKeys;
  readonly tenants: Tenants;
  readonly logger: Logger;
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
  readonly #sandboxCompanyId: number | undefined;
  #sandbox: Principal | undefined;
  #maintenanceTimer: NodeJS.Timeout | undefined;
  /** The outbox delivery loop (delivery/): retries with backoff, start-up pass, dead letters, webhooks. */
  readonly delivery: OutboxWorker<Runtime>;
  #closed = false;
  /** Windows of repeated unauthenticated failures (spec/audit.md §auth-failure-windows). */
  readonly authFailures: AuthFailureLog;
  /** The rows of refusals transports decide (ledger/write/refusal-rows.ts). */
  readonly refusals: RefusalRows;
  /** Signed checkpoints' cadence (ledger/keys/checkpointer.ts). */
  readonly checkpoints: Checkpointer;
  /** Tenant and API key creation (provisioning.ts). */
  readonly provisioning: Provisioning;

  constructor(options: RuntimeOptions) {
    this.store = options.store;
    this.registry = new Registry({ compileOutputs: options.validateOutputs ?? false });
    this.secrets = options.secrets ?? Secrets.ephemeral();
    this.clock = options.clock ?? (() => new Date());
    this.logger =
      options.logger ?? pino({ level: process.env.SOLID_LOG_LEVEL ?? 'info' }, pino.destination(2));
    this.hooks = new DispatchHooks(this.logger);
    this.keys = new TenantKeys(this.store, this.secrets);
    this.tenants = new Tenants(this.store, this.logger);
    this.readView = new ReadView(this.store);
    this.#blocklist = new Blocklist([...DEFAULT_BLOCKLIST, ...(options.blocklist ?? [])]);
    this.#sandboxCompanyId = options.sandboxCompanyId;
    this.options = resolveSettings(options);
    this.provisioning = new Provisioning(this.store, this.keys, this.tenants, this.clock);
    this.refusals = new RefusalRows(this);
    this.authFailures = new AuthFailureLog({
      windowMs: options.authFailureWindowMs ?? 60_000,
      clock: this.clock,
      logger: this.logger,
      writeAggregate: (w) => this.refusals.writeAggregate(w),
    });
    this.auditBuffer = new ReadAuditBuffer(this, this.options.readAuditFlushMs, this.options.readAuditBatch);
    this.observers = new Observers(this, options.observe);
    this.observers.attach();
    this.checkpoints = new Checkpointer({
      store: this.store,
      keys: this.keys,
      clock: this.clock,
      logger: this.logger,
      every: this.options.checkpointEvery,
      intervalMs: this.options.checkpointIntervalMs,
    });
    this.delivery = createDelivery<Runtime>(
      {
        store: this.store,
        secrets: this.secrets,
        clock: this.clock,
        logger: this.logger,
        handlers: this.outboxHandlers,
        runtime: this,
      },
      options.outbox,
    );
    const maintenanceMs = options.maintenanceIntervalMs ?? 600_000;
    if (maintenanceMs > 0) {
      this.#maintenanceTimer = setInterval(
        () =>
          void this.maintenance().catch((err: unknown) => this.logger.error({ err }, 'maintenance failed')),
        maintenanceMs,
      );
      this.#maintenanceTimer.unref();
    }
  }

  /** One housekeeping pass now (expired nonces, approvals, idempotency rows, old cap counters). See maintenance.ts. */
  maintenance(): Promise<MaintenanceReport> {
    return runMaintenance(this.store, this.clock());
  }

  /**
   * Dispatch one verb call through the pipeline (see dispatch.ts). Always resolves to an envelope.
   * `caller.principal` comes from the transport's authentication; pass `apiKey` instead to let the
   * runtime authenticate (auth_invalid is then audited).
   */
  async dispatch(
    caller: Caller & { apiKey?: string | null },
    verb: string,
    args?: unknown,
    options?: DispatchOptions,
  ): Promise<Envelope> {
    const authed = await this.#authenticate(caller, verb);
    return 'ok' in authed ? authed : runPipeline(this, authed, verb, args, options);
  }

  /**
   * Answer and audit a request a transport refuses before the pipeline (a malformed dispatch body):
   * the key is authenticated as `dispatch` would (a bad key is the audited auth_invalid), then `err`
   * is recorded as a refusal of `verb` in the caller's tenant (recordRefusal).
   */
  async refuse(caller: Caller & { apiKey?: string | null }, verb: string, err: VerbError): Promise<Envelope> {
    const authed = await this.#authenticate(caller, verb);
    return 'ok' in authed ? authed : this.recordRefusal(authed, verb, err);
  }

  /** The caller with its principal from `apiKey`, or the audited auth_invalid envelope. */
  async #authenticate(caller: Caller & { apiKey?: string | null }, verb: string): Promise<Caller | Envelope> {
    if (caller.principal != null || caller.apiKey == null || caller.apiKey === '') return caller;
    try {
      return { ...caller, principal: await this.tenants.authenticate(caller.apiKey) };
    } catch (err) {
      return this.authFailure(caller, verb, err);
    }
  }

  /**
   * Record and answer a failed authentication (auth_invalid), audited under the sandbox tenant;
   * when the presented key id exists (wrong secret, revoked key) the tenant owning it also gets a
   * row (`api_key.wrong_secret` / `api_key.revoked`, with its key_id). spec/audit.md §auth-failures
   */
  async authFailure(caller: Caller, verb: string, err: unknown): Promise<Envelope> {
    const e =
      err instanceof VerbError || err instanceof StoreError
        ? err
        : new VerbError('auth_invalid', 'The API key is not valid.');
    return this.recordRefusal(caller, verb, e, 'auth');
  }

  /**
   * Answer and audit a refusal decided outside the pipeline by a transport (a bad key, a missing
   * session, a failed CSRF or Origin check): ledger/write/refusal-rows.ts.
   */
  recordRefusal(
    caller: Caller,
    verb: string,
    err: VerbError | StoreError,
    category?: string,
  ): Promise<Envelope> {
    return this.refusals.record(caller, verb, err, category);
  }

  /** Register verbs (validated and compiled now; last write wins). */
  register(...definitions: VerbDefinition[]): void {
    this.registry.registerAll(definitions);
  }

  /** The keyless principal: read_only on the sandbox tenant. Throws auth_required when none is configured. */
  async sandboxPrincipal(): Promise<Principal> {
    if (this.#sandbox !== undefined) return this.#sandbox;
    if (this.#sandboxCompanyId === undefined) {
      throw new VerbError('auth_required', 'An API key is required.', {
        hint: `${HOW_TO_PASS_A_KEY} ${WHERE_KEYS_COME_FROM}`,
      });
    }
    const t = await this.tenants.get(this.#sandboxCompanyId);
    if (t === undefined)
      throw new VerbError('auth_required', 'An API key is required (no sandbox tenant exists).', {
        hint: 'Run `solid init`.',
      });
    this.#sandbox = agentPrincipal({
      company_id: t.company_id,
      user_id: 0,
      role: 'read_only',
      tier: t.tier,
      agent_type: 'sandbox',
      sandbox: true,
    });
    return this.#sandbox;
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
  previewFor(
    verb: CompiledVerb,
    principal: Principal,
    args: Record<string, unknown>,
    caller: Caller,
  ): Promise<Record<string, unknown> | undefined> {
    return previewFor(this, verb, principal, args, caller);
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

  /**
   * One delivery pass now (delivery/outbox-worker.ts); resolves to the rows it delivered. It first
   * waits for passes running in this process (the after-commit kick), whose leased rows it would skip.
   */
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

  /** Flush buffered rows, stop timers, close the store. */
  readonly #closing = new AbortController();

  /** Aborted by beginClose (and close): what long waits listen to. */
  get closing(): AbortSignal {
    return this.#closing.signal;
  }

  /**
   * Start shutting down: calls that are only waiting (events.poll with wait_ms) answer now, with
   * what they have, so a server's graceful close is not held for up to 30 s by a long poll. Call
   * it before closing the HTTP server (which waits for in-flight requests); close() calls it too.
   * Idempotent. Spec: spec/transports.md §cli-serve.
   */
  beginClose(): void {
    this.#closing.abort();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.beginClose();
    this.checkpoints.stop();
    if (this.#maintenanceTimer !== undefined) clearInterval(this.#maintenanceTimer);
    await this.delivery.close();
    await this.auditBuffer.flush();
    await Promise.all([this.authFailures.flushAll(), this.tenants.flushKeyUse()]);
    await this.observers.close();
    // Sign the heads that moved, so a short-lived process (a CLI call) leaves its rows anchored.
    await this.checkpoints
      .checkpointAll()
      .catch((err: unknown) => this.logger.error({ err }, 'closing checkpoint failed'));
    await this.store.close();
  }
}

/** Create a runtime on a store: runs the runtime migrations unless told not to. */
export async function createRuntime(options: RuntimeOptions): Promise<Runtime> {
  if (!options.skipMigrations) {
    await options.store.migrate('runtime', runtimeMigrations);
    await options.store.migrate('delivery', deliveryMigrations);
  }
  const chosen: RuntimeSecrets =
    options.secrets !== undefined
      ? { secrets: options.secrets, source: 'env' }
      : await runtimeSecrets(options.store);
  await checkMasterKey(
    options.store,
    chosen.secrets,
    options.secrets !== undefined
      ? 'the secrets given to createRuntime'
      : (chosen.keyfilePath ?? 'SOLID_MASTER_KEY'),
  );
  const rt = new Runtime({ ...options, secrets: chosen.secrets });
  if (chosen.warning !== undefined) rt.logger.warn(chosen.warning);
  rt.delivery.start();
  return rt;
}

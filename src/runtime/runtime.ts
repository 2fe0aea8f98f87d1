/**
 * createRuntime(): wires the registry, the store, the clock, the secrets, the tenant keys and the
 * logger, and exposes `dispatch` — the one pipeline every transport calls.
 *
 * Spec: spec/README.md (overview); ARCHITECTURE.md (layers and call flow).
 */
import pino, { type Logger } from 'pino';
import type { Envelope, Principal, Tier, VerbClass } from '../spec/types.ts';
import type { Queryable, Store, StoreTx } from '../store/store.ts';
import { StoreError } from '../store/store.ts';
import { runtimeMigrations } from '../store/migrations/runtime.ts';
import { Registry } from './registry.ts';
import { runtimeContextMembers, type CompiledVerb, type VerbDefinition } from './verb.ts';
import { Secrets, checkMasterKey, runtimeSecrets, type RuntimeSecrets } from './secrets.ts';
import { TenantKeys } from './ledger/keys/tenant-keys.ts';
import {
  Tenants,
  insertApiKey,
  insertTenant,
  phraseChannelOf,
  type PhraseChannelSetting,
  type TenantSettings,
} from './tenants.ts';
import { appendAudit, auditEntry, type AuditRow } from './ledger/write/audit.ts';
import { ReadAuditBuffer } from './ledger/write/read-audit-buffer.ts';

export { ReadAuditBuffer } from './ledger/write/read-audit-buffer.ts';
import { InflightKeys, IDEMPOTENCY_TTL_SECONDS } from './ledger/write/idempotency.ts';
import { NONCE_TTL_SECONDS } from './consent/nonce.ts';
import { DEFAULT_MAX_WRITE_RESULT_BYTES } from './ledger/write/execute.ts';
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
import { Observers, type ObserveOptions } from './observe/observers.ts';
import { HOW_TO_PASS_A_KEY, VerbError, WHERE_KEYS_COME_FROM } from './errors.ts';
import { AuthFailureLog, type AggregatedFailure } from './ledger/auth-failure-log.ts';
import { reasonInfo } from '../spec/reasons.ts';
import { countDailyCap } from './consent/daily-caps.ts';
import { checkpointedTenants, writeCheckpoint } from './ledger/keys/checkpoints.ts';
import { deliverOutbox } from './ledger/write/outbox.ts';

export { DEFAULT_DAILY_CAPS } from './consent/daily-caps.ts';
export { checkpointMaterial } from './ledger/keys/checkpoints.ts';
import type { Role } from '../spec/types.ts';

/** action_type of the row a tenant gets when one of its key ids is presented with a wrong secret, or after revocation. */
export const KEY_REFUSED_ACTIONS = {
  wrong_secret: 'api_key.wrong_secret',
  revoked: 'api_key.revoked',
} as const;

/** action_type of the aggregated row of a window of unauthenticated failures (spec/audit.md §auth-failure-windows). */
export const AUTH_FAILURES_ACTION = 'auth.failures';

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
  /** Interval of the housekeeping pass (expired nonces, approvals, idempotency rows; maintenance.ts). Default 600000 ms; 0 disables the timer. */
  maintenanceIntervalMs?: number;
  /** Observe hooks (reputation, telemetry, OpenTelemetry spans) and their housekeeping; observe/observers.ts. */
  observe?: ObserveOptions;
  /** Skip migrations (the caller ran them). */
  skipMigrations?: boolean;
}

export type { OutboxHandler } from './core.ts';

/** A Queryable that runs each statement against committed data. */
class ReadView implements Queryable {
  constructor(private readonly store: Store) {}
  get<T>(sql: string, params?: readonly unknown[]) {
    return this.store.read((q) => q.get<T>(sql, params));
  }
  all<T>(sql: string, params?: readonly unknown[]) {
    return this.store.read((q) => q.all<T>(sql, params));
  }
  run(): Promise<never> {
    return Promise.reject(new Error('the read view cannot write'));
  }
}

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
  readonly #observers = new Set<(o: DispatchOutcome) => void>();
  readonly #writeObservers = new Set<(row: AuditRow) => void>();
  readonly #blocklist: Blocklist;
  readonly #sandboxCompanyId: number | undefined;
  #sandbox: Principal | undefined;
  readonly #sinceCheckpoint = new Map<number, number>();
  #checkpointTimer: NodeJS.Timeout | undefined;
  #maintenanceTimer: NodeJS.Timeout | undefined;
  #outboxRunning = false;
  #outboxAgain = false;
  #closed = false;
  /** Windows of repeated unauthenticated failures (spec/audit.md §auth-failure-windows). */
  readonly authFailures: AuthFailureLog;

  constructor(options: RuntimeOptions) {
    this.store = options.store;
    this.registry = new Registry({ compileOutputs: options.validateOutputs ?? false });
    this.secrets = options.secrets ?? Secrets.ephemeral();
    this.clock = options.clock ?? (() => new Date());
    this.logger =
      options.logger ?? pino({ level: process.env.SOLID_LOG_LEVEL ?? 'info' }, pino.destination(2));
    this.keys = new TenantKeys(this.store, this.secrets);
    this.tenants = new Tenants(this.store, this.logger);
    this.readView = new ReadView(this.store);
    this.#blocklist = new Blocklist([...DEFAULT_BLOCKLIST, ...(options.blocklist ?? [])]);
    this.#sandboxCompanyId = options.sandboxCompanyId;
    this.options = {
      validateOutputs: options.validateOutputs ?? false,
      readAuditFlushMs: options.readAuditFlushMs ?? 100,
      readAuditBatch: options.readAuditBatch ?? 256,
      checkpointEvery: options.checkpointEvery ?? 1000,
      checkpointIntervalMs: options.checkpointIntervalMs ?? 60_000,
      idempotencyTtlSeconds: options.idempotencyTtlSeconds ?? IDEMPOTENCY_TTL_SECONDS,
      nonceTtlSeconds: options.nonceTtlSeconds ?? NONCE_TTL_SECONDS,
      maxResultBytes: options.maxResultBytes ?? DEFAULT_MAX_WRITE_RESULT_BYTES,
    };
    this.authFailures = new AuthFailureLog({
      windowMs: options.authFailureWindowMs ?? 60_000,
      clock: this.clock,
      logger: this.logger,
      writeAggregate: (w) => this.#writeAggregatedFailure(w),
    });
    this.auditBuffer = new ReadAuditBuffer(this, this.options.readAuditFlushMs, this.options.readAuditBatch);
    this.observers = new Observers(this, options.observe);
    this.observers.attach();
    this.#checkpointTimer = setInterval(
      () =>
        void this.checkpointAll().catch((err: unknown) => this.logger.error({ err }, 'checkpoint failed')),
      this.options.checkpointIntervalMs,
    );
    this.#checkpointTimer.unref();
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
   * session, a failed CSRF or Origin check). The row goes to the caller's tenant when the
   * principal is known, else to the sandbox tenant; a refused key whose key id exists
   * (err.keyAttribution) also leaves an `api_key.wrong_secret` / `api_key.revoked` row in the tenant owning it. A store
   * failure answers store_unavailable.
   * Spec: spec/audit.md (every denial is a row), spec/transports.md §auth.
   */
  async recordRefusal(
    caller: Caller,
    verb: string,
    err: VerbError | StoreError,
    category = 'transport',
  ): Promise<Envelope> {
    const name = String(verb).slice(0, 200);
    if (err instanceof StoreError) {
      // The decision needed the database, which is down: not the caller's fault, and nothing to audit into.
      this.logger.error({ err, verb: name }, 'store error while refusing a request');
      return {
        ok: false,
        verb: name,
        error: {
          reason: 'store_unavailable',
          message: 'The database is unavailable; nothing was written.',
          hint: 'Retry shortly; if it persists, check the database (disk, permissions, connection).',
        },
      };
    }
    const env: Envelope = { ok: false, verb: name, error: err.toEnvelopeError() };
    const p = caller.principal ?? null;
    const key = p === null ? err.keyAttribution : undefined;
    const write = () => this.#writeRefusalRows(caller, name, err, category, p, key);
    // Unauthenticated failures are counted per window (spec/audit.md §auth-failure-windows).
    const auditId =
      p === null && reasonInfo(err.reason, this.registry.reasons).kind === 'auth'
        ? await this.authFailures.record(
            {
              reason: err.reason,
              address: caller.address ?? null,
              surface: caller.surface,
              category,
              keyAttribution: key,
            },
            write,
          )
        : await write();
    if (auditId !== undefined) env.audit_id = auditId;
    return env;
  }

  /** The rows of one refusal (see recordRefusal); resolves to the caller's audit_id. Never throws. */
  async #writeRefusalRows(
    caller: Caller,
    name: string,
    err: VerbError,
    category: string,
    p: Principal | null,
    key: VerbError['keyAttribution'],
  ): Promise<number | undefined> {
    try {
      // The row the caller's audit_id names: the caller's tenant, else the sandbox tenant — the same
      // place for every refused key, known or not, so nothing visible differs (no key-id oracle).
      const companyId =
        p?.company_id ??
        (await this.sandboxPrincipal().then(
          (s) => s.company_id,
          () => undefined,
        ));
      const now = this.clock();
      const rows = await this.store.write(async (tx) => {
        const out: AuditRow[] = [];
        if (companyId !== undefined) {
          out.push(
            await appendAudit(
              tx,
              auditEntry(
                {
                  company_id: companyId,
                  now,
                  action: name,
                  category,
                  status: 'denied',
                  principal: p,
                  agent_type: caller.surface,
                },
                { reason: err.reason },
              ),
            ),
          );
        }
        if (key !== undefined) {
          // The owner's copy (spec/audit.md §auth-failures): a fixed action and only a registered
          // verb name, so a caller without the secret writes no text of its choosing into the log.
          const entry = auditEntry(
            {
              company_id: key.company_id,
              now,
              action: key.revoked ? KEY_REFUSED_ACTIONS.revoked : KEY_REFUSED_ACTIONS.wrong_secret,
              category,
              status: 'denied',
              principal: null,
              agent_type: caller.surface,
            },
            { reason: err.reason, key_id: key.key_id },
          );
          entry.request_data = { key_revoked: key.revoked, verb: this.registry.get(name)?.name ?? null };
          out.push(await appendAudit(tx, entry));
        }
        return out;
      });
      for (const row of rows) this.afterWrite(row);
      return companyId !== undefined ? rows[0]!.audit_id : undefined;
    } catch (auditErr) {
      this.logger.error({ err: auditErr, verb: name }, 'could not write the audit row of a refusal');
      return undefined;
    }
  }

  /**
   * The aggregated row(s) of a closed auth-failure window: `auth.failures` in the sandbox tenant
   * (where the first row of the window went) and, when the presented key id exists, the owner's
   * `api_key.wrong_secret` / `api_key.revoked` copy, both with `request_data` `{ aggregated: true,
   * count, first_at, last_at, address, surface, first_audit_id }`. spec/audit.md §auth-failure-windows
   */
  async #writeAggregatedFailure(w: AggregatedFailure): Promise<void> {
    const companyId = await this.sandboxPrincipal().then(
      (s) => s.company_id,
      () => undefined,
    );
    const data = {
      aggregated: true,
      count: w.count,
      first_at: w.first_at,
      last_at: w.last_at,
      address: w.address,
      surface: w.surface,
      first_audit_id: w.first_audit_id ?? null,
    };
    const now = this.clock();
    const base = {
      now,
      category: w.category,
      status: 'denied' as const,
      principal: null,
      agent_type: w.surface,
    };
    const rows = await this.store.write(async (tx) => {
      const out: AuditRow[] = [];
      if (companyId !== undefined) {
        const e = auditEntry(
          { ...base, company_id: companyId, action: AUTH_FAILURES_ACTION },
          { reason: w.reason },
        );
        e.request_data = data;
        out.push(await appendAudit(tx, e));
      }
      const k = w.keyAttribution;
      if (k !== undefined) {
        const e = auditEntry(
          {
            ...base,
            company_id: k.company_id,
            action: k.revoked ? KEY_REFUSED_ACTIONS.revoked : KEY_REFUSED_ACTIONS.wrong_secret,
          },
          { reason: w.reason, key_id: k.key_id },
        );
        e.request_data = { ...data, key_revoked: k.revoked, verb: null, first_audit_id: null };
        out.push(await appendAudit(tx, e));
      }
      return out;
    });
    for (const row of rows) this.afterWrite(row);
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
    this.#sandbox = {
      company_id: t.company_id,
      user_id: 0,
      role: 'read_only',
      tier: t.tier,
      agent_type: 'sandbox',
      sandbox: true,
    };
    return this.#sandbox;
  }

  /** Is this name blocked for this tenant (global list, runtime option, tenant settings)? Compared by block key (consent/blocklist.ts). */
  async isBlocked(name: string, companyId: number): Promise<boolean> {
    if (this.#blocklist.has(name)) return true;
    const t = await this.tenants.get(companyId);
    return listBlocks(t?.settings.blocklist, name);
  }

  /**
   * The tenant's `phrase_channel` setting (`any` | `human`), cached like every tenant setting
   * (up to 5 s across processes). spec/consent.md §phrase-channel
   */
  async phraseChannel(companyId: number): Promise<PhraseChannelSetting> {
    return phraseChannelOf((await this.tenants.get(companyId))?.settings);
  }

  /** Count one write against the tenant's daily cap of `cls`, inside `tx`. Throws daily_cap_exceeded. */
  async countDailyCap(tx: StoreTx, companyId: number, cls: VerbClass, now: Date): Promise<void> {
    const t = await this.tenants.get(companyId);
    await countDailyCap(tx, t?.settings.caps, companyId, cls, now);
  }

  /** Run the preview verb declared by a write verb, for pending answers. Undefined when none. */
  async previewFor(
    verb: CompiledVerb,
    principal: Principal,
    args: Record<string, unknown>,
    caller: Caller,
  ): Promise<Record<string, unknown> | undefined> {
    const name = verb.definition.preview;
    if (name === undefined) return undefined;
    const pv = this.registry.get(name);
    if (pv === undefined || pv.isWrite) return undefined;
    if (!pv.validate(args)) return undefined;
    return (await this.store.read((q) =>
      pv.definition.handler(
        {
          principal,
          db: q,
          now: this.clock(),
          signal: caller.signal ?? new AbortController().signal,
          ...runtimeContextMembers(this, q),
          verb: pv,
          emit() {},
          outbox() {},
          setRollback() {},
          setEntity() {},
          progress() {},
        },
        args,
      ),
    )) as Record<string, unknown>;
  }

  /** When validateOutputs is on, refuse an output that does not match the verb's output schema. */
  checkOutput(verb: CompiledVerb, result: unknown): void {
    if (!this.options.validateOutputs) return;
    if (!verb.validateOutput(result)) {
      throw new Error(
        `output of ${verb.name} does not match its output schema: ${JSON.stringify(verb.outputErrors()?.slice(0, 3))}`,
      );
    }
  }

  /** Subscribe to every dispatch outcome (reputation, telemetry). Returns an unsubscribe. */
  onDispatch(fn: (o: DispatchOutcome) => void): () => void {
    this.#observers.add(fn);
    return () => this.#observers.delete(fn);
  }

  /** Subscribe to every committed audit row. */
  onAuditRow(fn: (row: AuditRow) => void): () => void {
    this.#writeObservers.add(fn);
    return () => this.#writeObservers.delete(fn);
  }

  observe(o: DispatchOutcome): void {
    for (const fn of this.#observers) {
      try {
        fn(o);
      } catch (err) {
        this.logger.error({ err }, 'dispatch observer failed');
      }
    }
  }

  /** Called after each committed audit row: observers and checkpoint cadence. */
  afterWrite(row: AuditRow): void {
    for (const fn of this.#writeObservers) {
      try {
        fn(row);
      } catch (err) {
        this.logger.error({ err }, 'audit observer failed');
      }
    }
    const seen = this.#sinceCheckpoint.get(row.company_id);
    const n = (seen ?? 0) + 1;
    this.#sinceCheckpoint.set(row.company_id, n);
    // A tenant's first row in this process is signed at once, so an honest chain is never without
    // a checkpoint for long: `audit verify` reports a chain with none (no_checkpoint). spec/audit.md §verify
    if (seen === undefined || n >= this.options.checkpointEvery) {
      this.#sinceCheckpoint.set(row.company_id, 0);
      void this.checkpoint(row.company_id).catch((err: unknown) => {
        // Tried again at the tenant's next row (the store may be back by then).
        this.#sinceCheckpoint.delete(row.company_id);
        this.logger.error({ err }, 'checkpoint failed');
      });
    }
  }

  /**
   * Write a signed checkpoint of a tenant's chain head (ledger/keys/checkpoints.ts). No-op when the
   * head did not move.
   */
  checkpoint(companyId: number): Promise<{ seq: number; head_hash: string } | undefined> {
    return writeCheckpoint(this.store, this.keys, this.clock, companyId);
  }

  /** Checkpoint every tenant whose head moved. */
  async checkpointAll(): Promise<void> {
    for (const company_id of await checkpointedTenants(this.store)) {
      try {
        await this.checkpoint(company_id);
      } catch (err) {
        // One tenant without a usable signing key must not stop the others' checkpoints.
        this.logger.error({ err, company_id }, 'checkpoint failed for a tenant');
      }
    }
  }

  /** Deliver pending outbox rows through the registered handlers (after commit; retried with backoff). */
  kickOutbox(): void {
    if (this.#outboxRunning) {
      this.#outboxAgain = true;
      return;
    }
    this.#outboxRunning = true;
    void this.deliverOutbox()
      .catch((err: unknown) => this.logger.error({ err }, 'outbox delivery failed'))
      .finally(() => {
        this.#outboxRunning = false;
        if (this.#outboxAgain) {
          this.#outboxAgain = false;
          this.kickOutbox();
        }
      });
  }

  readonly #outboxPasses = new Set<Promise<number>>();

  /**
   * One delivery pass (ledger/write/outbox.ts); returns the rows it delivered. It first waits for passes
   * running in this process (the after-commit kick), whose leased rows a new pass would skip.
   */
  async deliverOutbox(limit = 100): Promise<number> {
    while (this.#outboxPasses.size > 0) await Promise.allSettled([...this.#outboxPasses]);
    const pass = deliverOutbox(this.store, this.clock, this.outboxHandlers, this, limit);
    this.#outboxPasses.add(pass);
    try {
      return await pass;
    } finally {
      this.#outboxPasses.delete(pass);
    }
  }

  /** Create a tenant with its chain head and an active signing key. */
  async createTenant(t: {
    company_id?: number;
    name: string;
    tier: Tier;
    settings?: TenantSettings;
  }): Promise<{ company_id: number; name: string; tier: Tier }> {
    const now = this.clock();
    const out = await this.store.write(async (tx) => {
      const company_id =
        t.company_id ??
        Number(
          (await tx.get<{ next: number }>('SELECT COALESCE(MAX(company_id), 0) + 1 AS next FROM tenants'))!
            .next,
        );
      const tenant = await insertTenant(
        tx,
        { company_id, name: t.name, tier: t.tier, settings: t.settings },
        now,
      );
      await tx.lockTenantHead(company_id);
      await this.keys.create(tx, company_id, 'active', now);
      return tenant;
    });
    this.tenants.invalidate();
    return { company_id: out.company_id, name: out.name, tier: out.tier };
  }

  /** Create an API key for a user of a tenant; the plaintext key is returned once. */
  async createApiKey(k: {
    company_id: number;
    user_id: number;
    role: Role;
    agent_type?: string;
    name?: string;
  }): Promise<string> {
    const { apiKey } = await this.store.write((tx) => insertApiKey(tx, k, this.clock()));
    return apiKey;
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
    if (this.#checkpointTimer !== undefined) clearInterval(this.#checkpointTimer);
    if (this.#maintenanceTimer !== undefined) clearInterval(this.#maintenanceTimer);
    await this.auditBuffer.flush();
    await Promise.all([this.authFailures.flushAll(), this.tenants.flushKeyUse()]);
    await this.observers.close();
    // Sign the heads that moved, so a short-lived process (a CLI call) leaves its rows anchored.
    await this.checkpointAll().catch((err: unknown) =>
      this.logger.error({ err }, 'closing checkpoint failed'),
    );
    await this.store.close();
  }
}

/** Create a runtime on a store: runs the runtime migrations unless told not to. */
export async function createRuntime(options: RuntimeOptions): Promise<Runtime> {
  if (!options.skipMigrations) await options.store.migrate('runtime', runtimeMigrations);
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
  return rt;
}

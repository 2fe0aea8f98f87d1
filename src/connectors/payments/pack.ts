/**
 * The reference connector pack: charges and refunds through a payments provider's HTTP API in
 * the style of Stripe (provider-client.ts), with the tenant's key from the credential vault
 * (src/runtime/vault). Category `integrations`. Spec: spec/vault.md §connectors; guide:
 * docs/authoring.md §connectors.
 *
 * Verbs (three tools):
 * - `integrations.charge_preview` (READ, preview): what the charge would do — the customer's
 *   charges before and after, whether the tenant's credential is set — without calling anyone.
 * - `integrations.charge` (WRITE_FINANCIAL, typed phrase, money in): records the charge as
 *   `pending` and queues the provider call in the outbox, in the write's transaction; the receipt
 *   carries `charge_ref` and the `provider_idempotency_key` (derived from the verb's
 *   idempotency_key) that names exactly one provider charge. `audit.revert` refunds it: the
 *   inverse is queued through the outbox and sent as `POST /v1/refunds`.
 * - `integrations.charge_get` (READ, aggregate): a charge with the provider's charge id once the
 *   provider answered, its refund, and its delivery (attempts, last error).
 *
 * Outbox handlers: `integrations.charge` and `integrations.refund` (at least once; the provider's
 * idempotency key makes a retry find the first call's result: no double charge, no double refund).
 * Events: `integrations.charge.succeeded|failed`, `integrations.charge.refunded` (actor
 * `system:connector`), linked to the write's audit_id.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Pack } from '../../runtime/pack.ts';
import type { OutboxHandler, PackRuntime } from '../../runtime/core.ts';
import { defineVerb, type VerbContext } from '../../runtime/verb.ts';
import { VerbError } from '../../runtime/errors.ts';
import { formatCents } from '../../runtime/consent/typed-phrase.ts';
import { listVaultSecrets, readVaultSecret } from '../../runtime/vault/vault.ts';
import { appendEvents, eventsChannel } from '../../runtime/ledger/write/events.ts';
import { portableMigration } from '../../store/migrations/render.ts';
import type { Queryable } from '../../store/store.ts';
import { postToProvider, PROVIDER_TIMEOUT_MS, ProviderUnavailable } from './provider-client.ts';

/** Where the pack finds its provider and its credential. */
export interface PaymentsConnectorOptions {
  /** The provider's base URL (e.g. `https://api.stripe.example/`), or a function read at each call. */
  baseUrl: string | (() => string | Promise<string>);
  /** The vault name of the tenant's provider key. Default `payments.api_key`. */
  secretName?: string;
  /** Timeout of one provider call (ms). Default 5000; the outbox's attempt deadline also applies. */
  timeoutMs?: number;
  /** A fetch to use (tests). Default the global fetch. */
  fetchImpl?: typeof fetch;
}

const CHARGES_V1 = `
CREATE TABLE integration_charges (
  company_id {bigint} NOT NULL,
  charge_ref TEXT NOT NULL,
  customer TEXT NOT NULL,
  amount_cents {bigint} NOT NULL,
  currency TEXT NOT NULL,
  description TEXT,
  provider_key TEXT NOT NULL,
  status TEXT NOT NULL,
  provider_charge_id TEXT,
  failure_code TEXT,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  refund_state TEXT,
  refund_key TEXT,
  provider_refund_id TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (company_id, charge_ref)
);
CREATE INDEX integration_charges_customer ON integration_charges(company_id, customer);
`;

const chargeInput = {
  type: 'object',
  properties: {
    customer: {
      type: 'string',
      pattern: '^cus_[A-Za-z0-9_]{1,60}$',
      description: "The provider's customer id (cus_…).",
    },
    amount_cents: { type: 'integer', minimum: 50, maximum: 99_999_999, description: 'Amount in cents.' },
    currency: { type: 'string', pattern: '^[a-z]{3}$', description: 'ISO 4217 code, lower case (usd).' },
    description: { type: 'string', maxLength: 200 },
  },
  required: ['customer', 'amount_cents', 'currency'],
  additionalProperties: false,
} as const;

interface ChargeArgs {
  customer: string;
  amount_cents: number;
  currency: string;
  description?: string;
}

interface ChargeRow {
  charge_ref: string;
  customer: string;
  amount_cents: number | string;
  currency: string;
  description: string | null;
  provider_key: string;
  status: 'pending' | 'succeeded' | 'failed';
  provider_charge_id: string | null;
  failure_code: string | null;
  attempts: number | string;
  last_error: string | null;
  refund_state: 'pending' | 'refunded' | 'not_needed' | null;
  refund_key: string | null;
  provider_refund_id: string | null;
  created_at: string;
  updated_at: string;
}

const COLUMNS =
  'charge_ref, customer, amount_cents, currency, description, provider_key, status, provider_charge_id, failure_code, attempts, last_error, refund_state, refund_key, provider_refund_id, created_at, updated_at';

function chargeRow(q: Queryable, companyId: number, ref: string): Promise<ChargeRow | undefined> {
  return q.get<ChargeRow>(
    `SELECT ${COLUMNS} FROM integration_charges WHERE company_id = ? AND charge_ref = ?`,
    [companyId, ref],
  );
}

/** The provider's idempotency key of a call: the same inputs give the same key on every attempt. */
export function providerIdempotencyKey(companyId: number, what: string, key: string): string {
  return `sv_${createHash('sha256').update(`${companyId}\n${what}\n${key}`).digest('hex').slice(0, 40)}`;
}

function phraseOf(a: ChargeArgs): string {
  return `CHARGE ${formatCents(a.amount_cents)} ${a.currency.toUpperCase()} to ${a.customer}`;
}

/** What an owner and an agent may see of a charge (never a credential). */
function viewOf(r: ChargeRow): Record<string, unknown> {
  return {
    charge_ref: r.charge_ref,
    customer: r.customer,
    amount_cents: Number(r.amount_cents),
    currency: r.currency,
    description: r.description,
    status: r.status,
    provider_charge_id: r.provider_charge_id,
    provider_idempotency_key: r.provider_key,
    failure_code: r.failure_code,
    delivery: { attempts: Number(r.attempts), last_error: r.last_error },
    refund:
      r.refund_state === null ? null : { state: r.refund_state, provider_refund_id: r.provider_refund_id },
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

/** Record a connector event linked to the write's audit row, in `tx`. */
async function connectorEvent(
  rt: PackRuntime,
  tx: Parameters<Parameters<PackRuntime['store']['write']>[0]>[0],
  companyId: number,
  auditId: number | null,
  type: string,
  ref: string,
  payload: Record<string, unknown>,
  now: Date,
): Promise<void> {
  await appendEvents(tx, companyId, [{ type, entity_type: 'integration_charge', entity_id: ref, payload }], {
    auditId,
    actor: 'system:connector',
    occurredAt: now.toISOString(),
  });
  tx.afterCommit(() => rt.store.notify(eventsChannel(companyId)));
}

/** The reference payments connector pack (see the header). */
export function paymentsConnectorPack(options: PaymentsConnectorOptions): Pack {
  const secretName = options.secretName ?? 'payments.api_key';
  const baseUrl = async (): Promise<string> =>
    typeof options.baseUrl === 'function' ? options.baseUrl() : options.baseUrl;
  const timeoutMs = options.timeoutMs ?? PROVIDER_TIMEOUT_MS;

  /** Note a failed attempt on the charge (what charge_get shows), then let the outbox retry. */
  async function noteFailure(rt: PackRuntime, companyId: number, ref: string, err: unknown): Promise<never> {
    const message = err instanceof Error ? err.message : String(err);
    await rt.store.write((tx) =>
      tx.run(
        'UPDATE integration_charges SET attempts = attempts + 1, last_error = ?, updated_at = ? WHERE company_id = ? AND charge_ref = ?',
        [message.slice(0, 500), rt.clock().toISOString(), companyId, ref],
      ),
    );
    throw err;
  }

  async function credential(rt: PackRuntime, companyId: number): Promise<string> {
    try {
      return await readVaultSecret(rt, companyId, secretName);
    } catch (err) {
      if (err instanceof VerbError && err.reason === 'not_found')
        throw new ProviderUnavailable(
          `the tenant's vault holds no live ${secretName}: the owner sets it with \`solid vault set ${secretName}\``,
        );
      throw err;
    }
  }

  const deliverCharge: OutboxHandler = async (payload, meta) => {
    const rt = meta.runtime;
    const ref = String(payload.charge_ref);
    const row = await rt.store.read((q) => chargeRow(q, meta.company_id, ref));
    if (row === undefined || row.provider_charge_id !== null || row.status === 'failed') return;
    let answer;
    try {
      answer = await postToProvider(
        await baseUrl(),
        '/v1/charges',
        await credential(rt, meta.company_id),
        row.provider_key,
        {
          amount: Number(row.amount_cents),
          currency: row.currency,
          customer: row.customer,
          ...(row.description !== null ? { description: row.description } : {}),
          metadata: { charge_ref: ref },
        },
        { signal: meta.signal, timeoutMs, ...(options.fetchImpl ? { fetchImpl: options.fetchImpl } : {}) },
      );
    } catch (err) {
      return noteFailure(rt, meta.company_id, ref, err);
    }
    const now = rt.clock();
    await rt.store.write(async (tx) => {
      if (answer.ok) {
        const id = String(answer.body.id);
        const done = await tx.run(
          "UPDATE integration_charges SET provider_charge_id = ?, status = 'succeeded', attempts = attempts + 1, last_error = NULL, updated_at = ? WHERE company_id = ? AND charge_ref = ? AND provider_charge_id IS NULL",
          [id, now.toISOString(), meta.company_id, ref],
        );
        if (done.changes > 0)
          await connectorEvent(
            rt,
            tx,
            meta.company_id,
            meta.audit_id,
            'integrations.charge.succeeded',
            ref,
            {
              provider_charge_id: id,
              amount_cents: Number(row.amount_cents),
              currency: row.currency,
              replayed: answer.replayed,
            },
            now,
          );
      } else {
        // Declined (a permanent answer): no money moved; a later refund has nothing to send.
        const done = await tx.run(
          "UPDATE integration_charges SET status = 'failed', failure_code = ?, attempts = attempts + 1, last_error = ?, updated_at = ? WHERE company_id = ? AND charge_ref = ? AND status = 'pending'",
          [answer.code, answer.message, now.toISOString(), meta.company_id, ref],
        );
        if (done.changes > 0)
          await connectorEvent(
            rt,
            tx,
            meta.company_id,
            meta.audit_id,
            'integrations.charge.failed',
            ref,
            {
              failure_code: answer.code,
            },
            now,
          );
      }
    });
  };

  const deliverRefund: OutboxHandler = async (payload, meta) => {
    const rt = meta.runtime;
    const ref = String(payload.charge_ref);
    const row = await rt.store.read((q) => chargeRow(q, meta.company_id, ref));
    if (row === undefined || row.refund_state !== 'pending' || row.refund_key === null) return;
    const now = rt.clock();
    if (row.status === 'failed') {
      await rt.store.write((tx) =>
        tx.run(
          "UPDATE integration_charges SET refund_state = 'not_needed', updated_at = ? WHERE company_id = ? AND charge_ref = ? AND refund_state = 'pending'",
          [now.toISOString(), meta.company_id, ref],
        ),
      );
      return;
    }
    if (row.provider_charge_id === null)
      // The charge is still on its way (its own message retries): the refund waits for its id.
      throw new ProviderUnavailable(`charge ${ref} has no provider id yet: the refund waits for the charge`);
    const answer = await postToProvider(
      await baseUrl(),
      '/v1/refunds',
      await credential(rt, meta.company_id),
      row.refund_key,
      { charge: row.provider_charge_id, amount: Number(row.amount_cents), metadata: { charge_ref: ref } },
      { signal: meta.signal, timeoutMs, ...(options.fetchImpl ? { fetchImpl: options.fetchImpl } : {}) },
    );
    // "Already refunded" means the refund we asked for is there (a lost answer, then a retry).
    if (!answer.ok && answer.code !== 'charge_already_refunded')
      throw new ProviderUnavailable(`the provider refused the refund of ${ref}: ${answer.code}`);
    const refundId = answer.ok ? String(answer.body.id) : null;
    await rt.store.write(async (tx) => {
      const done = await tx.run(
        "UPDATE integration_charges SET refund_state = 'refunded', provider_refund_id = ?, updated_at = ? WHERE company_id = ? AND charge_ref = ? AND refund_state = 'pending'",
        [refundId, now.toISOString(), meta.company_id, ref],
      );
      if (done.changes > 0)
        await connectorEvent(
          rt,
          tx,
          meta.company_id,
          meta.audit_id,
          'integrations.charge.refunded',
          ref,
          {
            provider_charge_id: row.provider_charge_id,
            provider_refund_id: refundId,
            amount_cents: Number(row.amount_cents),
          },
          now,
        );
    });
  };

  async function customerTotal(ctx: VerbContext, customer: string, currency: string) {
    const r = await ctx.db.get<{ n: number | string; cents: number | string | null }>(
      "SELECT COUNT(*) AS n, SUM(amount_cents) AS cents FROM integration_charges WHERE company_id = ? AND customer = ? AND currency = ? AND status <> 'failed' AND (refund_state IS NULL OR refund_state = 'not_needed')",
      [ctx.principal.company_id, customer, currency],
    );
    return { charges: Number(r?.n ?? 0), charged_cents: Number(r?.cents ?? 0) };
  }

  const preview = defineVerb<ChargeArgs>({
    name: 'integrations.charge_preview',
    title: 'Preview a provider charge',
    description:
      "Show what integrations.charge with the same arguments would do — the customer's charges through the payments provider before and after, and whether the tenant's provider credential is set — without calling the provider.",
    shape: 'preview',
    category: 'integrations',
    input: chargeInput,
    idempotent: true,
    async handler(ctx, args) {
      const current = await customerTotal(ctx, args.customer, args.currency);
      const vault = (await listVaultSecrets(ctx.db, ctx.principal.company_id)).find(
        (e) => e.name === secretName,
      );
      const live = vault !== undefined && vault.revoked_at === null;
      return {
        current,
        projected: { charges: current.charges + 1, charged_cents: current.charged_cents + args.amount_cents },
        delta: { charges: 1, charged_cents: args.amount_cents },
        reversible: true,
        notes: [
          `The provider is called after the commit, through the outbox, with one idempotency key (retries never charge twice).`,
          live
            ? `Provider credential ${secretName}: set (version ${vault.version}).`
            : `Provider credential ${secretName}: not set — the charge would wait, then dead-letter, until the owner runs \`solid vault set ${secretName}\`.`,
          'audit.revert refunds it through the provider.',
        ],
      };
    },
  });

  const charge = defineVerb<ChargeArgs>({
    name: 'integrations.charge',
    title: 'Charge a customer through the payments provider',
    description:
      "Charge a customer (the provider's cus_… id) through the tenant's payments provider. Money moves: a human types the phrase. The call leaves after the commit through the outbox, retried with one idempotency key; the receipt names the charge (charge_ref) and integrations.charge_get shows the provider's charge id once it answered. audit.revert refunds it through the provider.",
    shape: 'receipt',
    category: 'integrations',
    consent: 'WRITE_FINANCIAL',
    money_flow: 'in',
    open_world: true,
    preview: 'integrations.charge_preview',
    input: chargeInput,
    phrase: phraseOf,
    summary: (a) =>
      `Charge ${a.customer} ${formatCents(a.amount_cents)} ${a.currency.toUpperCase()} through the provider`,
    async handler(ctx, args) {
      const c = ctx.principal.company_id;
      const ref = `chg_${randomBytes(12).toString('hex')}`;
      // The verb's idempotency key names the provider call: a replay of this write is answered
      // from its stored receipt, and a retry of the call finds the provider's first answer.
      const providerKey = providerIdempotencyKey(
        c,
        'integrations.charge',
        ctx.idempotencyKey ?? `ref:${ref}`,
      );
      const at = ctx.now.toISOString();
      await ctx.db.run(
        `INSERT INTO integration_charges (company_id, charge_ref, customer, amount_cents, currency, description, provider_key, status, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
        [
          c,
          ref,
          args.customer,
          args.amount_cents,
          args.currency,
          args.description ?? null,
          providerKey,
          at,
          at,
        ],
      );
      ctx.setEntity('integration_charge', ref);
      ctx.outbox('integrations.charge', { charge_ref: ref });
      ctx.setRollback(`integrations:refund:${ref}`, { charge_ref: ref });
      return {
        status: 'pending',
        charge_ref: ref,
        provider_idempotency_key: providerKey,
        customer: args.customer,
        amount_cents: args.amount_cents,
        currency: args.currency,
        amount: `${formatCents(args.amount_cents)} ${args.currency.toUpperCase()}`,
      };
    },
    revert: {
      async handler(ctx, original) {
        const c = ctx.principal.company_id;
        const ref = String(original.rollback.charge_ref);
        const row = await chargeRow(ctx.db, c, ref);
        if (row === undefined) throw new VerbError('not_found', `No charge ${ref}.`);
        const done = await ctx.db.run(
          "UPDATE integration_charges SET refund_state = 'pending', refund_key = ?, updated_at = ? WHERE company_id = ? AND charge_ref = ? AND refund_state IS NULL",
          [providerIdempotencyKey(c, 'integrations.refund', ref), ctx.now.toISOString(), c, ref],
        );
        if (done.changes === 0) throw new VerbError('not_found', `Charge ${ref} is already being refunded.`);
        ctx.setEntity('integration_charge', ref);
        ctx.outbox('integrations.refund', { charge_ref: ref });
        return {
          revert_action: `refund of ${formatCents(Number(row.amount_cents))} ${row.currency.toUpperCase()} (charge ${ref}) queued through the provider`,
        };
      },
    },
  });

  const get = defineVerb<{ charge_ref: string }>({
    name: 'integrations.charge_get',
    title: 'A provider charge',
    description:
      "One charge made through the payments provider: its status (pending, succeeded, failed), the provider's charge id once it answered, its refund, and its delivery (attempts, last error).",
    shape: 'aggregate',
    category: 'integrations',
    input: {
      type: 'object',
      properties: { charge_ref: { type: 'string', pattern: '^chg_[0-9a-f]{24}$' } },
      required: ['charge_ref'],
      additionalProperties: false,
    },
    idempotent: true,
    async handler(ctx, args) {
      const row = await chargeRow(ctx.db, ctx.principal.company_id, args.charge_ref);
      if (row === undefined)
        throw new VerbError('not_found', `No charge ${args.charge_ref}.`, {
          hint: 'The charge_ref is in the receipt of integrations.charge.',
        });
      return { entity_type: 'integration_charge', entity_id: row.charge_ref, data: viewOf(row) };
    },
  });

  return {
    name: 'integrations',
    description: "Charges and refunds through the tenant's payments provider (a reference connector).",
    migrations: [portableMigration(1, 'integration charges', CHARGES_V1)],
    verbs: [preview, charge, get],
    outboxHandlers: { 'integrations.charge': deliverCharge, 'integrations.refund': deliverRefund },
  };
}

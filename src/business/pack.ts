/**
 * The demo business pack: a home-services (plumbing / HVAC) company with customers, deals,
 * appointments, invoices, payments, parts, a knowledge base, an email outbox, a managed server
 * and its own subscription — as verbs on the runtime. `solid serve --demo` enables it and seeds it.
 *
 * - migrations: the business tables (schema.ts, scope "demo");
 * - verbs: one file per domain in verbs/ (docs/demo.md lists them by category);
 * - reasons: the data layer's DomainError codes with their HTTP status (DOMAIN_REASONS);
 * - outbox handler `email`: delivers a queued email after commit (marks it sent, emits email.sent);
 * - seed: tenants 1 (sandbox, keyless reads), 2 (the main business) and 3 (a second business),
 *   each created only when missing, their data, their historical events, and API keys for the
 *   main company's owner, admin, employee and read-only users.
 *
 * Spec: spec/manifest.md §packs, spec/transports.md §cli-serve.
 */
import type { Pack, SeedOptions } from '../runtime/pack.ts';
import type { OutboxHandler, PackRuntime as Runtime } from '../runtime/core.ts';
import { appendEvents, eventsChannel } from '../runtime/ledger/write/events.ts';
import type { Role, Tier } from '../spec/types.ts';
import { DOMAIN_REASONS, isDomainError } from './data/domain-error.ts';
import { getEmail, markEmailSent } from './data/email.ts';
import { num } from './data/row-values.ts';
import { BUSINESS_SCOPE, businessMigrations } from './schema.ts';
import { DEMO_FIXTURES, isDemoSeeded, seedDemo, type DemoFixtures, type SeedCompany } from './seed.ts';
import { demoVerbs } from './verbs/demo-verbs.ts';

/** The demo's tenants: the sandbox (keyless reads), the main business, a second business (isolation). */
export const DEMO_TENANTS = {
  sandbox: { company_id: 1, name: 'Sandbox Plumbing (demo sandbox)', tier: 'starter' },
  main: { company_id: 2, name: 'Summit Plumbing & HVAC', tier: 'professional' },
  second: { company_id: 3, name: 'Boise Valley Heating & Air', tier: 'starter' },
} as const satisfies Record<string, SeedCompany & { tier: Tier }>;

/** What the demo seed returns (printed once by `solid serve --demo`). */
export interface DemoSeedFacts extends Record<string, unknown> {
  seeded: boolean;
  company?: string;
  /** The main company's owner key (shown once). */
  owner_api_key?: string;
  /** One key per role of the main company: owner, admin, employee, read_only. */
  keys?: Record<Role, string>;
  /** The second business's owner key (for isolation demos). */
  second_business_owner_key?: string;
  sandbox?: string;
  fixtures?: DemoFixtures;
  /** What to do next when nothing was printed (e.g. how to make a key). */
  hint?: string;
}

/**
 * Seed the demo into `rt`: create the three tenants that are missing, fill their business tables
 * (main company first, so DEMO_FIXTURES hold on an empty database), store their historical
 * events through the ledger (per-tenant seq), and create API keys. Idempotent-safe: when the
 * main company already has demo data nothing is written and `{ seeded: false }` is returned.
 * Progress: `onProgress(done, total)` over rows and events written. Runs the pack's migrations
 * itself (safe when they already ran).
 */
export async function seedDemoBusiness(rt: Runtime, options: SeedOptions = {}): Promise<DemoSeedFacts> {
  const now = options.now ?? rt.clock();
  await rt.store.migrate(BUSINESS_SCOPE, businessMigrations);
  const { sandbox, main, second } = DEMO_TENANTS;
  if (await rt.store.read((q) => isDemoSeeded(q, main.company_id))) {
    // A first run interrupted after the data committed but before the keys were made leaves no
    // key to log in with: make them now (the data is not seeded again).
    const keyCount = await rt.store.read((q) =>
      q.get<{ n: number }>('SELECT COUNT(*) AS n FROM api_keys WHERE company_id = ?', [main.company_id]),
    );
    if (Number(keyCount?.n ?? 0) > 0) {
      return {
        seeded: false,
        company: `${main.name} (company ${main.company_id}) already has demo data; nothing was seeded`,
        hint: `keys are printed once, on the first run; make another with: solid api-keys create --tenant ${main.company_id} --user 1 --role owner`,
      } as DemoSeedFacts;
    }
    const fx = DEMO_FIXTURES;
    const users: Record<Role, number> = {
      owner: fx.owner_user_id,
      admin: fx.admin_user_id,
      employee: fx.employee_user_id,
      read_only: fx.read_only_user_id,
    };
    const keys = {} as Record<Role, string>;
    for (const role of ['owner', 'admin', 'employee', 'read_only'] as const) {
      keys[role] = await rt.createApiKey({
        company_id: main.company_id,
        user_id: users[role],
        role,
        agent_type: 'demo',
        name: `${role} (demo seed)`,
      });
    }
    return {
      seeded: false,
      company: `${main.name} (company ${main.company_id}): data was already seeded; API keys created now`,
      owner_api_key: keys.owner,
      keys,
    };
  }
  // Existing tenants (e.g. after `solid init`) keep their name and tier; the business data follows them.
  const tenants = new Map<number, SeedCompany>();
  for (const t of [sandbox, main, second]) {
    const row = await rt.store.read((q) =>
      q.get<{ name: string; tier: Tier }>('SELECT name, tier FROM tenants WHERE company_id = ?', [
        t.company_id,
      ]),
    );
    if (row === undefined) await rt.createTenant({ company_id: t.company_id, name: t.name, tier: t.tier });
    tenants.set(t.company_id, {
      company_id: t.company_id,
      name: row?.name ?? t.name,
      tier: row?.tier ?? t.tier,
    });
  }
  const companies: SeedCompany[] = [];
  for (const t of [main, sandbox, second]) {
    if (t === main || !(await rt.store.read((q) => isDemoSeeded(q, t.company_id))))
      companies.push(tenants.get(t.company_id)!);
  }
  const result = await rt.store.write(async (tx) => {
    const seeded = await seedDemo(tx, {
      companies,
      now,
      ...(options.onProgress !== undefined ? { onProgress: options.onProgress } : {}),
      emit: async (companyId, e) => {
        await appendEvents(
          tx,
          companyId,
          [
            {
              type: e.type,
              entity_type: e.entity_type,
              entity_id: e.entity_id,
              payload: e.payload,
              occurred_at: e.occurred_at,
              actor: e.actor,
            },
          ],
          {
            auditId: null,
            actor: null,
            occurredAt: e.occurred_at,
          },
        );
      },
    });
    for (const c of companies) tx.afterCommit(() => rt.store.notify(eventsChannel(c.company_id)));
    return seeded;
  });
  rt.tenants.invalidate();
  const f = result.fixtures;
  const keys = {} as Record<Role, string>;
  const users: Record<Role, number> = {
    owner: f.owner_user_id,
    admin: f.admin_user_id,
    employee: f.employee_user_id,
    read_only: f.read_only_user_id,
  };
  for (const role of ['owner', 'admin', 'employee', 'read_only'] as const) {
    keys[role] = await rt.createApiKey({
      company_id: main.company_id,
      user_id: users[role],
      role,
      agent_type: 'demo',
      name: `${role} (demo seed)`,
    });
  }
  const facts: DemoSeedFacts = {
    seeded: true,
    company: `${tenants.get(main.company_id)!.name} (company ${main.company_id}, ${tenants.get(main.company_id)!.tier} tier)`,
    owner_api_key: keys.owner,
    keys,
    sandbox: `company ${sandbox.company_id}: keyless reads (no API key) see its data`,
    fixtures: f,
  };
  const secondOwner = result.companies
    .find((c) => c.company_id === second.company_id)
    ?.employees.find((e) => e.role === 'owner');
  if (secondOwner !== undefined) {
    facts.second_business_owner_key = await rt.createApiKey({
      company_id: second.company_id,
      user_id: secondOwner.user_id,
      role: 'owner',
      agent_type: 'demo',
      name: 'owner (demo seed)',
    });
  }
  return facts;
}

/**
 * Outbox handler `email`: the demo's delivery of an email queued by a verb (payload
 * `{ email_id }`). After commit it marks the message sent and records `email.sent` (actor
 * system:mailer) in one store write. A message no longer queued (recalled by a revert) is left
 * as it is: delivery is a no-op then. Unknown ids are a no-op too (another tenant's id reads as
 * absent). Throws only on store errors (the runtime retries with backoff).
 */
export const deliverEmail: OutboxHandler = async (payload, meta) => {
  const emailId = num(payload.email_id);
  const rt = meta.runtime;
  const now = rt.clock();
  await rt.store.write(async (tx) => {
    const email = await getEmail(tx, meta.company_id, emailId);
    if (email === undefined || email.status !== 'queued') return;
    try {
      const sent = await markEmailSent(tx, meta.company_id, emailId, now);
      await appendEvents(
        tx,
        meta.company_id,
        [
          {
            type: 'email.sent',
            entity_type: 'email',
            entity_id: emailId,
            payload: {
              subject: sent.subject,
              related_entity_type: sent.related_entity_type,
              related_entity_id: sent.related_entity_id,
              outbox_id: meta.outbox_id,
            },
          },
        ],
        { auditId: meta.audit_id, actor: 'system:mailer', occurredAt: now.toISOString() },
      );
      tx.afterCommit(() => rt.store.notify(eventsChannel(meta.company_id)));
    } catch (err) {
      if (isDomainError(err) && err.code === 'email_not_queued') return;
      throw err;
    }
  });
};

/** The pack's domain reasons: every DomainError code with its HTTP status (404, 409, 422). */
export const DEMO_REASONS: Record<string, { status: number; summary: string }> = { ...DOMAIN_REASONS };

export const demoPack: Pack = {
  name: 'demo',
  description:
    'Summit Plumbing & HVAC: a home-services business (customers, deals, appointments, invoices, payments, parts, KB, email, a managed server, its subscription).',
  migrations: businessMigrations,
  verbs: demoVerbs,
  reasons: DEMO_REASONS,
  outboxHandlers: { email: deliverEmail },
  seed: (rt, options) => seedDemoBusiness(rt, options),
};

/**
 * Creating tenants and API keys: a tenant row with its chain head and an active signing key, in one
 * store transaction; an API key for a user of a tenant, its plaintext returned once (stored hashed).
 * Seeds, `solid init`, `solid tenant create` and `solid api-keys create` come here.
 */
import type { CredentialScope, Role, Tier } from '../spec/types.ts';
import type { Store, StoreTx } from '../store/store.ts';
import type { TenantKeys } from './ledger/keys/tenant-keys.ts';
import { insertApiKey, insertTenant, type TenantSettings, type Tenants } from './tenants.ts';

export interface NewTenant {
  /** Default: one more than the largest company_id. */
  company_id?: number;
  name: string;
  tier: Tier;
  settings?: TenantSettings;
}

export interface NewApiKey {
  company_id: number;
  user_id: number;
  role: Role;
  agent_type?: string;
  name?: string;
  /** Limits beyond the role (allow-list, read-only, expiry). spec/consent.md §api-keys */
  scope?: CredentialScope;
}

/** The next free company_id (inside the creating transaction). */
async function nextCompanyId(tx: StoreTx): Promise<number> {
  const row = await tx.get<{ next: number }>('SELECT COALESCE(MAX(company_id), 0) + 1 AS next FROM tenants');
  return Number(row!.next);
}

export class Provisioning {
  constructor(
    private readonly store: Store,
    private readonly keys: TenantKeys,
    private readonly tenants: Tenants,
    private readonly clock: () => Date,
  ) {}

  /** Create a tenant with its chain head and an active signing key. */
  async createTenant(t: NewTenant): Promise<{ company_id: number; name: string; tier: Tier }> {
    const now = this.clock();
    const out = await this.store.write(async (tx) => {
      const company_id = t.company_id ?? (await nextCompanyId(tx));
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
  async createApiKey(k: NewApiKey): Promise<string> {
    const { apiKey } = await this.store.write((tx) => insertApiKey(tx, k, this.clock()));
    return apiKey;
  }
}

/**
 * A tenant's API keys as verbs, so the dashboard (and any owner over HTTP or the CLI) manages
 * them through dispatch, audited like every other change (spec/consent.md §api-keys).
 *
 * - api_keys.list    READ (aggregate), admin: key_id, name, role, agent_type, created_at, last_used_at,
 *                    revoked_at — never the secret or its hash.
 * - api_keys.create  WRITE_REVERSIBLE (confirmation), owner: a new key, at most the caller's own
 *                    role. The plaintext key is returned once, in the envelope's `secret` member
 *                    (`secret_result`): never in the receipt, the stored receipt, the idempotency
 *                    replay, the audit row or a log. Reverting it revokes the key.
 * - api_keys.revoke  IRREVERSIBLE (typed phrase), owner, not counted against a cap: revoke a key of
 *                    this tenant (another tenant's key is not_found). The key this call
 *                    authenticated with is revoked only while another active owner key exists.
 *
 * Projected on http and cli only, like the tenant settings: an agent does not mint or revoke
 * credentials through its tool list. A revoked key stops working within the tenants cache TTL
 * (5 s) on other nodes, at once on this one.
 */
import type { Role } from '../spec/types.ts';
import { ROLES } from '../spec/types.ts';
import type { StoreTx } from '../store/store.ts';
import { VerbError } from '../runtime/errors.ts';
import { defineSystemVerb, ROLE_RANK, type SystemVerbContext } from '../runtime/verb.ts';
import { insertApiKey } from '../runtime/tenants.ts';

/** One key as api_keys.list shows it (ISO 8601 times; null when not yet / never). */
export interface ApiKeyView {
  key_id: string;
  name: string;
  role: Role;
  agent_type: string;
  user_id: number;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

const KEY_ID = {
  type: 'string',
  pattern: '^[0-9a-f]{12}$',
  description: 'The key id (sk_solid_<key_id>_…).',
};

function forgetKeysAtCommit(ctx: SystemVerbContext): void {
  const tx = ctx.db as Partial<StoreTx>;
  if (typeof tx.afterCommit === 'function') tx.afterCommit(() => ctx.runtime.tenants.invalidate());
}

export const apiKeysList = defineSystemVerb<Record<string, never>>({
  name: 'api_keys.list',
  title: 'List API keys',
  description:
    "List this tenant's API keys, oldest first: key_id, name, role, agent_type, user_id, created_at, last_used_at and revoked_at (null while active). Never the secret or its hash. Needs the admin role.",
  shape: 'aggregate',
  category: 'consent',
  role_floor: 'admin',
  surfaces: ['http', 'cli'],
  input: { type: 'object', properties: {}, additionalProperties: false },
  idempotent: true,
  async handler(ctx) {
    const rows = await ctx.db.all<Record<string, unknown>>(
      'SELECT key_id, name, role, agent_type, user_id, created_at, last_used_at, revoked_at FROM api_keys WHERE company_id = ? ORDER BY created_at, key_id',
      [ctx.principal.company_id],
    );
    const items: ApiKeyView[] = rows.map((r) => ({
      key_id: r.key_id as string,
      name: r.name as string,
      role: r.role as Role,
      agent_type: r.agent_type as string,
      user_id: Number(r.user_id),
      created_at: r.created_at as string,
      last_used_at: (r.last_used_at as string | null) ?? null,
      revoked_at: (r.revoked_at as string | null) ?? null,
    }));
    return {
      entity_type: 'tenant',
      entity_id: ctx.principal.company_id,
      data: { keys: items, active: items.filter((k) => k.revoked_at === null).length },
      fetched_at: ctx.now.toISOString(),
    };
  },
});

export interface ApiKeysCreateArgs {
  name: string;
  role: Role;
  agent_type?: string;
}

export const apiKeysCreate = defineSystemVerb<ApiKeysCreateArgs>({
  name: 'api_keys.create',
  title: 'Create an API key',
  description:
    'Create an API key for this tenant, for the calling user, with a role no higher than your own and an agent_type (default api). The key (sk_solid_…) is in the answer once, in `secret.api_key`: it is stored only as a hash and is not in the receipt, the audit log or a replay of the same idempotency key. Owner only; needs a confirmation; audit.revert revokes the key.',
  shape: 'receipt',
  category: 'consent',
  consent: 'WRITE_REVERSIBLE',
  role_floor: 'owner',
  surfaces: ['http', 'cli'],
  secret_result: ['api_key'],
  input: {
    type: 'object',
    properties: {
      name: {
        type: 'string',
        minLength: 1,
        maxLength: 100,
        description: 'What the key is for, e.g. "billing agent".',
      },
      role: { type: 'string', enum: [...ROLES], description: 'At most your own role.' },
      agent_type: {
        type: 'string',
        minLength: 1,
        maxLength: 40,
        pattern: '^[a-z][a-z0-9_.-]*$',
        description: 'The agent this key is for (default api); audit rows name it.',
      },
    },
    required: ['name', 'role'],
    additionalProperties: false,
  },
  summary: (a) =>
    `Create an API key "${a.name}" with the ${a.role} role (agent ${a.agent_type ?? 'api'}). It is shown once.`,
  async handler(ctx, args) {
    const p = ctx.principal;
    if (ROLE_RANK[args.role] > ROLE_RANK[p.role]) {
      throw new VerbError(
        'role_denied',
        `A ${p.role} cannot create a key with the higher ${args.role} role.`,
        {
          path: '/role',
          hint: `Choose a role up to ${p.role}.`,
        },
      );
    }
    const { apiKey, info } = await insertApiKey(
      ctx.db,
      {
        company_id: p.company_id,
        user_id: p.user_id,
        role: args.role,
        agent_type: args.agent_type ?? 'api',
        name: args.name,
      },
      ctx.now,
    );
    ctx.setEntity('api_key', info.key_id);
    ctx.setRollback(`api_key:create:${info.key_id}`, { key_id: info.key_id });
    return {
      status: 'completed',
      key_id: info.key_id,
      name: info.name,
      role: info.role,
      agent_type: info.agent_type,
      created_at: info.created_at,
      api_key: apiKey,
      api_key_note:
        'The key is shown once, in the first answer (secret.api_key); a replay of this call does not return it. If it was lost, revoke this key and create another.',
    };
  },
  revert: {
    async handler(ctx, original) {
      const keyId = (original.rollback as { key_id?: string }).key_id!;
      await ctx.runtime.tenants.revokeKey(ctx.db, ctx.principal.company_id, keyId, ctx.now);
      forgetKeysAtCommit(ctx);
      return { revert_action: `API key ${keyId} revoked` };
    },
  },
});

export const apiKeysRevoke = defineSystemVerb<{ key_id: string }>({
  name: 'api_keys.revoke',
  title: 'Revoke an API key',
  description:
    "Revoke one of this tenant's API keys: calls with it are refused (auth_invalid) from now on, at once on this node and within 5 s on others. Cannot be undone. The key this call authenticated with is revoked only while another active owner key exists. Owner only; needs the typed phrase.",
  shape: 'receipt',
  category: 'consent',
  consent: 'IRREVERSIBLE',
  cap_exempt: true,
  role_floor: 'owner',
  surfaces: ['http', 'cli'],
  input: {
    type: 'object',
    properties: { key_id: KEY_ID },
    required: ['key_id'],
    additionalProperties: false,
  },
  phrase: (a) => `revoke key ${a.key_id}`,
  summary: (a) => `Revoke the API key ${a.key_id}; calls with it stop working. This cannot be undone.`,
  async handler(ctx, args) {
    const p = ctx.principal;
    const row = await ctx.db.get<{ revoked_at: string | null }>(
      'SELECT revoked_at FROM api_keys WHERE key_id = ? AND company_id = ?',
      [args.key_id, p.company_id],
    );
    if (row === undefined) {
      throw new VerbError('not_found', `This tenant has no API key ${args.key_id}.`, {
        hint: 'See the keys with api_keys.list.',
      });
    }
    if (row.revoked_at !== null && row.revoked_at !== undefined) {
      ctx.setEntity('api_key', args.key_id);
      return { status: 'unchanged', key_id: args.key_id, revoked_at: row.revoked_at };
    }
    if (p.key_id === args.key_id) {
      const others = await ctx.db.get<{ n: number }>(
        "SELECT COUNT(*) AS n FROM api_keys WHERE company_id = ? AND role = 'owner' AND revoked_at IS NULL AND key_id <> ?",
        [p.company_id, args.key_id],
      );
      if (Number(others?.n ?? 0) === 0) {
        throw new VerbError(
          'invalid_input',
          'This is the key you are signed in with and the last active owner key: revoking it would lock every owner out. Nothing changed.',
          {
            path: '/key_id',
            hint: 'Create another owner key first (api_keys.create), then revoke this one with it.',
          },
        );
      }
    }
    await ctx.runtime.tenants.revokeKey(ctx.db, p.company_id, args.key_id, ctx.now);
    forgetKeysAtCommit(ctx);
    ctx.setEntity('api_key', args.key_id);
    return { status: 'completed', key_id: args.key_id, revoked_at: ctx.now.toISOString() };
  },
});

export const apiKeyVerbs = [apiKeysList, apiKeysCreate, apiKeysRevoke];

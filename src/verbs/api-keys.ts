/**
 * A tenant's API keys as verbs, so the dashboard (and any owner over HTTP or the CLI) manages
 * them through dispatch, audited like every other change (spec/consent.md §api-keys).
 *
 * - api_keys.list    READ (aggregate), admin: key_id, name, role, agent_type, created_at, last_used_at,
 *                    revoked_at — never the secret or its hash.
 * - api_keys.create  WRITE_REVERSIBLE (confirmation), owner: a new key, at most the caller's own
 *                    role, optionally limited (verbs / toolsets allow-list, read_only,
 *                    expires_in_seconds) and never wider than the calling key's own limits
 *                    (scope_denied; an unset limit is inherited). The plaintext key is returned once, in the envelope's `secret` member
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
import type { CredentialScope, Role } from '../spec/types.ts';
import { ROLES } from '../spec/types.ts';
import { parseJson, type StoreTx } from '../store/store.ts';
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
  /** The key's allow-list and read-only flag; null for its role's whole power. */
  scope: Omit<CredentialScope, 'expires_at'> | null;
  /** ISO 8601; null when it does not expire. */
  expires_at: string | null;
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
    "List this tenant's API keys, oldest first: key_id, name, role, agent_type, user_id, created_at, last_used_at, revoked_at (null while active), scope (verbs/toolsets allow-list, read_only; null when unlimited) and expires_at. Never the secret or its hash. Needs the admin role.",
  shape: 'aggregate',
  category: 'consent',
  role_floor: 'admin',
  surfaces: ['http', 'cli'],
  input: { type: 'object', properties: {}, additionalProperties: false },
  idempotent: true,
  async handler(ctx) {
    const rows = await ctx.db.all<Record<string, unknown>>(
      'SELECT key_id, name, role, agent_type, user_id, created_at, last_used_at, revoked_at, scope, expires_at FROM api_keys WHERE company_id = ? ORDER BY created_at, key_id',
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
      scope: parseJson<Omit<CredentialScope, 'expires_at'>>(r.scope) ?? null,
      expires_at: (r.expires_at as string | null) ?? null,
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
  verbs?: string[];
  toolsets?: string[];
  read_only?: boolean;
  expires_in_seconds?: number;
}

/** Longest lifetime a key may be created with: ten years, in seconds. */
export const MAX_KEY_LIFETIME_SECONDS = 10 * 365 * 24 * 3600;

/**
 * The scope of a new key from api_keys.create's arguments, checked against the registry (unknown
 * verb or toolset: invalid_input with its path) and against the creator's own scope: a limit the
 * caller left out is inherited, a wider one is scope_denied (allow-list ⊆, read-only stays,
 * expiry not later); an OAuth token (a grant's or an external IdP's) may not create keys at all
 * (scope_denied). Undefined
 * when neither limits anything. spec/consent.md §api-keys
 */
export function newKeyScope(ctx: SystemVerbContext, args: ApiKeysCreateArgs): CredentialScope | undefined {
  // An OAuth grant's token (key_id grant:…) or an external IdP's token (idp:…) never mints a key:
  // the key would outlive the token, the grant's expiry and its revocation (spec/oauth.md §grants).
  const keyId = ctx.principal.key_id ?? '';
  if (keyId.startsWith('grant:') || keyId.startsWith('idp:'))
    throw new VerbError(
      'scope_denied',
      "A connector's OAuth token cannot create API keys: a key would outlive the grant and its revocation.",
      { hint: 'An owner creates keys in the dashboard or with `solid api-keys create` on the server.' },
    );
  const reg = ctx.runtime.registry;
  const mine = ctx.principal.scope;
  const categories = new Set(reg.all().map((v) => v.category));
  args.verbs?.forEach((name, i) => {
    if (reg.get(name)?.name !== name)
      throw new VerbError('invalid_input', `No verb named ${JSON.stringify(name.slice(0, 80))}.`, {
        path: `/verbs/${i}`,
        hint: 'List the verb names with verbs.list.',
      });
  });
  args.toolsets?.forEach((name, i) => {
    if (!categories.has(name))
      throw new VerbError('invalid_input', `No toolset named ${JSON.stringify(name.slice(0, 80))}.`, {
        path: `/toolsets/${i}`,
        hint: `Toolsets are verb categories: ${[...categories].sort().join(', ')}.`,
      });
  });
  const out: CredentialScope = {};
  const listed = args.verbs !== undefined || args.toolsets !== undefined;
  if (listed) {
    if (args.verbs !== undefined) out.verbs = args.verbs;
    if (args.toolsets !== undefined) out.toolsets = args.toolsets;
  } else {
    if (mine?.verbs !== undefined) out.verbs = mine.verbs;
    if (mine?.toolsets !== undefined) out.toolsets = mine.toolsets;
  }
  if (listed && mine !== undefined && (mine.verbs !== undefined || mine.toolsets !== undefined)) {
    const wider = [
      ...(args.verbs ?? []).filter((n) => {
        const v = reg.get(n)!;
        return !(mine.verbs?.includes(n) ?? false) && !(mine.toolsets?.includes(v.category) ?? false);
      }),
      ...(args.toolsets ?? []).filter((t) => !(mine.toolsets?.includes(t) ?? false)),
    ];
    if (wider.length > 0)
      throw new VerbError(
        'scope_denied',
        `A key cannot create a key that reaches more than itself: ${wider.slice(0, 10).join(', ')} ${wider.length === 1 ? 'is' : 'are'} outside this key's allow-list.`,
        { hint: 'Name only verbs and toolsets this key reaches (api_keys.list shows its scope).' },
      );
  }
  if (args.read_only === false && mine?.read_only === true)
    throw new VerbError('scope_denied', 'A read-only key cannot create a key that writes.', {
      path: '/read_only',
      hint: 'Leave read_only out (the new key is read-only too).',
    });
  if (args.read_only === true || mine?.read_only === true) out.read_only = true;
  if (args.expires_in_seconds !== undefined) {
    const at = new Date(ctx.now.getTime() + args.expires_in_seconds * 1000).toISOString();
    if (mine?.expires_at !== undefined && at > mine.expires_at)
      throw new VerbError(
        'scope_denied',
        `A key cannot create a key that outlives it: this key expires at ${mine.expires_at}.`,
        {
          path: '/expires_in_seconds',
          hint: 'Choose an expiry before this key’s own (or leave it out to inherit it).',
        },
      );
    out.expires_at = at;
  } else if (mine?.expires_at !== undefined) out.expires_at = mine.expires_at;
  return Object.keys(out).length === 0 ? undefined : out;
}

/** The words a summary adds for a limited key ("; read-only; verbs a, b; expires in 30 days"). */
function limitsInWords(a: ApiKeysCreateArgs): string {
  const parts: string[] = [];
  if (a.read_only === true) parts.push('read-only');
  if (a.verbs !== undefined) parts.push(`only the verbs ${a.verbs.join(', ')}`);
  if (a.toolsets !== undefined) parts.push(`only the toolsets ${a.toolsets.join(', ')}`);
  if (a.expires_in_seconds !== undefined)
    parts.push(`expires after ${Math.max(1, Math.round(a.expires_in_seconds / 3600))} h`);
  return parts.length === 0 ? '' : ` Limited to: ${parts.join('; ')}.`;
}

export const apiKeysCreate = defineSystemVerb<ApiKeysCreateArgs>({
  name: 'api_keys.create',
  title: 'Create an API key',
  description:
    'Create an API key for this tenant, for the calling user, with a role no higher than your own and an agent_type (default api), optionally limited to some verbs or toolsets, read-only, or expiring; never wider than the calling key. The key (sk_solid_…) is in the answer once, in `secret.api_key`: it is stored only as a hash and is not in the receipt, the audit log or a replay of the same idempotency key. Owner only; needs a confirmation; audit.revert revokes the key.',
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
      verbs: {
        type: 'array',
        maxItems: 200,
        uniqueItems: true,
        items: { type: 'string', minLength: 1, maxLength: 200 },
        description: 'Allow-list: only these verbs (plus verbs.list and audit.revert of what it reaches).',
      },
      toolsets: {
        type: 'array',
        maxItems: 100,
        uniqueItems: true,
        items: { type: 'string', minLength: 1, maxLength: 100 },
        description: 'Allow-list: only the verbs of these toolsets (verb categories).',
      },
      read_only: { type: 'boolean', description: 'Refuse every write verb with this key.' },
      expires_in_seconds: {
        type: 'integer',
        minimum: 60,
        maximum: MAX_KEY_LIFETIME_SECONDS,
        description: 'The key is refused (key_expired) this many seconds after creation.',
      },
    },
    required: ['name', 'role'],
    additionalProperties: false,
  },
  summary: (a) =>
    `Create an API key "${a.name}" with the ${a.role} role (agent ${a.agent_type ?? 'api'}).${limitsInWords(a)} It is shown once.`,
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
    const scope = newKeyScope(ctx, args);
    const { apiKey, info } = await insertApiKey(
      ctx.db,
      {
        company_id: p.company_id,
        user_id: p.user_id,
        role: args.role,
        agent_type: args.agent_type ?? 'api',
        name: args.name,
        ...(scope !== undefined ? { scope } : {}),
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
      scope: info.scope,
      expires_at: info.expires_at,
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

/**
 * The people and agent-key verbs of provisioning (spec/platform.md §api): platform.users.invite and
 * platform.users.link give enrolment links for a tenant's first people, only during its bootstrap
 * (no one of it holds a passkey or TOTP yet, else `human_required`); platform.api_keys.create (a
 * role among PLATFORM_KEY_ROLES, never owner: `role_denied`), list and revoke manage its agents'
 * keys. Secrets (a link, a key) go in the envelope's `secret`, never in a log. Each is a handler of
 * provisioning-context.ts run by callPlatform (provisioning.ts).
 */
import type { Role } from '../spec/types.ts';
import { ROLES } from '../spec/types.ts';
import type { Queryable } from '../store/store.ts';
import { VerbError } from '../runtime/errors.ts';
import { insertApiKey, type Tenant } from '../runtime/tenants.ts';
import { enrolmentUrl } from '../identity/enrolment.ts';
import { inviteUserInTx, newEnrolmentLink } from '../identity/invite.ts';
import { anyCredential, cleanUserName, getUser, hasCredential } from '../identity/users.ts';
import {
  assertNotDeleted,
  bad,
  log,
  onlyKeys,
  positiveInt,
  tenantOf,
  tenantRow,
  text,
  type Handler,
} from './provisioning-context.ts';

/** The bootstrap: no one of the tenant holds a human credential yet (terminal-human.ts's rule). */
async function assertBootstrap(q: Queryable, t: Tenant, what: string): Promise<void> {
  if (await anyCredential(q, t.company_id))
    throw new VerbError(
      'human_required',
      `Someone of tenant ${t.company_id} has enrolled: from now on only its people invite people (${what}).`,
      {
        hint: "The tenant's owner invites from the dashboard (Settings → People) while signed in; a platform credential provisions only the first people.",
      },
    );
}

function roleOf(args: Record<string, unknown>, ceiling: readonly Role[]): Role {
  const v = args.role;
  if (typeof v !== 'string' || !(ROLES as readonly string[]).includes(v))
    throw bad('/role', `role must be one of ${ROLES.join(', ')}.`);
  if (!ceiling.includes(v as Role))
    throw new VerbError('role_denied', `A platform credential cannot provision the role ${v} here.`, {
      hint: `Allowed: ${ceiling.join(', ')}.`,
    });
  return v as Role;
}

/** The verb platform.users.invite. */
export const invite: Handler = async (ctx, args) => {
  onlyKeys(args, ['external_id', 'name', 'role']);
  const external_id = text(args, 'external_id', true);
  const name = cleanUserName(args.name);
  if (name === undefined) throw bad('/name', 'name must be 1-100 characters with no control characters.');
  const role = roleOf(args, ROLES);
  const inviter = { user_id: 0, role: 'admin' as Role, agent_type: `platform:${ctx.platform.key_id}` };
  // One transaction: the bootstrap check, the user with its link and audit row, the platform log
  // row — a person enrolling in between cannot slip past the check, and no user is left without
  // its log row.
  const { user, link } = await ctx.rt.store.write(async (tx) => {
    const t = await tenantOf(tx, ctx, external_id);
    assertNotDeleted(t);
    await assertBootstrap(tx, t, 'users.invite');
    const made = await inviteUserInTx(tx, { company_id: t.company_id, name, role }, inviter, ctx.now);
    await log(
      tx,
      ctx,
      'platform.users.invite',
      { external_id, name, role },
      { user_id: made.user.user_id, link_expires_at: made.link.expires_at },
    );
    return made;
  });
  return {
    data: { user, link_expires_at: link.expires_at },
    secret: { enrolment_url: enrolmentUrl(ctx.opts.publicUrl, link.token) },
  };
};

/** The verb platform.users.link. */
export const link: Handler = async (ctx, args) => {
  onlyKeys(args, ['external_id', 'user_id']);
  const external_id = text(args, 'external_id', true);
  const userId = positiveInt(args, 'user_id');
  if (userId === undefined) throw bad('/user_id', 'user_id is required.');
  const t = await ctx.rt.store.read(async (q) => {
    const t = await tenantOf(q, ctx, external_id);
    assertNotDeleted(t);
    await assertBootstrap(q, t, 'users.enrolment_link');
    if (await hasCredential(q, t.company_id, userId))
      throw new VerbError('human_required', `User ${userId} has enrolled: a link would be a way in as them.`);
    return t;
  });
  const inviter = { user_id: 0, role: 'admin' as Role, agent_type: `platform:${ctx.platform.key_id}` };
  const made = await newEnrolmentLink(ctx.rt.store, t.company_id, userId, inviter, ctx.now);
  if (made === undefined)
    throw new VerbError('not_found', `No enabled user ${userId} in tenant ${t.company_id}.`, {
      hint: 'Invite one with platform.users.invite.',
    });
  await ctx.rt.store.write((tx) =>
    log(
      tx,
      ctx,
      'platform.users.link',
      { external_id, user_id: userId },
      { link_expires_at: made.link.expires_at },
    ),
  );
  return {
    data: { user: made.user, link_expires_at: made.link.expires_at },
    secret: { enrolment_url: enrolmentUrl(ctx.opts.publicUrl, made.link.token) },
  };
};

/** The roles a platform may give an agent key: never owner (an owner's powers are a person's). */
export const PLATFORM_KEY_ROLES: readonly Role[] = ['read_only', 'employee', 'admin'];

/** The verb platform.api_keys.create. */
export const keyCreate: Handler = async (ctx, args) => {
  onlyKeys(args, ['external_id', 'role', 'name', 'agent_type', 'user_id', 'expires_at', 'read_only']);
  const external_id = text(args, 'external_id', true);
  const role = roleOf(args, PLATFORM_KEY_ROLES);
  const name = text(args, 'name', false) ?? '';
  const agent_type = text(args, 'agent_type', false) ?? 'api';
  if (agent_type.startsWith('human'))
    throw bad('/agent_type', 'An API key is an agent credential: its agent_type cannot start with "human".');
  const userId = positiveInt(args, 'user_id');
  let expires_at: string | undefined;
  if (args.expires_at !== undefined) {
    const ms = typeof args.expires_at === 'string' ? Date.parse(args.expires_at) : NaN;
    if (Number.isNaN(ms) || ms <= ctx.now.getTime())
      throw bad('/expires_at', 'expires_at must be a future ISO 8601 date-time.');
    expires_at = new Date(ms).toISOString();
  }
  if (args.read_only !== undefined && typeof args.read_only !== 'boolean')
    throw bad('/read_only', 'read_only is a boolean.');
  const read_only = args.read_only === true;
  const out = await ctx.rt.store.write(async (tx) => {
    const t = await tenantOf(tx, ctx, external_id);
    assertNotDeleted(t);
    let user_id = userId;
    if (user_id !== undefined) {
      const u = await getUser(tx, t.company_id, user_id);
      if (u === undefined || u.status === 'disabled')
        throw new VerbError('not_found', `No enabled user ${user_id} in tenant ${t.company_id}.`);
      if (ROLES.indexOf(u.role) < ROLES.indexOf(role))
        throw new VerbError(
          'role_denied',
          `User ${user_id} is ${u.role}: a key for them is at most that role.`,
        );
    } else {
      // An agent of no person: the next id above every user and key of the tenant (users.ts's rule).
      await tx.lockTenantHead(t.company_id);
      const row = await tx.get<{ m: number | string | null }>(
        `SELECT MAX(m) AS m FROM (SELECT MAX(user_id) AS m FROM users WHERE company_id = ?
                                  UNION ALL SELECT MAX(user_id) AS m FROM api_keys WHERE company_id = ?) AS x`,
        [t.company_id, t.company_id],
      );
      user_id = row?.m === null || row?.m === undefined ? 1 : Number(row.m) + 1;
    }
    const scope = {
      ...(read_only ? { read_only: true } : {}),
      ...(expires_at !== undefined ? { expires_at } : {}),
    };
    const { apiKey, info } = await insertApiKey(
      tx,
      {
        company_id: t.company_id,
        user_id,
        role,
        agent_type,
        name,
        ...(Object.keys(scope).length > 0 ? { scope } : {}),
      },
      ctx.now,
    );
    const facts = {
      key_id: info.key_id,
      user_id,
      role,
      agent_type,
      name,
      read_only,
      expires_at: info.expires_at,
    };
    await tenantRow(tx, ctx, t.company_id, 'api_keys.create', facts, { type: 'api_key', id: info.key_id });
    await log(
      tx,
      ctx,
      'platform.api_keys.create',
      { external_id, role, name, agent_type, user_id, read_only, expires_at },
      { key_id: info.key_id },
    );
    return { apiKey, info };
  });
  return { data: { key: out.info }, secret: { api_key: out.apiKey } };
};

/** The verb platform.api_keys.list. */
export const keyList: Handler = async (ctx, args) => {
  onlyKeys(args, ['external_id']);
  const external_id = text(args, 'external_id', true);
  const keys = await ctx.rt.store.read(async (q) => {
    const t = await tenantOf(q, ctx, external_id);
    return ctx.rt.tenants.listKeys(q, t.company_id);
  });
  await ctx.rt.store.write((tx) =>
    log(tx, ctx, 'platform.api_keys.list', { external_id }, { count: keys.length }),
  );
  return { data: { keys } };
};

/** The verb platform.api_keys.revoke. */
export const keyRevoke: Handler = async (ctx, args) => {
  onlyKeys(args, ['external_id', 'key_id']);
  const external_id = text(args, 'external_id', true);
  const key_id = text(args, 'key_id', true);
  const revoked = await ctx.rt.store.write(async (tx) => {
    const t = await tenantOf(tx, ctx, external_id);
    const done = await ctx.rt.tenants.revokeKey(tx, t.company_id, key_id, ctx.now);
    if (!done)
      throw new VerbError('not_found', `No live API key ${key_id} in tenant ${t.company_id}.`, {
        hint: 'List them with platform.api_keys.list.',
      });
    await tenantRow(tx, ctx, t.company_id, 'api_keys.revoke', { key_id }, { type: 'api_key', id: key_id });
    await log(tx, ctx, 'platform.api_keys.revoke', { external_id, key_id }, { revoked: true });
    return true;
  });
  ctx.rt.tenants.invalidate();
  return { data: { revoked } };
};

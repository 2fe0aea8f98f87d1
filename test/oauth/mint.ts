/**
 * A grant and an access token stored as the authorization server stores them (the consent screen
 * and the token endpoint, without the dance), for tests that need an OAuth token's principal
 * built the way the resource server builds it (src/oauth/resource.ts).
 */
import { randomBytes } from 'node:crypto';
import type { Runtime } from '../../src/runtime/runtime.ts';
import type { Principal, Role } from '../../src/spec/types.ts';
import { oauthMigrations } from '../../src/oauth/migrations.ts';
import { insertGrant } from '../../src/oauth/grants.ts';
import { OAuthResources } from '../../src/oauth/provider.ts';
import { OAuthBearer } from '../../src/oauth/resource.ts';
import { getUser, insertUser } from '../../src/identity/users.ts';

export const TEST_ISSUER = 'http://localhost:4400';

/** Store a live grant (30 days) for `user` and a 1-hour access token of it; returns the token. */
export async function mintTestToken(
  rt: Runtime,
  user: { company_id: number; user_id: number; role: Role },
  grant: { role?: Role; read_only?: boolean; client_name?: string } = {},
): Promise<string> {
  await rt.store.migrate('oauth', oauthMigrations);
  const now = rt.clock();
  const grantId = `g-${randomBytes(6).toString('hex')}`;
  const token = randomBytes(32).toString('base64url');
  await rt.store.write(async (tx) => {
    if ((await getUser(tx, user.company_id, user.user_id)) === undefined)
      await insertUser(tx, { ...user, name: 'Token Owner' }, now);
    await insertGrant(tx, {
      grant_id: grantId,
      company_id: user.company_id,
      user_id: user.user_id,
      user_name: 'Token Owner',
      client_id: 'test-client',
      client_name: grant.client_name ?? 'Test Connector',
      role: grant.role ?? user.role,
      read_only: grant.read_only ?? false,
      resource: `${TEST_ISSUER}/mcp`,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + 30 * 86_400_000).toISOString(),
    });
    const exp = Math.floor(now.getTime() / 1000) + 3600;
    const payload = {
      kind: 'AccessToken',
      jti: token,
      grantId,
      clientId: 'test-client',
      aud: `${TEST_ISSUER}/mcp`,
      exp,
    };
    await tx.run(
      `INSERT INTO oauth_models (model, id, payload, grant_id, expires_at) VALUES ('AccessToken', ?, ?, ?, ?)`,
      [token, JSON.stringify(payload), grantId, exp * 1000],
    );
  });
  return token;
}

/** The principal the resource server gives `token` (throws VerbError auth_invalid). */
export function tokenPrincipal(rt: Runtime, token: string): Promise<Principal> {
  return new OAuthBearer(rt, {
    resources: () => new OAuthResources(TEST_ISSUER, []),
    keylessSandbox: false,
  }).authenticate(token);
}

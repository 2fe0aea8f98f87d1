/**
 * `solid grants list|revoke` on a local database: the operator sees who let which connector act
 * and revokes a grant; its tokens are deleted in the same transaction and an `oauth.revoke` row
 * is written. spec/oauth.md §grants
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cliHarness } from '../support/cli.ts';
import { openLocal } from '../../src/transports/cli/local.ts';
import { oauthMigrations } from '../../src/oauth/migrations.ts';
import { insertGrant } from '../../src/oauth/grants.ts';

test('solid grants list shows a live grant; revoke ends it and deletes its tokens', async (t) => {
  const cli = cliHarness(t);
  assert.equal((await cli.run(['init', '--json'])).code, 0);
  const local = await openLocal({ db: cli.db });
  const companyId = 2;
  const now = local.rt.clock();
  try {
    await local.rt.store.migrate('oauth', oauthMigrations);
    await local.rt.store.write(async (tx) => {
      await insertGrant(tx, {
        grant_id: 'g-cli-1',
        company_id: companyId,
        user_id: 1,
        user_name: 'Owner',
        client_id: 'c1',
        client_name: 'Claude',
        role: 'employee',
        read_only: false,
        resource: 'http://localhost:4400/mcp',
        created_at: now.toISOString(),
        expires_at: new Date(now.getTime() + 86_400_000).toISOString(),
      });
      await tx.run(
        `INSERT INTO oauth_models (model, id, payload, grant_id, expires_at) VALUES ('AccessToken', 'tok1', '{}', 'g-cli-1', ?)`,
        [now.getTime() + 3_600_000],
      );
    });
  } finally {
    await local.close();
  }
  const tenant = ['--tenant', String(companyId)];
  const list = await cli.run(['grants', 'list', ...tenant, '--json']);
  assert.equal(list.code, 0, list.stderr);
  const grants = list.json<{ grant_id: string; client_name: string }[]>();
  assert.deepEqual(
    grants.map((g) => [g.grant_id, g.client_name]),
    [['g-cli-1', 'Claude']],
  );
  const human = await cli.run(['grants', 'list', ...tenant]);
  assert.match(human.stdout, /g-cli-1.*Claude.*employee/);

  const revoked = await cli.run(['grants', 'revoke', 'g-cli-1', ...tenant, '--json']);
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.ok(revoked.json<{ revoked_at: string | null }>().revoked_at);
  assert.deepEqual((await cli.run(['grants', 'list', ...tenant, '--json'])).json(), []);
  assert.equal((await cli.run(['grants', 'list', ...tenant, '--all', '--json'])).json<unknown[]>().length, 1);
  const unknown = await cli.run(['grants', 'revoke', 'nope', ...tenant]);
  assert.notEqual(unknown.code, 0);
  assert.match(unknown.stderr + unknown.stdout, /not_found|No grant/);

  const after = await openLocal({ db: cli.db });
  try {
    const tokens = await after.rt.store.read((q) =>
      q.all("SELECT id FROM oauth_models WHERE grant_id = 'g-cli-1'"),
    );
    assert.deepEqual(tokens, []);
    const rows = await after.rt.store.read((q) =>
      q.all<{ agent_type: string }>(
        "SELECT agent_type FROM audit_log WHERE company_id = ? AND action_type = 'oauth.revoke'",
        [companyId],
      ),
    );
    assert.deepEqual(
      rows.map((r) => r.agent_type),
      ['cli:operator'],
    );
  } finally {
    await after.close();
  }
});

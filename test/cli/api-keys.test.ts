/**
 * `solid api-keys`: create (printed once, works), list (no secrets), revoke (stops working),
 * every change audited. Spec: spec/transports.md §auth.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { cliHarness } from '../support/cli.ts';
import { parseApiKey } from '../../src/runtime/tenants.ts';

it('creates a working key shown once, lists keys without secrets, revokes, and audits each change', async (t) => {
  const cli = cliHarness(t);
  assert.equal((await cli.run(['init', '--json'])).code, 0);
  const created = await cli.run([
    'api-keys',
    'create',
    '--user',
    '7',
    '--role',
    'employee',
    '--name',
    'laptop',
    '--json',
  ]);
  assert.equal(created.code, 0, created.stderr);
  const { api_key, key_id } = created.json<{ api_key: string; key_id: string }>();
  const works = await cli.run(['agent', 'dispatch', 'verbs.list', '--json'], {
    env: { SOLID_API_KEY: api_key },
  });
  assert.equal(works.code, 0);
  const list = await cli.run(['api-keys', 'list', '--json']);
  // The whole secret (it may itself hold '_', so not the text after the last one: a short tail
  // could appear in the listing by chance).
  const { secret } = parseApiKey(api_key)!;
  assert.ok(secret.length >= 16);
  assert.ok(!list.stdout.includes(secret), 'the secret never appears in a listing');
  assert.ok(
    list
      .json<Array<{ key_id: string; role: string }>>()
      .some((k) => k.key_id === key_id && k.role === 'employee'),
  );
  assert.equal((await cli.run(['api-keys', 'revoke', key_id])).code, 0);
  const refused = await cli.run(['agent', 'dispatch', 'verbs.list', '--json'], {
    env: { SOLID_API_KEY: api_key },
  });
  assert.equal(refused.json<{ error: { reason: string } }>().error.reason, 'auth_invalid');
  assert.equal((await cli.run(['api-keys', 'revoke', key_id])).code, 5, 'revoking twice: no active key');
  const trail = await cli.run(
    ['agent', 'dispatch', 'audit.trail', '--args', '{"entity_type":"api_key"}', '--json'],
    {
      env: {
        SOLID_API_KEY: (
          await cli.run(['api-keys', 'create', '--user', '1', '--role', 'owner', '--json'])
        ).json<{ api_key: string }>().api_key,
      },
    },
  );
  const actions = trail
    .json<{ result: { entries: Array<{ action: string }> } }>()
    .result.entries.map((e) => e.action);
  assert.ok(actions.includes('api_keys.create') && actions.includes('api_keys.revoke'), actions.join(','));
  const bad = await cli.run(['api-keys', 'create', '--user', '1', '--role', 'god']);
  assert.equal(bad.code, 2);
});

it('creates a limited key (--read-only --verbs --toolsets --expires-in): listed with its limits, refused outside them', async (t) => {
  const cli = cliHarness(t);
  assert.equal((await cli.run(['init', '--json'])).code, 0);
  const bad = await cli.run(['api-keys', 'create', '--user', '1', '--role', 'owner', '--expires-in', 'soon']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--expires-in/);
  const unknown = await cli.run([
    'api-keys',
    'create',
    '--user',
    '1',
    '--role',
    'owner',
    '--verbs',
    'nope.nope',
  ]);
  assert.equal(unknown.code, 2);
  const created = await cli.run([
    'api-keys',
    'create',
    '--user',
    '1',
    '--role',
    'owner',
    '--read-only',
    '--verbs',
    'verbs.list,audit.trail',
    '--toolsets',
    'audit',
    '--expires-in',
    '30d',
    '--json',
  ]);
  assert.equal(created.code, 0, created.stderr);
  const made = created.json<{ api_key: string; key_id: string; scope: unknown; expires_at: string }>();
  assert.deepEqual(made.scope, {
    verbs: ['audit.trail', 'verbs.list'],
    toolsets: ['audit'],
    read_only: true,
  });
  const days = (Date.parse(made.expires_at) - Date.now()) / 86_400_000;
  assert.ok(days > 29.9 && days <= 30, String(days));
  const listed = (await cli.run(['api-keys', 'list', '--json'])).json<
    Array<{ key_id: string; scope: unknown; expires_at: string }>
  >();
  const row = listed.find((k) => k.key_id === made.key_id);
  assert.deepEqual(row?.scope, made.scope);
  assert.equal(row?.expires_at, made.expires_at);
  const env = { SOLID_API_KEY: made.api_key };
  assert.equal((await cli.run(['agent', 'dispatch', 'audit.trail', '--json'], { env })).code, 0);
  const outside = await cli.run(['agent', 'dispatch', 'api_keys.list', '--json'], { env });
  assert.equal(outside.json<{ error: { reason: string } }>().error.reason, 'scope_denied');
  assert.equal(outside.code, 3);
});

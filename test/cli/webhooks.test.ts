/**
 * `solid webhooks add|list|remove`: the secret printed once by add, never by list; remove; the
 * changes audited; an employee key refused. Spec: docs/webhooks.md.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { cliHarness } from '../support/cli.ts';

it('adds an endpoint (secret printed once), lists it without the secret, removes it; owner only', async (t) => {
  const cli = cliHarness(t);
  assert.equal((await cli.run(['init', '--json'])).code, 0);
  const key = (role: string) =>
    cli
      .run(['api-keys', 'create', '--user', role === 'owner' ? '1' : '9', '--role', role, '--json'])
      .then((r) => r.json<{ api_key: string }>().api_key);
  const env = { SOLID_API_KEY: await key('owner') };
  const added = await cli.run(
    ['webhooks', 'add', 'https://hooks.example.com/solid', '--events', 'approval.requested,cap.reached'],
    { env },
  );
  assert.equal(added.code, 0, added.stderr);
  const secret = /(whsec_[A-Za-z0-9+/=]+)/.exec(added.stdout)?.[1];
  assert.ok(secret, added.stdout);
  const id = /added (wh_[A-Za-z0-9_-]+)/.exec(added.stdout)?.[1];
  assert.ok(id, added.stdout);
  const list = await cli.run(['webhooks', 'list'], { env });
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, new RegExp(id));
  assert.match(list.stdout, /approval\.requested,cap\.reached/);
  assert.ok(!list.stdout.includes(secret.slice(6)), 'no secret in the listing');
  const bad = await cli.run(['webhooks', 'add', 'https://x.example.com', '--events', 'nope'], { env });
  assert.equal(bad.code, 2);
  const employee = await cli.run(['webhooks', 'list'], { env: { SOLID_API_KEY: await key('employee') } });
  assert.notEqual(employee.code, 0);
  assert.match(employee.stderr, /role_denied/);
  assert.equal((await cli.run(['webhooks', 'remove', id], { env })).code, 0);
  assert.match((await cli.run(['webhooks', 'list'], { env })).stdout, /No webhook endpoints/);
  const gone = await cli.run(['webhooks', 'remove', id], { env });
  assert.notEqual(gone.code, 0);
  assert.match(gone.stderr, /not_found/);
});

/**
 * `solid webhooks add|list|remove`: the secret printed once by add, never by list; remove; the
 * changes audited; an employee key refused; and where the notifications go is a human's choice:
 * the owner key alone (an agent, or a script without a terminal) is refused human_required, the
 * owner at the terminal with their authenticator code adds and removes. Spec: docs/webhooks.md.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { cliHarness } from '../support/cli.ts';
import { openLocal } from '../../src/transports/cli/local.ts';
import { enrolTotp, promptWithCode } from '../support/terminal-human.ts';

it('adds an endpoint (secret printed once), lists it without the secret, removes it; a human owner only', async (t) => {
  const cli = cliHarness(t);
  const init = await cli.run(['init', '--json']);
  assert.equal(init.code, 0, init.stderr);
  const companyId = init.json<{ company_id: number }>().company_id;
  const key = (role: string) =>
    cli
      .run(['api-keys', 'create', '--user', role === 'owner' ? '1' : '9', '--role', role, '--json'])
      .then((r) => r.json<{ api_key: string }>().api_key);
  const env = { SOLID_API_KEY: await key('owner') };
  const byKey = await cli.run(['webhooks', 'add', 'https://hooks.example.com/solid'], { env });
  assert.notEqual(byKey.code, 0);
  assert.match(byKey.stderr, /human_required/);

  const local = await openLocal({ db: cli.db });
  t.after(() => local.close());
  const owner = await enrolTotp(local.rt, companyId);
  const atTerminal = {
    env,
    tty: true,
    prompt: promptWithCode(local.rt, companyId, owner, (q) => (/\byes\b|y\/N/i.test(q) ? 'yes' : '')),
  };
  const added = await cli.run(
    ['webhooks', 'add', 'https://hooks.example.com/solid', '--events', 'approval.requested,cap.reached'],
    atTerminal,
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
  const removeByKey = await cli.run(['webhooks', 'remove', id], { env });
  assert.match(removeByKey.stderr, /human_required/);
  const removed = await cli.run(['webhooks', 'remove', id], atTerminal);
  assert.equal(removed.code, 0, removed.stderr);
  assert.match((await cli.run(['webhooks', 'list'], { env })).stdout, /No webhook endpoints/);
  const gone = await cli.run(['webhooks', 'remove', id], atTerminal);
  assert.notEqual(gone.code, 0);
  assert.match(gone.stderr, /not_found/);
});

/**
 * The credential vault (src/runtime/vault, spec/vault.md): secrets sealed at rest, listed without
 * the secret, set / rotated / revoked by the owner only and each change audited without the secret;
 * and no agent credential — an API key (even the owner's), a platform key, a bearer token on the
 * HTTP API — can set, rotate, read or revoke one: there is no verb and no route, and the CLI asks
 * the owner's one-time code at the terminal. Runs on both engines (SOLID_TEST_ENGINE=postgres).
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { platformFixture } from '../platform/support.ts';
import { dispatchAs } from '../support/keyed.ts';
import {
  listVaultSecrets,
  readVaultSecret,
  revokeVaultSecret,
  rotateVaultSecret,
  setVaultSecret,
} from '../../src/runtime/vault/vault.ts';
import { Secrets } from '../../src/runtime/secrets.ts';
import { cliHarness } from '../support/cli.ts';
import { openLocal } from '../../src/transports/cli/local.ts';
import { enrolTotp, promptWithCode } from '../support/terminal-human.ts';

const SECRET = 'sk_test_51Hxyz_vault_secret_value_0042';

it('seals a secret at rest, lists it without the secret, rotates and revokes it, audits each without it', async (t) => {
  const f = await platformFixture(t);
  const { rt } = f.h;
  const c = f.h.companyId;
  const now = rt.clock();
  const set = await rt.store.write((tx) =>
    setVaultSecret(tx, rt.secrets, {
      company_id: c,
      name: 'payments.api_key',
      secret: SECRET,
      actor: undefined,
      now,
    }),
  );
  assert.deepEqual({ v: set.version, hint: set.hint }, { v: 1, hint: '0042' });
  const row = await rt.store.read((q) =>
    q.get<{ secret_enc: string }>('SELECT secret_enc FROM vault_secrets WHERE company_id = ?', [c]),
  );
  assert.ok(
    row !== undefined && !row.secret_enc.includes(SECRET) && !row.secret_enc.includes('vault_secret'),
  );
  assert.equal(await readVaultSecret(rt, c, 'payments.api_key'), SECRET);
  // Another tenant does not see it; another master key does not open it.
  await assert.rejects(readVaultSecret(rt, f.h.otherCompanyId, 'payments.api_key'), { reason: 'not_found' });
  await assert.rejects(
    readVaultSecret({ store: rt.store, secrets: Secrets.ephemeral() }, c, 'payments.api_key'),
  );
  // A live name is rotated, not set again.
  await assert.rejects(
    rt.store.write((tx) =>
      setVaultSecret(tx, rt.secrets, {
        company_id: c,
        name: 'payments.api_key',
        secret: 'x'.repeat(20),
        actor: undefined,
        now,
      }),
    ),
    { reason: 'invalid_args' },
  );
  const rotated = await rt.store.write((tx) =>
    rotateVaultSecret(tx, rt.secrets, {
      company_id: c,
      name: 'payments.api_key',
      secret: 'rk_live_rotated_secret_9999',
      actor: undefined,
      now,
    }),
  );
  assert.equal(rotated.version, 2);
  assert.equal(await readVaultSecret(rt, c, 'payments.api_key'), 'rk_live_rotated_secret_9999');
  // A short secret shows no characters at all.
  const short = await rt.store.write((tx) =>
    setVaultSecret(tx, rt.secrets, { company_id: c, name: 'pin', secret: 'abc123', actor: undefined, now }),
  );
  assert.equal(short.hint, '');
  await rt.store.write((tx) =>
    revokeVaultSecret(tx, { company_id: c, name: 'payments.api_key', actor: undefined, now }),
  );
  await assert.rejects(readVaultSecret(rt, c, 'payments.api_key'), { reason: 'not_found' });
  const listed = await rt.store.read((q) => listVaultSecrets(q, c));
  assert.deepEqual(
    listed.map((e) => [e.name, e.version, e.hint, e.revoked_at !== null]),
    [
      ['payments.api_key', 2, '', true],
      ['pin', 1, '', false],
    ],
  );
  // Bad names and secrets are refused with an envelope reason.
  for (const [name, secret] of [
    ['Bad Name', 'secret-value'],
    ['ok', ''],
    ['ok', 'two\nlines'],
  ])
    await assert.rejects(
      rt.store.write((tx) =>
        setVaultSecret(tx, rt.secrets, { company_id: c, name, secret, actor: undefined, now }),
      ),
      { reason: 'invalid_args' },
    );
  // Each change is an audit row naming the secret, never holding it.
  const trail = await dispatchAs(rt, { apiKey: f.h.keys.owner, surface: 'cli' }, 'audit.trail', {
    limit: 50,
  });
  assert.equal(trail.ok, true, JSON.stringify(trail.error));
  const text = JSON.stringify(trail);
  for (const action of ['vault.set', 'vault.rotate', 'vault.revoke'])
    assert.ok(text.includes(action), action);
  for (const s of [SECRET, 'rk_live_rotated_secret_9999', 'abc123'])
    assert.ok(!text.includes(s), 'no secret in the trail');
});

it('no agent credential sets, rotates, reads or revokes a vault secret: no verb, no route', async (t) => {
  const f = await platformFixture(t);
  const { rt } = f.h;
  const c = f.h.companyId;
  await rt.store.write((tx) =>
    setVaultSecret(tx, rt.secrets, {
      company_id: c,
      name: 'payments.api_key',
      secret: SECRET,
      actor: undefined,
      now: rt.clock(),
    }),
  );
  const attempts: Array<[string, Record<string, unknown>]> = [
    ['vault.set', { name: 'payments.api_key', secret: 'sk_agent_chosen_0000' }],
    ['vault.rotate', { name: 'payments.api_key', secret: 'sk_agent_chosen_0000' }],
    ['vault.get', { name: 'payments.api_key' }],
    ['vault.read', { name: 'payments.api_key' }],
    ['vault.revoke', { name: 'payments.api_key' }],
    ['vault.list', {}],
  ];
  // No verb of the manifest touches the vault.
  assert.deepEqual(
    rt.registry.list().filter((v) => v.name.startsWith('vault')),
    [],
  );
  for (const [verb, args] of attempts) {
    // The owner's API key, the platform key: refused before anything runs.
    for (const apiKey of [f.h.keys.owner, f.h.keys.admin, f.key]) {
      const env = await dispatchAs(rt, { apiKey, surface: 'http' }, verb, args);
      assert.equal(env.ok, false, verb);
      assert.ok(
        ['unknown_verb', 'platform_credential_required'].includes(env.error!.reason),
        `${verb}: ${env.error!.reason}`,
      );
    }
    // Over HTTP with a bearer credential: the agent API, the platform API, any vault-looking path.
    for (const [url, bearer, body] of [
      [`/api/v1/agent/dispatch/${verb}`, f.h.keys.owner, { args }],
      [`/api/v1/platform/platform.${verb}`, f.key, args],
      [`/api/v1/${verb.replace('.', '/')}`, f.h.keys.owner, args],
    ] as const) {
      const res = await f.app.inject({
        method: 'POST',
        url,
        headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      });
      assert.ok([401, 403, 404].includes(res.statusCode), `${url}: ${res.statusCode} ${res.body}`);
      assert.ok(!res.body.includes(SECRET));
    }
  }
  // Still the owner's secret, unchanged.
  assert.equal(await readVaultSecret(rt, c, 'payments.api_key'), SECRET);
  const listed = await rt.store.read((q) => listVaultSecrets(q, c));
  assert.deepEqual(
    listed.map((e) => [e.name, e.version, e.revoked_at]),
    [['payments.api_key', 1, null]],
  );
});

it('solid vault: piped secret at bootstrap, then the owner code at the terminal; a key alone is refused', async (t) => {
  const cli = cliHarness(t);
  const init = await cli.run(['init', '--json']);
  assert.equal(init.code, 0, init.stderr);
  const companyId = init.json<{ company_id: number }>().company_id;
  const keyOf = (role: string) =>
    cli
      .run(['api-keys', 'create', '--user', role === 'owner' ? '1' : '9', '--role', role, '--json'])
      .then((r) => r.json<{ api_key: string }>().api_key);
  const piped = (value: string) => ({ prompt: async () => value });
  // Bootstrap: nobody signs in yet, the operator holding the database sets it (piped on stdin).
  const first = await cli.run(['vault', 'set', 'payments.api_key'], piped(SECRET));
  assert.equal(first.code, 0, first.stderr);
  assert.ok(!first.stdout.includes(SECRET) && first.stdout.includes('0042'));

  const local = await openLocal({ db: cli.db });
  t.after(() => local.close());
  const owner = await enrolTotp(local.rt, companyId);
  // From now on an owner's API key in the environment and a pipe do not count: human_required.
  const env = { SOLID_API_KEY: await keyOf('owner') };
  for (const args of [
    ['vault', 'rotate', 'payments.api_key'],
    ['vault', 'set', 'other'],
    ['vault', 'revoke', 'payments.api_key'],
  ]) {
    const r = await cli.run(args, { env, ...piped('sk_agent_chosen_value_1111') });
    assert.notEqual(r.code, 0, args.join(' '));
    assert.match(r.stderr, /human_required/);
  }
  // An admin's code is not the owner's.
  const admin = await enrolTotp(local.rt, companyId, { user_id: 7, role: 'admin', name: 'Ada' });
  const byAdmin = await cli.run(['vault', 'rotate', 'payments.api_key'], {
    tty: true,
    prompt: promptWithCode(local.rt, companyId, admin, () => 'sk_admin_chosen_value_2222'),
  });
  assert.notEqual(byAdmin.code, 0);
  // The owner at the terminal: the code, then the secret at the hidden prompt.
  const asked: string[] = [];
  const rotated = await cli.run(['vault', 'rotate', 'payments.api_key', '--json'], {
    tty: true,
    prompt: promptWithCode(local.rt, companyId, owner, () => 'sk_live_rotated_by_owner_3333', asked),
  });
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.equal(rotated.json<{ version: number }>().version, 2);
  assert.ok(asked.some((q) => /Secret for payments\.api_key/.test(q)));
  const list = await cli.run(['vault', 'list', '--json']);
  assert.equal(list.code, 0, list.stderr);
  assert.ok(!list.stdout.includes('sk_live_rotated_by_owner'));
  assert.equal(
    await readVaultSecret(local.rt, companyId, 'payments.api_key'),
    'sk_live_rotated_by_owner_3333',
  );
  // The remote target is refused: the vault is the local owner's.
  const remote = await cli.run(['--url', 'http://127.0.0.1:9', 'vault', 'list']);
  assert.notEqual(remote.code, 0);
});

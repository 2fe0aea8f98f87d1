/**
 * The `solid` CLI core: init, verbs list/show, agent dispatch, exit codes and bad input.
 * Spec: spec/transports.md §cli.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { statSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cliHarness } from '../support/cli.ts';
import { validateEnvelope } from '../../src/spec/validators.ts';
import { assertUpstreamValid } from '../support/upstream.ts';

const BIN = fileURLToPath(new URL('../../bin/solid.js', import.meta.url));

async function initialised(t: Parameters<typeof cliHarness>[0]) {
  const cli = cliHarness(t);
  const init = await cli.run(['init', '--name', 'Acme', '--json']);
  assert.equal(init.code, 0, init.stderr);
  const key = init.json<{ owner_api_key: string }>().owner_api_key;
  return { cli, key };
}

describe('solid CLI', () => {
  it('init creates the database, a 0600 keyfile and prints an owner key once; a second init refuses', async (t) => {
    const { cli, key } = await initialised(t);
    assert.match(key, /^sk_solid_[0-9a-f]{12}_/);
    assert.equal(statSync(`${cli.db}.keys.json`).mode & 0o777, 0o600);
    const again = await cli.run(['init']);
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /already initialised/);
  });

  it('verbs list prints a table, --json spec-valid VerbRecords, and filters by shape', async (t) => {
    const { cli } = await initialised(t);
    const human = await cli.run(['verbs', 'list']);
    assert.equal(human.code, 0);
    assert.match(human.stdout, /VERB\s+SHAPE\s+CLASS/);
    assert.match(human.stdout, /audit\.trail\s+trail/);
    const json = await cli.run(['verbs', 'list', '--json']);
    const records = json.json<Array<Record<string, unknown>>>();
    assert.ok(records.length >= 2);
    for (const r of records) assertUpstreamValid('verb-record', r, String(r.name));
    const trails = (await cli.run(['verbs', 'list', '--json', '--shape', 'trail'])).json<
      Array<{ shape: string }>
    >();
    assert.ok(trails.length >= 1 && trails.every((r) => r.shape === 'trail'));
    const bad = await cli.run(['verbs', 'list', '--shape', 'crud']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /must be one of/);
  });

  it('verbs show prints one verb, and answers unknown verbs with the closest names', async (t) => {
    const { cli } = await initialised(t);
    const show = await cli.run(['verbs', 'show', 'audit.trail']);
    assert.equal(show.code, 0);
    assert.match(show.stdout, /role floor: read_only/);
    const unknown = await cli.run(['verbs', 'show', 'audit.trial', '--json']);
    assert.equal(unknown.code, 5);
    assert.equal(unknown.json<{ error: { reason: string; hint: string } }>().error.reason, 'unknown_verb');
    assert.match(unknown.json<{ error: { hint: string } }>().error.hint, /audit\.trail/);
  });

  it('agent dispatch prints the envelope and exits 0 when ok, non-zero otherwise', async (t) => {
    const { cli, key } = await initialised(t);
    const ok = await cli.run(['agent', 'dispatch', 'verbs.list', '--args', '{"shape":"trail"}', '--json'], {
      env: { SOLID_API_KEY: key },
    });
    assert.equal(ok.code, 0);
    assert.equal(validateEnvelope(ok.json()).valid, true);
    const unknown = await cli.run(['agent', 'dispatch', 'no.such_verb', '--json'], {
      env: { SOLID_API_KEY: key },
    });
    assert.equal(unknown.code, 5);
    assert.equal(unknown.json<{ error: { reason: string } }>().error.reason, 'unknown_verb');
    const invalid = await cli.run(['agent', 'dispatch', 'audit.trail', '--args', '{"limit":0}', '--json'], {
      env: { SOLID_API_KEY: key },
    });
    assert.equal(invalid.code, 2);
    assert.equal(invalid.json<{ error: { reason: string; path: string } }>().error.path, '/limit');
    const blocked = await cli.run(
      ['agent', 'dispatch', 'customer_delete', '--json', '--confirm', '--phrase', 'DELETE'],
      { env: { SOLID_API_KEY: key } },
    );
    assert.equal(blocked.code, 3);
    assert.equal(blocked.json<{ error: { reason: string } }>().error.reason, 'blocked_verb');
  });

  it('malformed --args JSON answers invalid_args with the parse position, not a stack', async (t) => {
    const { cli, key } = await initialised(t);
    const r = await cli.run(['agent', 'dispatch', 'verbs.list', '--args', '{"shape": trail}', '--json'], {
      env: { SOLID_API_KEY: key },
    });
    assert.equal(r.code, 2);
    const env = r.json<{
      ok: boolean;
      error: { reason: string; message: string; hint: string; details: { position: number } };
    }>();
    assert.equal(env.error.reason, 'invalid_args');
    assert.equal(env.error.details.position, 12, 'the first character JSON cannot accept (the a of trail)');
    assert.match(env.error.hint, /--args/);
    assert.doesNotMatch(r.stdout + r.stderr, /at \w+ \(|node:internal/);
  });

  it('--args is read as strictly as an HTTP body: a repeated key or a __proto__ key answers invalid_args', async (t) => {
    const { cli, key } = await initialised(t);
    for (const [args, pattern] of [
      ['{"shape": "trail", "shape": "read"}', /repeats the key "shape"/],
      ['{"\\u005f_proto__": {"x": 1}}', /forbidden key "__proto__"/],
    ] as const) {
      const r = await cli.run(['agent', 'dispatch', 'verbs.list', '--args', args, '--json'], {
        env: { SOLID_API_KEY: key },
      });
      assert.equal(r.code, 2, r.stdout + r.stderr);
      const env = r.json<{ ok: boolean; error: { reason: string; message: string; hint: string } }>();
      assert.equal(env.error.reason, 'invalid_args', args);
      assert.match(env.error.message, pattern);
      assert.ok(env.error.hint.length > 0);
    }
  });

  it('a bad API key answers auth_invalid; no key runs reads on the sandbox and refuses writes', async (t) => {
    const { cli } = await initialised(t);
    const bad = await cli.run(['agent', 'dispatch', 'verbs.list', '--json'], {
      env: { SOLID_API_KEY: 'sk_solid_nope' },
    });
    assert.equal(bad.code, 3);
    assert.equal(bad.json<{ error: { reason: string } }>().error.reason, 'auth_invalid');
    const keyless = await cli.run(['agent', 'dispatch', 'audit.trail', '--json'], {
      env: { SOLID_API_KEY: undefined },
    });
    assert.equal(keyless.code, 0);
  });

  it('a missing or unreadable database answers a clear message and a non-zero exit', async (t) => {
    const cli = cliHarness(t);
    const missing = await cli.run(['verbs', 'list']);
    assert.equal(missing.code, 8);
    assert.match(missing.stderr, /No solid database.*\n.*solid init/);
    const notDb = join(cli.dir, 'garbage.db');
    writeFileSync(notDb, 'this is not a database at all, just text'.repeat(200));
    const garbage = await cli.run(['--db', notDb, 'verbs', 'list']);
    assert.equal(garbage.code, 8);
    assert.match(garbage.stderr, /store_unavailable/);
    mkdirSync(join(cli.dir, 'adir.db'));
    const dir = await cli.run(['--db', join(cli.dir, 'adir.db'), 'verbs', 'list']);
    assert.notEqual(dir.code, 0);
    assert.doesNotMatch(dir.stderr, /node:internal| {4}at /);
  });

  it('bin/solid.js runs as a real process: stdout carries only the JSON envelope', () => {
    const dir = join(fileURLToPath(new URL('.', import.meta.url)));
    void dir;
    const tmp = spawnSync(process.execPath, [BIN, '--help'], { encoding: 'utf8' });
    assert.equal(tmp.status, 0);
    assert.match(tmp.stdout, /Usage: solid/);
  });
});

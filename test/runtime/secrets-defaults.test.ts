/**
 * createRuntime's default secrets (runtimeSecrets, src/runtime/secrets.ts): a runtime on a file
 * database keeps its nonce key and master key in `<db>.keys.json` beside it, as the CLI does, so a
 * restart or a second runtime on the same file confirms nonces and signs receipts; a missing or
 * wrong key file stops createRuntime with a message naming the file; in memory the secrets are
 * ephemeral with a warning that carries no secret.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.ts';
import { SecretsError } from '../../src/runtime/secrets.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { COUNTER_VERBS } from '../support/counter-verbs.ts';
import { verifyReceipt } from '../../src/runtime/ledger/keys/receipts.ts';
import type { Envelope, Receipt } from '../../src/spec/types.ts';
import { dispatchAs } from '../support/keyed.ts';

const silent = pino({ level: 'silent' });

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'solid-secrets-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function open(path: string, logger = silent): Promise<Runtime> {
  const rt = await createRuntime({ store: new SqliteStore({ path }), logger });
  await rt.store.migrate('ledger-test', [
    {
      version: 1,
      name: 'counters',
      sqlite: `CREATE TABLE counters (company_id INTEGER NOT NULL, name TEXT NOT NULL, value INTEGER NOT NULL, changes INTEGER NOT NULL, PRIMARY KEY (company_id, name));
               CREATE TABLE counter_locks (company_id INTEGER NOT NULL, name TEXT NOT NULL, PRIMARY KEY (company_id, name));`,
      postgres: 'SELECT 1',
    },
  ]);
  rt.register(...COUNTER_VERBS);
  return rt;
}

/** A tenant with an owner key on a fresh file database; the runtime is closed afterwards. */
async function seeded(path: string): Promise<{ key: string; company_id: number }> {
  const rt = await open(path);
  const { company_id } = await rt.createTenant({ name: 'Keyed Co', tier: 'professional' });
  const key = await rt.createApiKey({ company_id, user_id: 1, role: 'owner', agent_type: 'test' });
  await rt.close();
  return { key, company_id };
}

const add = (rt: Runtime, apiKey: string, extra = {}): Promise<Envelope> =>
  dispatchAs(rt, { apiKey, surface: 'cli' }, 'counter.add', { name: 'visits', by: 1 }, extra);

test('a file database keeps its secrets beside it: a restart and a second runtime confirm and sign', async (t) => {
  const dir = tempDir(t);
  const db = join(dir, 'shop.db');
  const { key, company_id } = await seeded(db);
  const keyfile = `${db}.keys.json`;
  assert.equal(statSync(keyfile).mode & 0o777, 0o600, 'the key file is private to its owner');

  const a = await open(db);
  const b = await open(db);
  t.after(async () => {
    await a.close();
    await b.close();
  });
  const pending = await add(a, key);
  assert.equal(pending.error?.reason, 'dispatch_pending', JSON.stringify(pending));
  // The nonce minted by one runtime is confirmed by the other: they share the nonce key.
  const done = await add(b, key, { confirm: true, nonce: pending.consent!.nonce });
  assert.equal(done.ok, true, JSON.stringify(done));
  const receipt = done.result as Receipt;
  const keys = await b.store.read((q) => b.keys.publishable(q, company_id));
  assert.ok(receipt.attestation, 'the receipt is signed with the tenant key the master key opens');
  assert.equal(verifyReceipt(receipt, keys).valid, true);
});

test('a used database whose key file is missing stops createRuntime, naming the file', async (t) => {
  const dir = tempDir(t);
  const db = join(dir, 'shop.db');
  await seeded(db);
  unlinkSync(`${db}.keys.json`);
  await assert.rejects(open(db), (err: Error) => {
    assert.ok(err instanceof SecretsError, String(err));
    assert.match(err.message, /key file .*shop\.db\.keys\.json is missing/);
    return true;
  });
});

test("another database's key file is a clear error at start, not an internal_error per write", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, 'shop.db');
  const other = join(dir, 'other.db');
  await seeded(db);
  await seeded(other);
  copyFileSync(`${other}.keys.json`, `${db}.keys.json`);
  await assert.rejects(open(db), (err: Error) => {
    assert.ok(err instanceof SecretsError, String(err));
    assert.match(err.message, /master key from .*shop\.db\.keys\.json does not open the tenant signing keys/);
    return true;
  });
});

test('a key file that is not one names the file', async (t) => {
  const dir = tempDir(t);
  const db = join(dir, 'shop.db');
  await seeded(db);
  const keyfile = `${db}.keys.json`;
  const before = readFileSync(keyfile, 'utf8');
  copyFileSync(join(import.meta.dirname, 'secrets-defaults.test.ts'), keyfile);
  await assert.rejects(open(db), /key file .*shop\.db\.keys\.json cannot be read as JSON/);
  assert.notEqual(before, '');
});

test('in memory: ephemeral secrets with a warning that holds no secret', async (t) => {
  let logged = '';
  const sink = new Writable({
    write(chunk, _enc, done) {
      logged += String(chunk);
      done();
    },
  });
  const rt = await createRuntime({ store: new SqliteStore({ path: ':memory:' }), logger: pino(sink) });
  t.after(() => rt.close());
  const { company_id } = await rt.createTenant({ name: 'Memo Co', tier: 'starter' });
  await rt.createApiKey({ company_id, user_id: 1, role: 'owner', agent_type: 'test' });
  assert.match(logged, /"level":40.*using ephemeral ones/);
  assert.doesNotMatch(logged, /master_key|nonce_secrets/);
});

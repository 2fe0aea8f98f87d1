/**
 * Nonce format, binding and secret rotation (spec/consent.md §nonce): the key id travels inside
 * the token, so a nonce signed with a previous secret (SOLID_NONCE_SECRETS_PREVIOUS) still
 * verifies after a rotation, and one signed with an unknown secret is nonce_invalid.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { consentHarness, expectDenied, pendingOf, type ConsentHarness } from './support.ts';
import { consentTestPack, chargeInvoice } from './pack.ts';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.ts';
import { loadSecrets } from '../../src/runtime/secrets.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { systemVerbs } from '../../src/verbs/index.ts';
import { phraseHash } from '../../src/runtime/consent/typed-phrase.ts';
import { argsHash } from '../../src/runtime/ledger/write/idempotency.ts';
import type { KeyfileContents } from '../../src/runtime/secrets.ts';
import pino from 'pino';
import { dispatchAs } from '../support/keyed.ts';

const ARGS = { invoice_id: 4242, amount_cents: 5000 };
const PHRASE = 'CHARGE $50.00 to invoice #4242';

/** A second runtime on the harness's database with other nonce secrets (same master key). */
async function reopen(
  t: { after(fn: () => Promise<void>): void },
  h: ConsentHarness,
  env: Record<string, string>,
): Promise<Runtime> {
  const keyfile = JSON.parse(readFileSync(`${h.dbPath}.keys.json`, 'utf8')) as KeyfileContents;
  const { secrets } = loadSecrets({ env: { SOLID_MASTER_KEY: keyfile.master_key, ...env } });
  const rt = await createRuntime({
    store: new SqliteStore({ path: h.dbPath }),
    secrets,
    logger: pino({ level: 'silent' }),
    sandboxCompanyId: 1,
    clock: () => new Date(h.clock.ms),
    maintenanceIntervalMs: 0,
  });
  rt.register(...systemVerbs, ...consentTestPack.verbs);
  t.after(() => rt.close());
  return rt;
}

function currentSecret(h: ConsentHarness): string {
  return (JSON.parse(readFileSync(`${h.dbPath}.keys.json`, 'utf8')) as KeyfileContents).nonce_secrets[0]!
    .secret;
}

test('the nonce carries its key id and binds verb, canonical args, tenant, user, class, phrase hash, expiry and a unique id', async (t) => {
  const h = await consentHarness(t);
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  const [prefix, kid, body] = c.nonce.split('.');
  assert.equal(prefix, 'n1');
  assert.equal(kid, h.rt.secrets.currentKid);
  const p = JSON.parse(Buffer.from(body!, 'base64url').toString('utf8')) as Record<string, unknown>;
  // A typed phrase keeps an approvals row for its nonce: no `r` (its confirm looks the row up).
  assert.deepEqual(Object.keys(p).sort(), ['a', 'c', 'e', 'j', 'k', 'p', 'u', 'v']);
  assert.equal(p.v, 'charge_invoice');
  assert.equal(p.a, argsHash(ARGS));
  assert.equal(p.c, h.companyId);
  assert.equal(p.u, 2);
  assert.equal(p.k, 'WRITE_FINANCIAL');
  assert.equal(p.p, phraseHash(PHRASE));
  assert.equal(p.e, Date.parse('2026-03-10T12:05:00Z') / 1000);
  assert.equal(typeof p.j, 'string');
  const c2 = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  assert.notEqual(c2.nonce, c.nonce, 'every preflight issues a fresh nonce');
});

test('after rotation a nonce signed with the previous secret still verifies and executes', async (t) => {
  const h = await consentHarness(t);
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  const fresh = randomBytes(32).toString('base64url');
  const rotated = await reopen(t, h, {
    SOLID_NONCE_SECRET: fresh,
    SOLID_NONCE_SECRETS_PREVIOUS: currentSecret(h),
  });
  assert.notEqual(rotated.secrets.currentKid, h.rt.secrets.currentKid);
  assert.equal(rotated.secrets.describe().accepted_kids.length, 2);
  const env = await dispatchAs(rotated, { surface: 'cli', apiKey: h.keys.admin }, 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: PHRASE,
  });
  assert.equal(env.ok, true, JSON.stringify(env));
  assert.equal(await h.effects('charge_invoice'), 1);
  // and new nonces carry the new key id
  const next = pendingOf(
    await dispatchAs(rotated, { surface: 'cli', apiKey: h.keys.admin }, 'charge_invoice', {
      ...ARGS,
      invoice_id: 1,
    }),
  );
  assert.equal(next.nonce.split('.')[1], rotated.secrets.currentKid);
});

test('a nonce signed with a secret this runtime does not hold (rotated out, or never known) is nonce_invalid', async (t) => {
  const h = await consentHarness(t);
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  const stranger = await reopen(t, h, { SOLID_NONCE_SECRET: randomBytes(32).toString('base64url') });
  const env = await dispatchAs(stranger, { surface: 'cli', apiKey: h.keys.admin }, 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: PHRASE,
  });
  await expectDenied(h, env, 'nonce_invalid', { role: 'admin', args: ARGS });
  // the same key id with different secret bytes does not verify either (kid is only a lookup hint)
  const [, kid, body, mac] = c.nonce.split('.');
  const forgedKid = `n1.${stranger.secrets.currentKid}.${body}.${mac}`;
  const env2 = await dispatchAs(stranger, { surface: 'cli', apiKey: h.keys.admin }, 'charge_invoice', ARGS, {
    confirm: true,
    nonce: forgedKid,
    typed_phrase: PHRASE,
  });
  await expectDenied(h, env2, 'nonce_invalid', { role: 'admin' });
  assert.notEqual(kid, stranger.secrets.currentKid);
  assert.equal(await h.effects(), 0);
});

test('a phrase or class that changed after preflight (verb re-registered) invalidates the nonce', async (t) => {
  const h = await consentHarness(t);
  const c = pendingOf(await h.call('owner', 'charge_invoice', ARGS));
  h.rt.register({
    ...chargeInvoice,
    phrase: (a: { amount_cents: number; invoice_id: number }) =>
      `PAY ${a.amount_cents} CENTS ON #${a.invoice_id}`,
  });
  const env = await h.call('owner', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: 'PAY 5000 CENTS ON #4242',
  });
  await expectDenied(h, env, 'nonce_invalid', { role: 'owner', args: ARGS });
  assert.match(env.error!.message, /another consent gate or phrase/);
  h.rt.register({ ...chargeInvoice, consent: 'IRREVERSIBLE' });
  const env2 = await h.call('owner', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: PHRASE,
  });
  await expectDenied(h, env2, 'nonce_invalid', { role: 'owner', args: ARGS });
  assert.equal(await h.effects(), 0);
});

test('a confirmation-click nonce cannot confirm a typed-phrase verb of the same name and args', async (t) => {
  const h = await consentHarness(t);
  h.rt.register({ ...chargeInvoice, consent: 'WRITE_REVERSIBLE', phrase: undefined });
  const click = pendingOf(await h.call('owner', 'charge_invoice', ARGS));
  assert.equal(click.gate, 'confirmation');
  h.rt.register(chargeInvoice);
  const env = await h.call('owner', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: click.nonce,
    typed_phrase: PHRASE,
  });
  await expectDenied(h, env, 'nonce_invalid', { role: 'owner', args: ARGS });
  assert.equal(await h.effects(), 0);
});

test('a plain confirmation seals r: 0 (no approval row to consume); it still runs once, and r cannot be forged', async (t) => {
  const h = await consentHarness(t);
  const payloadOf = (nonce: string) =>
    JSON.parse(Buffer.from(nonce.split('.')[2]!, 'base64url').toString('utf8')) as Record<string, unknown>;
  const note = { contact_id: 7, note: 'hello' };
  const first = await h.call('admin', 'ct.note_update', note);
  const click = pendingOf(first);
  assert.equal(click.approval_id, undefined, 'no approvals row for a plain confirmation');
  assert.equal(payloadOf(click.nonce).r, 0);
  const ran = await h.call('admin', 'ct.note_update', note, { confirm: true, nonce: click.nonce });
  assert.equal(ran.ok, true, JSON.stringify(ran.error));
  const again = await h.call('admin', 'ct.note_update', note, { confirm: true, nonce: click.nonce });
  await expectDenied(h, again, 'nonce_replayed', { role: 'admin', args: note });
  // Asked over a plain-retry transport the answer keeps a row: no r, the retry consumes the row.
  const retry = pendingOf(await h.call('admin', 'ct.note_update', note, { plain_retry: true }));
  assert.notEqual(retry.approval_id, undefined);
  assert.equal(payloadOf(retry.nonce).r, undefined);
  // A typed-phrase nonce edited to say r: 0 (to skip its approval row, where a rejection waits)
  // fails its MAC.
  const typed = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  const effects = await h.effects();
  const [n1, kid, body, mac] = typed.nonce.split('.');
  const forged = Buffer.from(
    JSON.stringify({ ...JSON.parse(Buffer.from(body!, 'base64url').toString('utf8')), r: 0 }),
  ).toString('base64url');
  const env = await h.call('admin', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: [n1, kid, forged, mac].join('.'),
    typed_phrase: PHRASE,
  });
  await expectDenied(h, env, 'nonce_invalid', { role: 'admin', args: ARGS });
  assert.equal(await h.effects(), effects);
});

/**
 * The refusal catalogue (src/runtime/refusals.ts, spec/reasons.md §catalogue): every entry builds
 * a VerbError with a reason of the table, a message and a hint, and the entries that replaced
 * copies keep the texts users saw.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { refuse, packRefusals } from '../../src/runtime/refusals.ts';
import { isVerbError } from '../../src/runtime/errors.ts';
import { REASONS } from '../../src/spec/reasons.ts';
import { cliRefuse } from '../../src/transports/cli/refusals.ts';
import { transportEnvelope } from '../../src/transports/http/envelope-map.ts';

test('every catalogue entry answers a core reason with a message and a hint', () => {
  const samples: Record<keyof typeof refuse, () => unknown> = {
    notFound: () => refuse.notFound('audit row', 7, 'List them.'),
    approvalNotFound: () => refuse.approvalNotFound('apv_1'),
    macroNotFound: () => refuse.macroNotFound('mac_1'),
    subscriptionNotFound: () => refuse.subscriptionNotFound('sub_1', 'exists for this tenant', 'Subscribe.'),
    tenantNotFound: () => refuse.tenantNotFound(7),
    signingKeyNotFound: () => refuse.signingKeyNotFound('k1'),
    unknownVerb: () => refuse.unknownVerb('deals.craete', ['deals.create']),
    storeUnavailable: () => refuse.storeUnavailable(),
    authInvalid: () => refuse.authInvalid(),
    roleDenied: () => refuse.roleDenied('deals.create', 'manager', 'employee'),
    nonceInvalid: () => refuse.nonceInvalid('The nonce was issued to another tenant or user.'),
    alreadyReverted: () => refuse.alreadyReverted('deals.create #3', 3, 9),
    macroInvalid: () => refuse.macroInvalid('Step 2 names no verb.', '/steps/2/verb'),
    invalidInput: () => refuse.invalidInput('/limit', 'is required', 'deals.search'),
    idempotencyKeyInUse: () => refuse.idempotencyKeyInUse(),
    capExceeded: () => refuse.capExceeded(20, 'WRITE_FINANCIAL', '2026-12-04T00:00:00.000Z'),
    trustProxy: () => refuse.trustProxy('--trust-proxy 2: hop counts are not supported.'),
    crossSite: () => refuse.crossSite('Cross-site requests are refused.'),
  };
  for (const [name, make] of Object.entries(samples)) {
    const err = make();
    assert.ok(isVerbError(err), name);
    assert.ok(Object.hasOwn(REASONS, err.reason), `${name}: ${err.reason} is in the reason table`);
    assert.ok(err.message.length > 0, name);
    assert.ok((err.hint ?? '').length > 0, `${name} has a hint`);
  }
});

test('entries keep the texts of the copies they replaced', () => {
  assert.deepEqual(refuse.notFound('audit row', 7, 'Pass an audit_id.').toEnvelopeError(), {
    reason: 'not_found',
    message: 'No audit row 7 exists for this tenant.',
    hint: 'Pass an audit_id.',
  });
  assert.equal(refuse.signingKeyNotFound('k1').message, 'No signing key k1 for this tenant.');
  assert.equal(refuse.signingKeyNotFound('k1', 2).message, 'No signing key k1 for tenant 2.');
  assert.equal(refuse.signingKeyNotFound('k1').hint, 'List keys with `solid keys list`.');
  assert.equal(cliRefuse.tenantFlag('x').message, '--tenant must be a positive integer, not "x".');
  const unknown = refuse.unknownVerb('deals.craete', ['deals.create']);
  assert.equal(unknown.message, 'No verb named "deals.craete" is registered.');
  assert.equal(unknown.hint, 'Did you mean deals.create? List verbs with verbs.list.');
  assert.deepEqual(unknown.details, { closest: ['deals.create'] });
  assert.equal(refuse.unknownVerb('x', []).hint, 'List the available verbs with verbs.list.');
  const macro = refuse.macroNotFound('m'.repeat(100));
  assert.equal(macro.message, `No macro ${'m'.repeat(64)} exists for this tenant.`);
  assert.deepEqual(refuse.alreadyReverted('v #3', 3, 9).details, { audit_id: 3, revert_audit_id: 9 });
  assert.equal(refuse.alreadyReverted('v #3', 3).message, 'v #3 was already reverted.');
  const input = refuse.invalidInput('', 'must be an object', 'deals.search');
  assert.equal(input.message, 'arguments must be an object.');
  assert.equal(input.hint, 'Fix the argument at / to match the input_schema of deals.search.');
  assert.equal(refuse.macroInvalid('x').hint, 'Fix the macro definition (macros.save) and try again.');
});

test('every nonce_invalid carries the one nonce hint, naming the verb when known', () => {
  const general = refuse.nonceInvalid('The nonce was issued to another tenant or user.');
  assert.equal(
    general.hint,
    'Call the verb again without confirm to get a fresh nonce, then confirm with exactly the same arguments.',
  );
  const named = refuse.nonceInvalid(
    'The nonce was issued for another consent gate or phrase.',
    'deals.close',
  );
  assert.equal(named.reason, 'nonce_invalid');
  assert.equal(
    named.hint,
    'Call deals.close again without confirm to get a fresh nonce, then confirm with exactly the same arguments.',
  );
});

test('a transport refusal names a reason of the table (a misspelt one does not compile)', () => {
  const env = transportEnvelope('', 'payload_too_large', 'The body is too large.', 'Send less.');
  assert.deepEqual(env, {
    ok: false,
    verb: '',
    error: { reason: 'payload_too_large', message: 'The body is too large.', hint: 'Send less.' },
  });
  assert.ok(Object.hasOwn(REASONS, env.error!.reason));
  // @ts-expect-error -- 'payload_too_larg' is no transport reason (tsc --noEmit fails if this compiles)
  transportEnvelope('', 'payload_too_larg', 'x');
});

test('packRefusals: one typed constructor per declared reason, with the declared hint', () => {
  const r = packRefusals({
    out_of_stock: { status: 409, kind: 'conflict', summary: 'No copies left.', hint: 'Order it.' },
    bad_isbn: { summary: 'Not an ISBN.' },
  });
  const e = r.out_of_stock('"Dune" is out of stock.');
  assert.equal(e.reason, 'out_of_stock');
  assert.equal(e.hint, 'Order it.');
  assert.equal(r.out_of_stock('x', { hint: 'Other.' }).hint, 'Other.');
  assert.equal(r.bad_isbn('978-0').hint, undefined);
  assert.equal(r.bad_isbn.reason, 'bad_isbn');
});

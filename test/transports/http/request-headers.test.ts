/**
 * Authorization and Idempotency-Key header reading, and the JSON body parser.
 * Spec: spec/transports.md §http-auth, §http-idempotency, §http-body.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { idempotencyKeyOf } from '../../../src/transports/http/request-headers.ts';
import { apiKeyOf } from '../../../src/identity/api-key-auth.ts';
import { parseJsonBody } from '../../../src/transports/http/json-body.ts';
import { isVerbError } from '../../../src/runtime/errors.ts';

test('apiKeyOf: no header is keyless; a Bearer token is the key; anything else is passed on to fail auth', () => {
  assert.equal(apiKeyOf(undefined), null);
  assert.equal(apiKeyOf('Bearer sk_solid_abc_def'), 'sk_solid_abc_def');
  assert.equal(apiKeyOf('bearer   sk_solid_abc_def '), 'sk_solid_abc_def');
  assert.equal(apiKeyOf('Basic dXNlcjpwYXNz'), 'Basic dXNlcjpwYXNz');
  assert.notEqual(apiKeyOf(''), null, 'an empty Authorization header is not "no key"');
  assert.notEqual(apiKeyOf('Bearer '), '', 'an empty token never reads as keyless');
});

test('idempotencyKeyOf: RFC 8941 sf-string or a bare token; malformed quoted values are refused', () => {
  assert.equal(idempotencyKeyOf(undefined), undefined);
  assert.equal(
    idempotencyKeyOf('"8e03978e-40d5-43e8-bc93-6894a57f9324"'),
    '8e03978e-40d5-43e8-bc93-6894a57f9324',
  );
  assert.equal(idempotencyKeyOf('"a \\"quoted\\" key"'), 'a "quoted" key');
  assert.equal(idempotencyKeyOf('"k";p=1'), 'k', 'parameters are ignored');
  assert.equal(
    idempotencyKeyOf('8e03978e-40d5-43e8-bc93-6894a57f9324'),
    '8e03978e-40d5-43e8-bc93-6894a57f9324',
  );
  assert.equal(idempotencyKeyOf(' order-42 '), 'order-42');
  for (const bad of ['"unterminated', '"bad \\x escape"']) {
    assert.throws(
      () => idempotencyKeyOf(bad),
      (e: unknown) => isVerbError(e) && e.reason === 'invalid_request',
      bad,
    );
  }
});

test('parseJsonBody: empty is no body, malformed names the position, poisoning is refused', () => {
  assert.equal(parseJsonBody(''), undefined);
  assert.equal(parseJsonBody('  \n'), undefined);
  assert.deepEqual(parseJsonBody('{"args":{"a":1}}'), { args: { a: 1 } });
  assert.deepEqual(
    parseJsonBody('{"args":{"note":"__proto__ is a word"}}'),
    { args: { note: '__proto__ is a word' } },
    'the word in a value is fine',
  );
  assert.throws(
    () => parseJsonBody('{"args": {,}}'),
    (e: unknown) =>
      isVerbError(e) && e.reason === 'invalid_request' && typeof e.details?.position === 'number',
  );
  assert.throws(
    () => parseJsonBody('[{"__proto__": {}}]'),
    (e: unknown) => isVerbError(e) && e.reason === 'invalid_request',
  );
});

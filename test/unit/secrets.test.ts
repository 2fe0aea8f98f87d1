/**
 * Secrets: a MAC made by `mac` verifies under `verifyMac` in exactly one spelling. A base64url
 * decoder ignores the spare low bits of the last character, so comparing decoded bytes would also
 * accept neighbouring spellings of the same MAC (a tampered CSRF token or nonce that still passes).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Secrets } from '../../src/runtime/secrets.ts';
import { spareBitTwin } from '../support/base64url.ts';

describe('Secrets.verifyMac', () => {
  const secrets = new Secrets([{ kid: 'k1', secret: randomBytes(32) }], randomBytes(32));

  it('accepts the MAC as made, and refuses another MAC, other data and an unknown kid', () => {
    const mac = secrets.mac('session', 'csrf.abc');
    assert.equal(secrets.verifyMac('session', 'csrf.abc', mac, 'k1'), true);
    assert.equal(secrets.verifyMac('session', 'csrf.abd', mac, 'k1'), false);
    assert.equal(
      secrets.verifyMac('nonce', 'csrf.abc', mac, 'k1'),
      false,
      'another purpose derives another key',
    );
    assert.equal(secrets.verifyMac('session', 'csrf.abc', mac, 'k2'), false);
    assert.equal(secrets.verifyMac('session', 'csrf.abc', '', 'k1'), false);
  });

  it('refuses a spelling that decodes to the same bytes (spare bits of the last character, padding, stray characters)', () => {
    for (let i = 0; i < 64; i++) {
      const mac = secrets.mac('session', `csrf.${i}`);
      const twin = spareBitTwin(mac);
      assert.deepEqual(
        Buffer.from(twin, 'base64url'),
        Buffer.from(mac, 'base64url'),
        'the twin decodes to the same bytes',
      );
      assert.equal(secrets.verifyMac('session', `csrf.${i}`, twin, 'k1'), false, `twin ${twin} of ${mac}`);
      assert.equal(secrets.verifyMac('session', `csrf.${i}`, `${mac}=`, 'k1'), false);
      assert.equal(
        secrets.verifyMac('session', `csrf.${i}`, `${mac.slice(0, 10)}.${mac.slice(10)}`, 'k1'),
        false,
      );
    }
  });
});

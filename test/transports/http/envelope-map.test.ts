/**
 * envelopeToHttp: the one envelope → HTTP mapping follows the reason table for every reason and
 * adds the headers HTTP clients rely on. Spec: spec/transports.md §http-status.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { envelopeToHttp } from '../../../src/transports/http/envelope-map.ts';
import { REASONS, defineReasons } from '../../../src/spec/reasons.ts';

test('every reason maps to its status from the reason table; ok is 200, dispatch_pending 202', () => {
  assert.equal(envelopeToHttp({ ok: true, verb: 'v', result: {} }).status, 200);
  for (const [reason, info] of Object.entries(REASONS)) {
    const a = envelopeToHttp({ ok: false, verb: 'v', error: { reason, message: 'm' } });
    assert.equal(a.status, info.status, reason);
  }
  assert.equal(
    envelopeToHttp({ ok: false, verb: 'v', error: { reason: 'dispatch_pending', message: 'm' } }).status,
    202,
  );
  assert.equal(
    envelopeToHttp({ ok: false, verb: 'v', error: { reason: 'store_unavailable', message: 'm' } }).status,
    503,
  );
});

test('declared domain reasons use their status; undeclared ones 422', () => {
  defineReasons({ http_test_already_paid: { status: 409, summary: 'Paid.' } });
  assert.equal(
    envelopeToHttp({ ok: false, verb: 'v', error: { reason: 'http_test_already_paid', message: 'm' } })
      .status,
    409,
  );
  assert.equal(
    envelopeToHttp({ ok: false, verb: 'v', error: { reason: 'http_test_never_declared', message: 'm' } })
      .status,
    422,
  );
});

test('the body is the envelope unchanged; every answer is no-store', () => {
  const env = {
    ok: false,
    verb: 'v',
    error: { reason: 'role_denied', message: 'm', hint: 'h' },
    audit_id: 7,
  };
  const a = envelopeToHttp(env);
  assert.equal(a.body, env);
  assert.equal(a.headers['cache-control'], 'no-store');
});

test('401 answers carry WWW-Authenticate: Bearer (invalid_token for a bad key)', () => {
  assert.equal(
    envelopeToHttp({ ok: false, verb: 'v', error: { reason: 'auth_required', message: 'm' } }).headers[
      'www-authenticate'
    ],
    'Bearer',
  );
  assert.equal(
    envelopeToHttp({ ok: false, verb: 'v', error: { reason: 'auth_invalid', message: 'm' } }).headers[
      'www-authenticate'
    ],
    'Bearer error="invalid_token"',
  );
  assert.equal(
    envelopeToHttp({ ok: false, verb: 'v', error: { reason: 'role_denied', message: 'm' } }).headers[
      'www-authenticate'
    ],
    undefined,
  );
});

test('daily_cap_exceeded carries Retry-After = whole seconds until resets_at', () => {
  const now = Date.parse('2026-03-01T23:59:00.500Z');
  const a = envelopeToHttp(
    {
      ok: false,
      verb: 'v',
      error: {
        reason: 'daily_cap_exceeded',
        message: 'm',
        details: { resets_at: '2026-03-02T00:00:00.000Z' },
      },
    },
    now,
  );
  assert.equal(a.status, 429);
  assert.equal(a.headers['retry-after'], '60');
  const past = envelopeToHttp(
    {
      ok: false,
      verb: 'v',
      error: { reason: 'daily_cap_exceeded', message: 'm', details: { resets_at: '2026-03-01T00:00:00Z' } },
    },
    now,
  );
  assert.equal(past.headers['retry-after'], '0');
  const rl = envelopeToHttp(
    {
      ok: false,
      verb: 'v',
      error: { reason: 'rate_limited', message: 'm', details: { retry_after_seconds: 2.2 } },
    },
    now,
  );
  assert.equal(rl.headers['retry-after'], '3');
});

test('replays carry Idempotent-Replayed: true; first answers do not', () => {
  assert.equal(
    envelopeToHttp({ ok: true, verb: 'v', result: {}, replayed: true }).headers['idempotent-replayed'],
    'true',
  );
  assert.equal(envelopeToHttp({ ok: true, verb: 'v', result: {} }).headers['idempotent-replayed'], undefined);
});

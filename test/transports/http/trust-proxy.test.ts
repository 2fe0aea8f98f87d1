/**
 * `solid serve --trust-proxy` given bare, as docs/configuration.md shows it, behind a proxy that
 * appends the client's address to X-Forwarded-For (nginx's `$proxy_add_x_forwarded_for`).
 * A client that forges the left-most entry must not escape its per-address budget: a bare value
 * trusts only loopback, and the client is the right-most address no trusted proxy added
 * (spec/transports.md §http-proxy).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cliHarness } from '../../support/cli.ts';
import { serve } from '../../reliability/serve-process.ts';
import { parseTrustProxy } from '../../../src/identity/origin-policy.ts';

test('a bare --trust-proxy value trusts loopback only, never every peer', () => {
  assert.equal(parseTrustProxy(true), 'loopback');
  assert.equal(parseTrustProxy('true'), 'loopback');
  assert.equal(parseTrustProxy(undefined), 'loopback');
});

test(
  'bare --trust-proxy: a forged left-most X-Forwarded-For still meets the address limit',
  { timeout: 120_000 },
  async (t) => {
    const cli = cliHarness(t);
    const init = await cli.run(['init', '--json']);
    assert.equal(init.code, 0, init.stderr);
    const s = await serve(t, cli.db, ['--trust-proxy', '--rate-limit-address', '20']);
    // The proxy (this loopback peer) appended the real client, 198.51.100.7; the client forged the rest.
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await fetch(`${s.base}/api/v1/agent/dispatch/audit.trail`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer sk_solid_nope_nope',
          'x-forwarded-for': `203.0.113.${i + 1}, 198.51.100.7`,
        },
        body: JSON.stringify({ args: {} }),
      });
      statuses.push(res.status);
      await res.arrayBuffer();
    }
    const limited = statuses.filter((code) => code === 429).length;
    assert.ok(
      limited >= 9,
      `expected the client's address to be limited after 20 calls: ${statuses.join(',')}`,
    );
  },
);

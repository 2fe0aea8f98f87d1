/**
 * The dashboard page and its browser files count against the keyless per-address rate limit
 * (spec/transports.md §rate-limits): one address fetching them 1000 times in a window gets the
 * first `perAddress` answers and then 429 rate_limited with Retry-After — a cached 304 counts
 * too — while another address is still served.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestRuntime } from '../../support/runtime.ts';
import { createHttpServer } from '../../../src/transports/http/server.ts';
import { createWebmcpPlugin } from '../../../src/transports/webmcp/index.ts';
import { DEFAULT_RATE_LIMITS } from '../../../src/transports/http/rate-limit.ts';

const T0 = Date.parse('2026-03-02T10:00:05.000Z');

describe('dashboard rate limit', () => {
  for (const url of ['/', '/webmcp.js', '/dashboard.js', '/dashboard.css']) {
    it(`GET ${url} 1000 times from one address meets 429 past the per-address limit`, async (t) => {
      const h = await createTestRuntime(t, { clock: () => new Date(T0) });
      const app = createHttpServer(h.rt, {
        logger: false,
        rateLimits: {},
        plugins: [createWebmcpPlugin()],
      });
      t.after(() => app.close());
      await app.ready();
      const first = await app.inject({ method: 'GET', url, remoteAddress: '203.0.113.9' });
      assert.equal(first.statusCode, 200);
      const etag = String(first.headers.etag);
      const codes = new Map<number, number>();
      let last;
      for (let i = 1; i < 1000; i++) {
        // Half of them revalidate with the ETag (304): a cached copy is no way around the limit.
        last = await app.inject({
          method: 'GET',
          url,
          remoteAddress: '203.0.113.9',
          headers: i % 2 === 0 ? { 'if-none-match': etag } : {},
        });
        codes.set(last.statusCode, (codes.get(last.statusCode) ?? 0) + 1);
      }
      assert.equal((codes.get(200) ?? 0) + (codes.get(304) ?? 0), DEFAULT_RATE_LIMITS.perAddress - 1);
      assert.equal(codes.get(429), 1000 - DEFAULT_RATE_LIMITS.perAddress);
      assert.equal(last!.statusCode, 429);
      assert.equal(last!.json().error.reason, 'rate_limited');
      assert.match(String(last!.headers['retry-after']), /^\d+$/);
      const other = await app.inject({ method: 'GET', url, remoteAddress: '198.51.100.4' });
      assert.equal(other.statusCode, 200, 'another address is still served');
    });
  }
});

/**
 * The demo business pack in the browser: on every WebMCP page surface, /webmcp.js registers
 * exactly the manifest's tools — every demo verb's name, description and input schema is accepted
 * by Chromium's native model context and by the polyfill. (Calls are covered by the other browser
 * tests and by the HTTP tests; this one catches schemas or names a browser would refuse.)
 *
 * Run: node --import tsx --test test/browser/webmcp-demo-pack.test.ts
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KNOWN_PACKS } from '../../src/packs.ts';
import { WEBMCP_SURFACES } from '../../src/spec/types.ts';
import type { WebmcpManifest } from '../../src/transports/webmcp/index.ts';
import { launchChromium, listToolsInMainWorld, skipUnlessChromium } from '../support/browser.ts';
import { listenLoopback, webmcpFixture } from '../transports/webmcp/fixture.ts';
import { SURFACE_PAGES, TEST_TIMEOUT_MS, moduleMode, openToolPage } from './webmcp-pages.ts';

const skip =
  skipUnlessChromium() ?? (KNOWN_PACKS.demo === undefined ? 'no demo pack in this build' : undefined);

describe('demo pack verbs register on every WebMCP page surface', { skip }, () => {
  for (const native of [true, false]) {
    it(
      `${native ? 'native WebMCP' : 'polyfill'}: registered tools equal the manifest on each surface`,
      { timeout: TEST_TIMEOUT_MS },
      async (t) => {
        const f = await webmcpFixture(t, {}, SURFACE_PAGES);
        const pack = await KNOWN_PACKS.demo!();
        await f.rt.store.migrate(pack.name, pack.migrations);
        f.rt.register(...pack.verbs);
        const origin = await listenLoopback(f.app);
        const browser = await launchChromium({ webmcp: native });
        t.after(() => browser.close());
        const context = await browser.newContext();
        let demoTools = 0;
        for (const surface of WEBMCP_SURFACES) {
          const manifest = (
            await f.app.inject({ method: 'GET', url: `/api/v1/webmcp/manifest?surface=${surface}` })
          ).json() as WebmcpManifest;
          const expected = manifest.tools.map((tool) => tool.name).sort();
          demoTools += manifest.tools.filter((tool) => pack.verbs.some((v) => v.name === tool.verb)).length;
          const { page, registered } = await openToolPage(context, `${origin}/test/${surface}.html`);
          assert.equal(await moduleMode(page), native ? 'native' : 'polyfill');
          assert.deepEqual([...registered].sort(), expected, `${surface}: registered`);
          assert.deepEqual(
            (await listToolsInMainWorld(page)).map((tool) => tool.name),
            expected,
            `${surface}: listed by the model context`,
          );
          await page.close();
        }
        assert.ok(demoTools > 0, 'the demo pack puts verbs on at least one WebMCP surface');
        t.diagnostic(`${demoTools} demo tool registrations across ${WEBMCP_SURFACES.length} surfaces`);
      },
    );
  }
});

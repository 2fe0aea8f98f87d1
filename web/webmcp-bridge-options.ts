/**
 * Imported first by web/webmcp-bridge.ts, before @mcp-b/global is evaluated:
 * - @mcp-b/global initialises itself when its module is evaluated unless
 *   `window.__webModelContextOptions.autoInitialize` is false, and its default transport accepts
 *   messages from any origin; module evaluation follows import order, so setting the option here
 *   lets the bridge page initialise it itself, with its own origin only;
 * - the MCP SDK's Zod schemas probe once for `new Function` to compile faster parsers; under the
 *   bridge page's CSP (no `'unsafe-eval'`) the probe is refused, caught, and Zod interprets
 *   instead. Setting Zod's `jitless` here skips the probe, so the page makes no eval attempt at
 *   all (and reports no CSP violation). Zod keeps this setting on `globalThis`, shared by every
 *   copy bundled into the page.
 */
import { config } from 'zod/v4/core';

config({ jitless: true });

(window as unknown as { __webModelContextOptions?: { autoInitialize: boolean } }).__webModelContextOptions = {
  autoInitialize: false,
};

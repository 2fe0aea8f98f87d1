/**
 * The dashboard and the browser module (spec/transports.md §webmcp-module, §webmcp-dashboard):
 *
 *   GET /                        the dashboard page (web/dashboard.html), strict CSP, no inline script
 *   GET /approvals/:approval_id  the same page, showing one approval (spec/consent.md §approval-page)
 *   GET /enrol/:token            the same page, enrolling a person from a one-time link
 *   GET /dashboard.js            the dashboard script (bundled from web/dashboard.ts)
 *   GET /dashboard.css           its style sheet
 *   GET /webmcp.js               the WebMCP browser module (bundled from web/webmcp.ts)
 *   GET /webmcp-bridge           the MCP-B bridge page (web/webmcp-bridge.html), its own CSP
 *   GET /webmcp-bridge.js        its script (bundled from web/webmcp-bridge.ts with @mcp-b/global)
 *
 * Static answers carry a strong ETag and `Cache-Control: no-cache` (304 on If-None-Match).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HIDDEN } from './route-docs.ts';
import { webAsset, type WebAssetName } from './web-assets.ts';

/**
 * The dashboard's Content-Security-Policy: scripts, styles and connections from this origin only;
 * no inline script or style element, no framing, no plugins, forms post only here.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The MCP-B bridge page's Content-Security-Policy (spec/transports.md §webmcp-bridge). Its own
 * policy, so the bridge's needs never widen the dashboard's: the page runs only
 * /webmcp-bridge.js (the bridge and the tool registrations) and talks only to this origin. No
 * style, no form, no framing. @mcp-b/global 5.1.0 runs without `'unsafe-eval'` (it validates with
 * an interpreter, and Zod's eval probe is caught): test/browser/webmcp-bridge.test.ts.
 */
export const BRIDGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

async function serveAsset(
  name: WebAssetName,
  request: FastifyRequest,
  reply: FastifyReply,
  extraHeaders: Record<string, string> = {},
) {
  const file = await webAsset(name);
  reply.headers({
    etag: file.etag,
    'cache-control': 'no-cache',
    'x-content-type-options': 'nosniff',
    ...extraHeaders,
  });
  if (request.headers['if-none-match'] === file.etag) return reply.code(304).send();
  return reply.type(file.contentType).send(file.body);
}

/** Register the module and, unless `dashboard` is false, the page and its assets. */
export function registerDashboardRoutes(app: FastifyInstance, deps: { dashboard: boolean }): void {
  app.get('/webmcp.js', { config: HIDDEN }, function webmcpModule(request, reply) {
    return serveAsset('webmcp.js', request, reply);
  });
  if (!deps.dashboard) return;
  // The approval page and the enrolment page are the dashboard page too (web/dashboard.ts routes
  // on the path), under the same strict CSP; an enrolment token in the path is sent to nobody.
  for (const path of ['/', '/approvals/:approval_id', '/enrol/:token'])
    app.get(path, { config: HIDDEN }, function dashboardPage(request, reply) {
      return serveAsset('dashboard.html', request, reply, {
        'content-security-policy': DASHBOARD_CSP,
        'referrer-policy': path === '/enrol/:token' ? 'no-referrer' : 'same-origin',
        'x-frame-options': 'DENY',
        'cross-origin-opener-policy': 'same-origin',
      });
    });
  app.get('/dashboard.js', { config: HIDDEN }, function dashboardScript(request, reply) {
    return serveAsset('dashboard.js', request, reply);
  });
  app.get('/dashboard.css', { config: HIDDEN }, function dashboardStyles(request, reply) {
    return serveAsset('dashboard.css', request, reply);
  });
  // The MCP-B bridge page: the bridge and the tool registrations only, under its own CSP.
  app.get('/webmcp-bridge', { config: HIDDEN }, function bridgePage(request, reply) {
    return serveAsset('webmcp-bridge.html', request, reply, {
      'content-security-policy': BRIDGE_CSP,
      'referrer-policy': 'same-origin',
      'x-frame-options': 'DENY',
      'cross-origin-opener-policy': 'same-origin',
    });
  });
  app.get('/webmcp-bridge.js', { config: HIDDEN }, function bridgeScript(request, reply) {
    return serveAsset('webmcp-bridge.js', request, reply);
  });
}

/**
 * /webmcp-bridge.js — the script of the MCP-B bridge page, GET /webmcp-bridge (bundled by esbuild
 * with @mcp-b/global and its MCP server). Spec: spec/transports.md §webmcp-bridge.
 *
 * MCP-B clients (the MCP-B browser extension, or a page script with @mcp-b/transports'
 * TabClientTransport) reach a page's tools through @mcp-b/global, which replaces
 * `document.modelContext` with an MCP server answering over `postMessage`. This page runs that
 * bridge and the page surface's tool registrations, and nothing of the dashboard:
 *   1. initialises @mcp-b/global with its tab transport limited to this page's own origin (not
 *      the library's default `*`) and no iframe transport;
 *   2. reads the page surface from `?surface=` (default `dashboard`; one of the five);
 *   3. asks GET /api/v1/session; without a session only `public` registers tools (the keyless
 *      sandbox), other surfaces register none and the page says to sign in on the dashboard;
 *   4. registers the surface's tools (web/webmcp-core.ts). A tool's `execute` is one POST to
 *      /api/v1/webmcp/execute/{name} — the same route, session and CSRF rules as the dashboard's
 *      WebMCP tools, so the call is the signed-in user's agent's — and returns the envelope as a
 *      tool result. There is no consent dialog: a `dispatch_pending` answer goes back to the
 *      agent as is (a person approves on the dashboard or the approval page); nothing here can
 *      approve, take a typed phrase or change a consent setting.
 *
 * `document.body.dataset.state` is `loading`, `ready`, `signed-out` or `failed`;
 * `dataset.webmcp` the provider in charge (`mcp-b` once the bridge is installed);
 * `window.solidWebmcp` the connection, as on other pages.
 */
import './webmcp-bridge-options.ts';
import { initializeWebModelContext } from '@mcp-b/global';
import { execute, fetchCsrfToken } from './verb-client.ts';
import { connectWith, providerOf, toToolResult, type ToolCaller } from './webmcp-core.ts';
import { WEBMCP_SURFACES, type WebmcpSurface } from '../src/spec/types.ts';

/** One call, no dialog: the envelope as the agent's tool result (see the header). */
const agentCall: ToolCaller = async (call, signal) => {
  const envelope = await execute(
    call.tool,
    { kind: 'webmcp', surface: call.surface },
    { input: call.input },
    signal,
  );
  return toToolResult(envelope, false);
};

function show(state: 'ready' | 'signed-out' | 'failed', message: string): void {
  document.body.dataset.state = state;
  const status = document.getElementById('bridge-status');
  if (status !== null) status.textContent = message;
}

async function start(): Promise<void> {
  const surface = new URLSearchParams(location.search).get('surface') ?? 'dashboard';
  if (!(WEBMCP_SURFACES as readonly string[]).includes(surface)) {
    show('failed', `Unknown page surface "${surface}"; use one of ${WEBMCP_SURFACES.join(', ')}.`);
    return;
  }
  initializeWebModelContext({
    transport: { tabServer: { allowedOrigins: [location.origin] }, iframeServer: false },
    installTestingShim: false,
  });
  const context = (document as unknown as { modelContext?: unknown }).modelContext;
  document.body.dataset.webmcp = context === undefined ? 'none' : providerOf(context);
  document.body.dataset.surface = surface;
  const signedIn = (await fetchCsrfToken()) !== undefined;
  if (!signedIn && surface !== 'public') {
    show('signed-out', 'No session: sign in on the dashboard, then reload this page.');
    return;
  }
  const connection = connectWith({ surface: surface as WebmcpSurface }, agentCall);
  const names = await connection.ready;
  document.body.dataset.webmcp = connection.mode;
  show('ready', `${names.length} tools of the ${surface} page surface are reachable through MCP-B.`);
}

start().catch((err: unknown) => {
  show('failed', `The bridge could not start: ${String((err as Error)?.message ?? err)}`);
});

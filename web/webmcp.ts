/**
 * /webmcp.js — the WebMCP browser module (served as an ES module, bundled by esbuild at run time).
 *
 * Load it with `<script type="module" src="/webmcp.js" data-surface="portal"></script>` (or a
 * `<meta name="webmcp-surface" content="portal">`) and it connects on load; or import it and call
 * `connect({ surface })` yourself (the dashboard does, after login). `data-toolsets="crm,payments"`
 * (or `<meta name="webmcp-toolsets">`, or `connect({ surface, toolsets })`) registers only those
 * verb categories (plus verbs.list and audit.revert): the manifest's `toolsets` parameter.
 *
 * connect({ surface, pollMs? }) → WebmcpConnection:
 *   1. picks `document.modelContext` when present (native WebMCP, or an @mcp-b/global bridge the
 *      page or an extension installed), else installs the bundled @mcp-b/webmcp-polyfill (secure
 *      contexts only);
 *   2. fetches GET /api/v1/webmcp/manifest?surface=… and registers every tool with
 *      `registerTool({ name, title, description, inputSchema, annotations, execute }, { signal })`,
 *      one AbortController per tool;
 *   3. re-reads the manifest every `pollMs` (default 5 min) with If-None-Match; a removed or changed
 *      tool is withdrawn by aborting its signal (then re-registered when changed).
 *
 * A tool's `execute(input, { signal })` POSTs to /api/v1/webmcp/execute/{name} with the session's
 * CSRF token; a dispatch_pending answer opens the consent dialog (typed phrase when the gate needs
 * one) and re-calls with confirm + nonce (+ typed_phrase). It returns, never throws (a thrown error
 * reaches the agent only as an opaque UnknownError):
 *   ok        { content: [{ type: 'text', text: JSON of result }], structuredContent: result }
 *   error     { isError: true, content: [{ type: 'text', text: 'reason: message hint' }], structuredContent: envelope }
 *   declined  the same error shape with reason "declined"
 *
 * `window.solidWebmcp` is the current connection (ready: Promise<string[]>, tools(), refresh(),
 * disconnect(), mode: 'native' | 'polyfill' | 'mcp-b' | 'none', read anew each time). The
 * registration itself lives in web/webmcp-core.ts, shared with the MCP-B bridge page.
 * Spec: spec/transports.md §webmcp-module; research mcp-webmcp.md §10–13.
 */
import { callWithConsent } from './verb-client.ts';
import { connectWith, toToolResult, type ToolCaller, type WebmcpConnection } from './webmcp-core.ts';
import type { WebmcpSurface } from '../src/spec/types.ts';

export {
  currentConnection,
  MANIFEST_POLL_MS,
  providerOf,
  toToolResult,
  type ToolResult,
  type WebmcpConnection,
  type WebmcpMode,
} from './webmcp-core.ts';

/** A page tool's call: the consent loop of §webmcp-consent, answered by the human in the dialog. */
const withConsentDialog: ToolCaller = async (call, signal) => {
  const outcome = await callWithConsent(
    {
      tool: call.tool,
      title: call.title,
      input: call.input,
      target: { kind: 'webmcp', surface: call.surface },
    },
    signal,
  );
  return toToolResult(outcome.envelope, outcome.declined);
};

/**
 * Register the tools of a page surface (see the header). Calling it again for the same surface
 * returns the live connection; for another surface it disconnects the previous one first.
 */
export function connect(options: {
  surface: WebmcpSurface;
  pollMs?: number;
  /** Only these toolsets (verb categories) plus verbs.list and audit.revert; default all. */
  toolsets?: readonly string[];
}): WebmcpConnection {
  return connectWith(options, withConsentDialog);
}

function autoSurface(): string | undefined {
  const self = [...document.querySelectorAll<HTMLScriptElement>('script[type="module"][src]')].find(
    (s) => s.src === import.meta.url,
  );
  const fromScript = self?.dataset.surface;
  if (fromScript !== undefined && fromScript !== '') return fromScript;
  const meta = document.querySelector<HTMLMetaElement>('meta[name="webmcp-surface"]');
  return meta?.content || undefined;
}

/** `data-toolsets="crm,payments"` on the script, or `<meta name="webmcp-toolsets">`; none → all. */
function autoToolsets(): string[] | undefined {
  const self = [...document.querySelectorAll<HTMLScriptElement>('script[type="module"][src]')].find(
    (s) => s.src === import.meta.url,
  );
  const raw =
    self?.dataset.toolsets ??
    document.querySelector<HTMLMetaElement>('meta[name="webmcp-toolsets"]')?.content ??
    '';
  const names = raw
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  return names.length > 0 ? names : undefined;
}

const SURFACES: readonly string[] = ['dashboard', 'portal', 'developer', 'tenant-site', 'public'];
const auto = autoSurface();
if (auto !== undefined) {
  if (SURFACES.includes(auto)) {
    const toolsets = autoToolsets();
    connect({ surface: auto as WebmcpSurface, ...(toolsets !== undefined ? { toolsets } : {}) });
  } else console.warn(`webmcp: unknown surface "${auto}"; expected one of ${SURFACES.join(', ')}`);
}

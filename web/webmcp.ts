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
 *   1. picks `document.modelContext` (native WebMCP) when present, else installs the bundled
 *      @mcp-b/webmcp-polyfill (secure contexts only);
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
 * disconnect(), mode).
 * Spec: spec/transports.md §webmcp-module; research mcp-webmcp.md §10–13.
 */
import { initializeWebMCPPolyfill } from '@mcp-b/webmcp-polyfill';
import { callWithConsent } from './verb-client.ts';
import type { Envelope, WebmcpSurface } from '../src/spec/types.ts';
import type { WebmcpTool as ManifestTool } from '../src/transports/webmcp/manifest.ts';

/** What `execute` returns to the browser's agent. */
export interface ToolResult {
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: true;
}

interface ModelContextTool {
  name: string;
  title?: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: Record<string, boolean>;
  execute(input: unknown, options?: { signal?: AbortSignal }): Promise<ToolResult>;
}

interface ModelContextLike {
  registerTool(tool: ModelContextTool, options: { signal: AbortSignal }): Promise<void> | void;
  __isWebMCPPolyfill?: boolean;
}

/** A live registration of one surface's tools. */
export interface WebmcpConnection {
  readonly surface: WebmcpSurface;
  /** 'native' (browser WebMCP), 'polyfill', or 'none' (no model context could be installed). */
  readonly mode: 'native' | 'polyfill' | 'none';
  /** Resolves with the registered tool names after the first manifest load. */
  readonly ready: Promise<string[]>;
  /** Names currently registered, sorted. */
  tools(): string[];
  /** Re-read the manifest now; resolves with the registered names. */
  refresh(): Promise<string[]>;
  /** Withdraw every tool and stop polling. */
  disconnect(): void;
}

/** Default manifest poll interval: 5 minutes, in ms. */
export const MANIFEST_POLL_MS = 5 * 60 * 1000;

function modelContext(): { context: ModelContextLike; mode: 'native' | 'polyfill' } | undefined {
  const doc = document as unknown as { modelContext?: ModelContextLike };
  const existing = doc.modelContext;
  if (existing !== undefined && typeof existing.registerTool === 'function') {
    return { context: existing, mode: existing.__isWebMCPPolyfill === true ? 'polyfill' : 'native' };
  }
  if (!window.isSecureContext) return undefined;
  initializeWebMCPPolyfill();
  const installed = doc.modelContext;
  return installed !== undefined && typeof installed.registerTool === 'function'
    ? { context: installed, mode: 'polyfill' }
    : undefined;
}

function text(value: string): { type: 'text'; text: string } {
  return { type: 'text', text: value };
}

/** Turn an envelope (or a declined consent) into a tool result (see the header). */
export function toToolResult(envelope: Envelope, declined: boolean): ToolResult {
  if (declined) {
    const declinedEnvelope: Envelope = {
      ok: false,
      verb: envelope.verb,
      error: {
        reason: 'declined',
        message: 'The human declined the confirmation; nothing was done.',
        hint: 'Do not retry the same action unless the human asks for it.',
      },
    };
    return {
      isError: true,
      content: [text(`declined: ${declinedEnvelope.error!.message}`)],
      structuredContent: declinedEnvelope as unknown as Record<string, unknown>,
    };
  }
  if (envelope.ok) {
    const result = envelope.result ?? {};
    return { content: [text(JSON.stringify(result))], structuredContent: result };
  }
  const error = envelope.error ?? { reason: 'internal_error', message: 'No error was given.' };
  const line = `${error.reason}: ${error.message}${error.hint !== undefined ? ` ${error.hint}` : ''}`;
  return {
    isError: true,
    content: [text(line)],
    structuredContent: envelope as unknown as Record<string, unknown>,
  };
}

function signature(tool: ManifestTool): string {
  return JSON.stringify(tool);
}

let current: (WebmcpConnection & { disconnected: boolean }) | undefined;
/** The manifest query of the current connection (surface and toolsets). */
let currentQuery: string | undefined;

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
  const toolsets = (options.toolsets ?? []).map((n) => n.trim()).filter((n) => n !== '');
  const query = `surface=${encodeURIComponent(options.surface)}${
    toolsets.length > 0 ? `&toolsets=${encodeURIComponent(toolsets.join(','))}` : ''
  }`;
  if (
    current !== undefined &&
    !current.disconnected &&
    current.surface === options.surface &&
    currentQuery === query
  )
    return current;
  current?.disconnect();
  currentQuery = query;
  const surface = options.surface;
  const picked = modelContext();
  const registered = new Map<string, { controller: AbortController; signature: string }>();
  let etag: string | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  let inflight: Promise<string[]> | undefined;

  const names = (): string[] => [...registered.keys()].sort();

  async function register(context: ModelContextLike, tool: ManifestTool): Promise<void> {
    const controller = new AbortController();
    registered.set(tool.name, { controller, signature: signature(tool) });
    const definition: ModelContextTool = {
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema,
      annotations: { ...tool.annotations },
      async execute(input: unknown, callOptions?: { signal?: AbortSignal }): Promise<ToolResult> {
        const outcome = await callWithConsent(
          {
            tool: tool.name,
            title: tool.title ?? tool.verb,
            input: input ?? {},
            target: { kind: 'webmcp', surface },
          },
          callOptions?.signal,
        );
        return toToolResult(outcome.envelope, outcome.declined);
      },
    };
    if (tool.title !== undefined) definition.title = tool.title;
    try {
      await context.registerTool(definition, { signal: controller.signal });
    } catch (err) {
      if (controller.signal.aborted) return;
      registered.delete(tool.name);
      console.warn(`webmcp: could not register ${tool.name}:`, err);
    }
  }

  async function load(): Promise<string[]> {
    if (picked === undefined || connection.disconnected) return names();
    const res = await fetch(`/api/v1/webmcp/manifest?${query}`, {
      credentials: 'same-origin',
      cache: 'no-store',
      headers: etag !== undefined ? { 'if-none-match': etag } : {},
    });
    if (res.status === 304) return names();
    if (!res.ok) throw new Error(`webmcp: manifest answered HTTP ${res.status}`);
    const manifest = (await res.json()) as { tools: ManifestTool[] };
    if (connection.disconnected) return names();
    etag = res.headers.get('etag') ?? undefined;
    const next = new Map(manifest.tools.map((t) => [t.name, t]));
    for (const [name, entry] of registered) {
      const tool = next.get(name);
      if (tool === undefined || signature(tool) !== entry.signature) {
        entry.controller.abort(new DOMException(`webmcp: ${name} withdrawn`, 'AbortError'));
        registered.delete(name);
      }
    }
    await Promise.all(
      [...next.values()].filter((t) => !registered.has(t.name)).map((t) => register(picked.context, t)),
    );
    return names();
  }

  function refresh(): Promise<string[]> {
    inflight ??= load().finally(() => {
      inflight = undefined;
    });
    return inflight;
  }

  const connection: WebmcpConnection & { disconnected: boolean } = {
    surface,
    mode: picked?.mode ?? 'none',
    ready: Promise.resolve([]),
    disconnected: false,
    tools: names,
    refresh,
    disconnect() {
      if (connection.disconnected) return;
      connection.disconnected = true;
      if (timer !== undefined) clearInterval(timer);
      for (const [name, entry] of registered)
        entry.controller.abort(new DOMException(`webmcp: ${name} withdrawn`, 'AbortError'));
      registered.clear();
      if (current === connection) current = undefined;
    },
  };
  (connection as { ready: Promise<string[]> }).ready = refresh();
  connection.ready.catch((err: unknown) => console.warn('webmcp: first manifest load failed:', err));
  const pollMs = options.pollMs ?? MANIFEST_POLL_MS;
  if (picked !== undefined && pollMs > 0) {
    timer = setInterval(() => {
      refresh().catch((err: unknown) => console.warn('webmcp: manifest refresh failed:', err));
    }, pollMs);
  }
  current = connection;
  (window as unknown as { solidWebmcp?: WebmcpConnection }).solidWebmcp = connection;
  return connection;
}

/** The live connection, if any. */
export function currentConnection(): WebmcpConnection | undefined {
  return current;
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

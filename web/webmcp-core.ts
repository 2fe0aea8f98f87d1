/**
 * The page-side core of WebMCP, shared by /webmcp.js (web/webmcp.ts: pages and the dashboard, with
 * the human's consent dialog) and /webmcp-bridge.js (web/webmcp-bridge.ts: the MCP-B bridge page,
 * no dialog). It picks the model context, reads the manifest, registers one tool per verb and keeps
 * the registrations in step with the manifest; what a tool's `execute` does is the caller's
 * {@link ToolCaller}.
 *
 *   connectWith({ surface, pollMs?, toolsets? }, caller) → WebmcpConnection
 *   providerOf(context)  who is in charge of a model context: 'mcp-b' (the @mcp-b/global bridge,
 *                        whatever it wraps), 'polyfill' (@mcp-b/webmcp-polyfill) or 'native'
 *   toToolResult(envelope, declined) → ToolResult
 *
 * Spec: spec/transports.md §webmcp-module, §webmcp-bridge; research mcp-webmcp.md §10–13.
 */
import { initializeWebMCPPolyfill } from '@mcp-b/webmcp-polyfill';
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
  /** Set by @mcp-b/webmcp-polyfill on its model context. */
  __isWebMCPPolyfill?: boolean;
  /** Set by @mcp-b/global's BrowserMcpServer, which replaces `document.modelContext` with itself. */
  __isBrowserMcpServer?: boolean;
}

/**
 * Who provides the page's model context: 'native' (the browser's WebMCP), 'polyfill'
 * (@mcp-b/webmcp-polyfill), 'mcp-b' (@mcp-b/global's bridge, which wraps native or polyfill and
 * answers MCP-B clients), or 'none' (no model context could be installed).
 */
export type WebmcpMode = 'native' | 'polyfill' | 'mcp-b' | 'none';

/**
 * The provider of a model context (see {@link WebmcpMode}). The MCP-B bridge is checked first:
 * it wraps the native or polyfilled context and is the one agents' MCP-B clients talk to.
 */
export function providerOf(context: unknown): Exclude<WebmcpMode, 'none'> {
  const marks = context as ModelContextLike;
  if (marks.__isBrowserMcpServer === true) return 'mcp-b';
  return marks.__isWebMCPPolyfill === true ? 'polyfill' : 'native';
}

/** The page's current model context, if it has one that can register tools. */
function currentContext(): ModelContextLike | undefined {
  const existing = (document as unknown as { modelContext?: ModelContextLike }).modelContext;
  return existing !== undefined && typeof existing.registerTool === 'function' ? existing : undefined;
}

/** What a registered tool's `execute` runs: one call of `tool` on the page surface. Never throws. */
export type ToolCaller = (
  call: { tool: string; title: string; input: unknown; surface: WebmcpSurface },
  signal?: AbortSignal,
) => Promise<ToolResult>;

/** A live registration of one surface's tools. */
export interface WebmcpConnection {
  readonly surface: WebmcpSurface;
  /**
   * Who provides the page's model context now (read anew each time: an MCP-B bridge installed
   * after the tools were registered takes over, and is reported): see {@link WebmcpMode}.
   */
  readonly mode: WebmcpMode;
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

function modelContext(): { context: ModelContextLike } | undefined {
  const existing = currentContext();
  if (existing !== undefined) return { context: existing };
  if (!window.isSecureContext) return undefined;
  initializeWebMCPPolyfill();
  const installed = currentContext();
  return installed !== undefined ? { context: installed } : undefined;
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
 * Register the tools of a page surface, each running `caller` (see the header). Calling it again
 * for the same surface returns the live connection; for another surface it disconnects the
 * previous one first.
 */
export function connectWith(
  options: {
    surface: WebmcpSurface;
    pollMs?: number;
    /** Only these toolsets (verb categories) plus verbs.list and audit.revert; default all. */
    toolsets?: readonly string[];
  },
  caller: ToolCaller,
): WebmcpConnection {
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
      execute(input: unknown, callOptions?: { signal?: AbortSignal }): Promise<ToolResult> {
        return caller(
          { tool: tool.name, title: tool.title ?? tool.verb, input: input ?? {}, surface },
          callOptions?.signal,
        );
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
    get mode(): WebmcpMode {
      const context = currentContext();
      return picked === undefined || context === undefined ? 'none' : providerOf(context);
    },
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

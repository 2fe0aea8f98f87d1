/**
 * MCP 2026-07-28 ("modern" era): a stateless SDK v2 `Server` (`@modelcontextprotocol/server`)
 * answering `server/discover`, tools/list and tools/call from the same ToolCatalog and through the
 * same pipeline (`rt.dispatch`) as the 2025-11-25 server of mcp-server.ts. One instance serves one
 * HTTP request (createMcpHandler) or one stdio connection (serveStdio); nothing is kept between
 * requests, so any node answers any request.
 *
 * Era detection (isModernMessage): a request is modern when it is `server/discover` or its
 * `params._meta` carries `io.modelcontextprotocol/protocolVersion` (the per-request envelope).
 * Everything else keeps the 2025-11-25 path (initialize, sessions, elicitation), unchanged.
 *
 * tools/call (the fallback handler, so the SDK's own params schema never refuses a call unaudited):
 *   the steps of mcp-server.ts (no name → audited invalid_request, JSON-RPC -32602; unknown tool →
 *   dispatched to be audited, -32602 carrying the envelope; the verb through `rt.dispatch` with
 *   `_meta` idempotency_key / confirm / nonce; envelopeToToolResult), with one difference for
 *   consent: where a 2025-11-25 call would elicit (a typed-phrase dispatch_pending that carries
 *   `consent.approval_url`), the answer is an `input_required` result whose one embedded request is
 *   a URL-mode elicitation of the approval page (a human approves there; the client never gets a
 *   form to type a phrase into), when the request's envelope declares `elicitation.url`. Its
 *   `requestState` names the approval and its nonce (both already in the pending envelope the
 *   agent would see, so it grants nothing the agent does not have). On the client's retry the server
 *   waits at most `approvalWaitMs` for a human to decide on the page (read from the store), then
 *   dispatches with confirm + that nonce, as the 2025-11-25 URL path does and as an agent may with
 *   `_meta`: the consent core decides (approved → runs; still open → the same pending approval;
 *   rejected or expired → its refusal), and its answer is a tool result, never a second
 *   input_required (a client cannot loop). No `elicitation.url` declared: the pending envelope, as
 *   on 2025-11-25 without elicitation.
 *
 * Spec: spec/transports.md §mcp-2026, docs/mcp.md "Protocol revisions".
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  Server,
  inputRequired,
  type CallToolResult,
  type InputRequiredResult,
  type ServerContext,
} from '@modelcontextprotocol/server';
import {
  McpError,
  SUPPORTED_PROTOCOL_VERSIONS as LEGACY_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import type { Caller, DispatchOptions, ToolsetSelection } from '../../runtime/core.ts';
import type { McpRuntime as Runtime } from '../runtime-surface.ts';
import type { Envelope } from '../../spec/types.ts';
import { APPROVAL_POLL_MS, approvalPageRequest } from './consent-elicitation.ts';
import { DEFAULT_MAX_RESULT_BYTES, envelopeToToolResult } from './envelope-map.ts';
import {
  PACKAGE_VERSION,
  SERVER_INSTRUCTIONS,
  dispatchOptions,
  isTypedPending,
  noToolName,
  progressReporter,
  unknownTool,
  type McpCredentials,
  type McpExtra,
  type McpServerOptions,
} from './mcp-server.ts';
import {
  CALL_VERB,
  DESCRIBE_VERB,
  META_TOOLS,
  SEARCH_VERBS,
  badMetaInput,
  describeVerb,
  searchVerbs,
} from './meta-tools.ts';
import { CursorError, verbArgsOf, type CatalogEntry, type ToolCatalog } from './tool-catalog.ts';
import { listFilter, narrowSelection } from './toolsets.ts';
import { keyedRuntime } from './keyed-runtime.ts';

/** The revision of the modern era this server speaks. */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';
/** Every revision served: the modern one (per request) and the initialize-era ones (sessions, mcp-server.ts). */
export const SERVED_PROTOCOL_VERSIONS: readonly string[] = [
  MODERN_PROTOCOL_VERSION,
  ...LEGACY_PROTOCOL_VERSIONS,
];
/**
 * Default longest wait, on the retry of an input_required call, for a human to decide on the
 * approval page (ms): under the HTTP request deadline (10 000 ms), so the answer is the tool
 * result, never the deadline's 503.
 */
export const DEFAULT_APPROVAL_WAIT_MS = 8_000;
/** The key of the approval-page request inside `inputRequests`. */
export const APPROVAL_INPUT_KEY = 'approval';

export interface ModernServerOptions extends Pick<
  McpServerOptions,
  'limits' | 'approvalUrl' | 'approvalDecided' | 'dynamic' | 'schemaProfile'
> {
  catalog: ToolCatalog;
  toolsets?: ToolsetSelection;
  /** Credentials of a request (stdio: SOLID_API_KEY; HTTP: the principal the plugin authenticated). */
  credentials: (ctx: ServerContext) => McpCredentials;
  /** Longest wait on a retry for the approval to be decided (ms, default DEFAULT_APPROVAL_WAIT_MS). */
  approvalWaitMs?: number;
}

export { isModernMessage } from './modern-era.ts';

interface ApprovalState {
  v: 1;
  tool: string;
  approval_id: string;
  nonce: string;
}

function encodeState(s: ApprovalState): string {
  return Buffer.from(JSON.stringify(s), 'utf8').toString('base64url');
}

/** The approval a retry names, or undefined for anything else (the state comes from the client). */
function decodeState(raw: unknown): ApprovalState | undefined {
  if (typeof raw !== 'string' || raw.length > 2048) return undefined;
  try {
    const s = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Partial<ApprovalState>;
    if (
      s.v === 1 &&
      typeof s.tool === 'string' &&
      typeof s.approval_id === 'string' &&
      typeof s.nonce === 'string'
    )
      return s as ApprovalState;
  } catch {
    /* not ours */
  }
  return undefined;
}

/** A 2025 McpError thrown by the shared helpers, as the v2 SDK's ProtocolError (same code, message, data). */
function asProtocolError(err: unknown): unknown {
  return err instanceof McpError ? new ProtocolError(err.code, err.message, err.data) : err;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * Build the SDK v2 Server for one modern request (HTTP) or connection (stdio). The catalog is
 * shared; the server keeps no state between requests. It also serves 2025-era initialize when a
 * stdio opening asks for it, but the transports route 2025-era traffic to mcp-server.ts instead.
 */
export function createModernServer(rt: Runtime, options: ModernServerOptions): Server {
  const { catalog, toolsets } = options;
  const dynamic = options.dynamic === true;
  const profile = options.schemaProfile ?? 'default';
  const server = new Server(
    { name: 'solid-verbs', title: 'solid-verbs', version: PACKAGE_VERSION },
    {
      capabilities: { tools: {} },
      instructions: SERVER_INSTRUCTIONS,
      supportedProtocolVersions: [...SERVED_PROTOCOL_VERSIONS],
    },
  );

  listLegacyRevisionsInDiscover(server);

  server.setRequestHandler('tools/list', (req, ctx) => {
    if (dynamic) return { tools: [...META_TOOLS] } as never;
    const creds = options.credentials(ctx);
    const narrowed = narrowSelection(toolsets, creds.narrowing?.toolsets);
    try {
      return catalog.page(
        req.params?.cursor,
        listFilter(narrowed, creds.narrowing?.readOnly, creds.principal),
        profile,
      ) as never;
    } catch (err) {
      if (err instanceof CursorError) throw new ProtocolError(-32602, err.message);
      throw err;
    }
  });

  server.fallbackRequestHandler = async (req, ctx) => {
    if (req.method !== 'tools/call') throw new ProtocolError(-32601, 'Method not found');
    try {
      return (await callTool(req.params, ctx)) as never;
    } catch (err) {
      throw asProtocolError(err);
    }
  };

  async function callTool(
    params: Record<string, unknown> | undefined,
    ctx: ServerContext,
  ): Promise<CallToolResult | InputRequiredResult> {
    // progressReporter reads only `_meta.progressToken` and `sendNotification`.
    const progress = progressReporter({
      _meta: ctx.mcpReq._meta,
      sendNotification: (n: { method: string; params?: Record<string, unknown> }) =>
        ctx.mcpReq.notify(n as never),
    } as unknown as McpExtra);
    try {
      return await callToolWith(params, ctx, progress?.report);
    } finally {
      await progress?.flushed();
    }
  }

  async function callToolWith(
    params: Record<string, unknown> | undefined,
    ctx: ServerContext,
    onProgress: Caller['onProgress'],
  ): Promise<CallToolResult | InputRequiredResult> {
    const name = params?.name;
    const args = (params?.arguments ?? {}) as Record<string, unknown>;
    const { narrowing, apiKey, ...creds } = options.credentials(ctx);
    // An API key is authenticated (through src/identity) by each dispatch and refusal of this call.
    const crt = keyedRuntime(rt, apiKey);
    const narrowed = narrowSelection(toolsets, narrowing?.toolsets);
    const caller: Caller = {
      ...creds,
      surface: 'mcp_stdio',
      ...(narrowed !== undefined ? { toolsets: narrowed } : {}),
      ...(narrowing?.readOnly === true ? { readOnly: true } : {}),
      maxResultBytes: options.limits?.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES,
      signal: ctx.mcpReq.signal,
      ...(onProgress !== undefined ? { onProgress } : {}),
    };
    if (typeof name !== 'string') return noToolName(crt, caller, name);
    // The SDK lifted the io.modelcontextprotocol/* keys out; ours (dev.solid-verbs/*) remain.
    const meta = isPlainObject(ctx.mcpReq._meta) ? (ctx.mcpReq._meta as Record<string, unknown>) : undefined;
    if (dynamic && (name === SEARCH_VERBS || name === DESCRIBE_VERB || name === CALL_VERB)) {
      if (!isPlainObject(args)) return badMetaInput(name, '', 'arguments must be an object.');
      if (name === SEARCH_VERBS) return searchVerbs(rt, narrowed, args);
      if (name === DESCRIBE_VERB) return describeVerb(rt, narrowed, args);
      return callVerbByName(crt, args, caller, ctx, meta);
    }
    const entry = catalog.lookup(name, profile);
    if (entry === undefined) return unknownTool(crt, caller, name, args);
    return callEntry(crt, entry, args, caller, ctx, meta);
  }

  async function callVerbByName(
    crt: Runtime,
    args: Record<string, unknown>,
    caller: Caller,
    ctx: ServerContext,
    meta: Record<string, unknown> | undefined,
  ): Promise<CallToolResult | InputRequiredResult> {
    const { name, arguments: verbArgs } = args;
    if (typeof name !== 'string' || name === '' || name.length > 200)
      return badMetaInput(CALL_VERB, '/name', 'name must be a verb name (a string of 1 to 200 characters).');
    if (verbArgs !== undefined && !isPlainObject(verbArgs))
      return badMetaInput(CALL_VERB, '/arguments', "arguments must be an object: the verb's arguments.");
    const a = (verbArgs ?? {}) as Record<string, unknown>;
    const entry = catalog.lookup(name, profile);
    if (entry !== undefined) return callEntry(crt, entry, a, caller, ctx, meta);
    const env = await crt.dispatch(caller, name, a, dispatchOptions(meta));
    return envelopeToToolResult(env, { toolName: CALL_VERB, limits: options.limits });
  }

  async function callEntry(
    crt: Runtime,
    entry: CatalogEntry,
    rawArgs: Record<string, unknown>,
    caller: Caller,
    ctx: ServerContext,
    meta: Record<string, unknown> | undefined,
  ): Promise<CallToolResult | InputRequiredResult> {
    const args = isPlainObject(rawArgs) ? verbArgsOf(entry, rawArgs) : rawArgs;
    const sent: DispatchOptions = dispatchOptions(meta);
    const retry = decodeState(ctx.mcpReq.requestState());
    let env: Envelope;
    if (retry !== undefined && retry.tool === entry.tool.name) {
      // The retry after input_required: give the human a moment to decide on the page, then confirm
      // with the approval's nonce, as the 2025-11-25 URL path does. Still undecided, the consent
      // core answers the same pending approval (no second one); rejected or expired, it says so.
      if (options.approvalDecided !== undefined)
        await decidedWithin(options.approvalDecided, retry.approval_id, ctx.mcpReq.signal);
      env = await crt.dispatch(caller, entry.verb.name, args, { ...sent, confirm: true, nonce: retry.nonce });
    } else env = await crt.dispatch(caller, entry.verb.name, args, sent);

    const consent = isTypedPending(env) ? env.consent : undefined;
    if (
      retry === undefined &&
      consent?.approval_url !== undefined &&
      consent.approval_id !== undefined &&
      options.approvalDecided !== undefined &&
      declaresUrlElicitation(ctx)
    ) {
      const page = approvalPageRequest(entry.tool.title ?? entry.tool.name, {
        ...consent,
        approval_url: consent.approval_url,
      });
      return inputRequired({
        inputRequests: {
          [APPROVAL_INPUT_KEY]: inputRequired.elicitUrl({ message: page.message, url: page.url }),
        },
        requestState: encodeState({
          v: 1,
          tool: entry.tool.name,
          approval_id: String(consent.approval_id),
          nonce: consent.nonce,
        }),
      });
    }
    return envelopeToToolResult(env, {
      toolName: entry.tool.name,
      limits: options.limits,
      approvalUrl: options.approvalUrl,
    });
  }

  /** Poll the store until the approval is decided, the wait ends or the call is cancelled. */
  async function decidedWithin(
    decided: (approvalId: string) => Promise<boolean>,
    approvalId: string,
    signal: AbortSignal,
  ): Promise<boolean> {
    const until = Date.now() + (options.approvalWaitMs ?? DEFAULT_APPROVAL_WAIT_MS);
    for (;;) {
      if (await decided(approvalId)) return true;
      if (signal.aborted || Date.now() + APPROVAL_POLL_MS > until) return false;
      await new Promise((resolve) => setTimeout(resolve, APPROVAL_POLL_MS));
    }
  }

  return server;
}

/**
 * `server/discover` lists every revision served (spec: "protocol versions the server supports"):
 * the SDK lists only the modern ones, since 2025-era versions are negotiated by initialize, so its
 * answer is extended with the initialize-era revisions this endpoint also serves. Wraps the SDK
 * instance's own answer (looked up at call time), so capabilities, instructions and cache fields
 * stay the SDK's.
 */
function listLegacyRevisionsInDiscover(server: Server): void {
  const s = server as unknown as { _ondiscover?: () => { supportedVersions: string[] } };
  const own = s._ondiscover;
  if (typeof own !== 'function') return;
  s._ondiscover = () => {
    const answer = own.call(server);
    const more = SERVED_PROTOCOL_VERSIONS.filter((v) => !answer.supportedVersions.includes(v));
    return { ...answer, supportedVersions: [...answer.supportedVersions, ...more] };
  };
}

/** Did this request's envelope declare URL-mode elicitation (`clientCapabilities.elicitation.url`)? */
function declaresUrlElicitation(ctx: ServerContext): boolean {
  const env = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const caps = (env?.[CLIENT_CAPABILITIES_META_KEY] ?? env?.clientCapabilities) as
    { elicitation?: { url?: unknown } } | undefined;
  return caps?.elicitation?.url !== undefined;
}

export { CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY };

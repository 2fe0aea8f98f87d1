/**
 * createMcpServer(rt, options): one low-level SDK `Server` (MCP 2025-11-25, SDK 1.32) answering
 * tools/list from the shared ToolCatalog and tools/call through `rt.dispatch`. One Server per
 * connection (stdio process, Streamable HTTP session); the catalog is shared.
 *
 * tools/call (the Server's fallback handler, so the SDK's own schema never refuses a call unaudited):
 *   0. no string `name` → audited as a refusal of `tools/call` (invalid_request), JSON-RPC -32602
 *      carrying that envelope in `data`. `arguments` that are not an object reach the pipeline as
 *      sent, which answers (and audits) invalid_input as an isError result.
 *   1. look the tool up (tool name or verb name). Unknown → the name is still dispatched so the
 *      attempt is audited (blocked_verb, unknown_verb, surface_denied; nothing runs), then a
 *      JSON-RPC -32602 error carrying that envelope in `data`.
 *   2. `rt.dispatch({ surface: 'mcp_stdio', principal, signal, onProgress }, verb,
 *      arguments, { idempotency_key, confirm, nonce } from `_meta`)` — see meta-keys.ts; a call
 *      with neither confirm nor nonce is passed as a plain retry (spec/consent.md §plain-retry).
 *   3. a typed-phrase dispatch_pending: when the client declared form elicitation, ask the human
 *      (consent-elicitation.ts) and dispatch again with confirm + nonce + what THEY typed;
 *      decline/cancel → approvals.withdraw of that request (a form is no human's rejection), then the call
 *      with the nonce answers approval_superseded — both audited; no elicitation or no answer →
 *      the pending envelope, whose hint points to the out-of-band approval.
 *   4. envelopeToToolResult (envelope-map.ts).
 * Progress: when the request carries a progressToken, `ctx.progress()` of the verb becomes
 * notifications/progress (strictly increasing). Cancellation: the request's abort signal is the
 * verb's `ctx.signal`.
 *
 * Toolsets (`options.toolsets`, toolsets.ts): tools/list lists only the admitted verbs and every
 * call carries the selection (`Caller.toolsets`), so the pipeline refuses any other verb
 * (surface_denied, audited). Dynamic mode (`options.dynamic`, meta-tools.ts): tools/list lists
 * search_verbs, describe_verb and call_verb; call_verb takes the very path of steps 1–4 above
 * for the named verb. Spec: spec/transports.md §mcp-toolsets, §mcp-dynamic.
 *
 * The server never validates arguments, decides consent or touches the store: the pipeline does.
 * Spec: spec/transports.md §mcp.
 */
import { readFileSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { type Caller, type DispatchOptions, type ToolsetSelection } from '../../runtime/core.ts';
import { VerbError } from '../../runtime/errors.ts';
import type { McpRuntime as Runtime } from '../runtime-surface.ts';
import type { ConsentRequest, Envelope, Principal } from '../../spec/types.ts';
import { askForPhrase, askToApproveAtUrl, canElicitForm, canElicitUrl } from './consent-elicitation.ts';
import { DEFAULT_MAX_RESULT_BYTES, envelopeToToolResult, type ResultLimits } from './envelope-map.ts';
import { META } from './meta-keys.ts';
import {
  CALL_VERB,
  DESCRIBE_VERB,
  META_TOOLS,
  SEARCH_VERBS,
  badMetaInput,
  describeVerb,
  searchVerbs,
} from './meta-tools.ts';
import type { SchemaProfile } from './schema-profiles.ts';
import { CursorError, ToolCatalog, verbArgsOf, type CatalogEntry } from './tool-catalog.ts';
import { listFilter, narrowSelection, selectionOf, type McpNarrowing } from './toolsets.ts';
import { keyedRuntime } from './keyed-runtime.ts';

export type McpExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Who calls: a principal authenticated by the transport, or an API key for src/identity to check on each call. */
export interface McpCredentials {
  principal?: Principal | null;
  apiKey?: string | null;
  /** The request's X-MCP-Toolsets / X-MCP-Readonly (HTTP): narrows the server, never widens. */
  narrowing?: McpNarrowing;
}

export interface McpServerOptions {
  /** The shared projection. Default: a catalog of its own, disposed when the server closes. */
  catalog?: ToolCatalog;
  /** Credentials of a request (stdio: SOLID_API_KEY; HTTP: the session's principal). Default: none (sandbox). */
  credentials?: (extra: McpExtra) => McpCredentials;
  /** Result size limits (envelope-map.ts). */
  limits?: Partial<ResultLimits>;
  /** How long a human has to answer an elicitation (ms, default 300 000). */
  elicitationTimeoutMs?: number;
  /**
   * Whether an approval was decided (approved, rejected, used or expired), read from the store:
   * with it, a client declaring URL-mode elicitation is asked to open the approval page
   * (`consent.approval_url`) and the call completes once a human decided there. Without it (the
   * remote bridge) pending answers go to the agent as they are. spec/consent.md §approval-page
   */
  approvalDecided?: (approvalId: string) => Promise<boolean>;
  /** Dashboard page where a pending approval can be approved, for hints. */
  approvalUrl?: (approvalId: string) => string | undefined;
  /** Declare tools.listChanged and send notifications/tools/list_changed (default true). */
  listChanged?: boolean;
  /**
   * The toolsets (verb categories) to expose: "crm,payments", a list, or a selection from
   * resolveToolsets (toolsets.ts). Default: all. An unknown name throws ToolsetError.
   * Spec: spec/transports.md §mcp-toolsets.
   */
  toolsets?: string | readonly string[] | ToolsetSelection;
  /** Dynamic mode: list the meta tools (search_verbs, describe_verb, call_verb) instead of the verbs (§mcp-dynamic). */
  dynamic?: boolean;
  /**
   * The dialect of the served input schemas: 'default' (the portable subset), 'openai-strict' or
   * 'gemini' (schema-profiles.ts; spec/transports.md §mcp-schema-profiles). Default 'default'.
   */
  schemaProfile?: SchemaProfile;
}

export const PACKAGE_VERSION = (
  JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

export const SERVER_INSTRUCTIONS =
  'Each tool is a solid-verbs verb acting on a real business. A result is the verb result as JSON text; an isError result is ' +
  '"reason: message — hint", then the whole envelope as JSON: branch on error.reason and follow error.hint. ' +
  'A write answers a receipt: status and audit_id (give it to audit.revert to undo), and when they apply rollback_handle, ' +
  'idempotency_key, timestamp, replayed and attestation (a signature of the audit row). Writes needing consent answer dispatch_pending: for a confirmation, ask the ' +
  `human, then call again with the same arguments and _meta {"${META.confirm}": true, "${META.nonce}": "<consent.nonce>"} ` +
  '(a client that cannot send _meta: the same call again is the confirmation). ' +
  'Typed-phrase actions are confirmed by the human (a form this server asks your client to show, or the approval page at consent.approval_url, then the same call again); never type ' +
  `a phrase yourself. To retry a write safely, send _meta {"${META.idempotencyKey}": "<uuid>"}; the same key returns the stored receipt.`;

/** Build the Server for one connection (not connected yet: call `server.connect(transport)`). */
export function createMcpServer(rt: Runtime, options: McpServerOptions = {}): Server {
  const ownCatalog = options.catalog === undefined;
  const catalog = options.catalog ?? new ToolCatalog(rt);
  const listChanged = options.listChanged ?? true;
  const toolsets = selectionOf(rt, options.toolsets);
  const dynamic = options.dynamic === true;
  const profile = options.schemaProfile ?? 'default';
  const server = new Server(
    { name: 'solid-verbs', title: 'solid-verbs', version: PACKAGE_VERSION },
    { capabilities: { tools: { listChanged } }, instructions: SERVER_INSTRUCTIONS },
  );

  server.setRequestHandler(ListToolsRequestSchema, (req, extra) => {
    if (dynamic) return { tools: [...META_TOOLS] };
    const creds = options.credentials?.(extra as McpExtra);
    const narrowed = narrowSelection(toolsets, creds?.narrowing?.toolsets);
    try {
      return catalog.page(
        req.params?.cursor,
        listFilter(narrowed, creds?.narrowing?.readOnly, creds?.principal),
        profile,
      );
    } catch (err) {
      if (err instanceof CursorError) throw new McpError(ErrorCode.InvalidParams, err.message);
      throw err;
    }
  });

  // tools/call is the fallback handler, not setRequestHandler(CallToolRequestSchema): the SDK
  // parses a registered handler's params with its own schema first and answers a mismatch (say,
  // `arguments` that are not an object, or no `name`) with -32603 or -32602 before any code of
  // ours runs — an attempt nobody audits. Here every tools/call that reaches the server is one
  // attempt: its params are checked by callTool, and the pipeline refuses bad arguments.
  server.fallbackRequestHandler = async (req, extra) => {
    if (req.method !== 'tools/call') throw new McpError(ErrorCode.MethodNotFound, 'Method not found');
    return callTool(req.params, extra as McpExtra);
  };

  async function callTool(
    params: Record<string, unknown> | undefined,
    extra: McpExtra,
  ): Promise<CallToolResult> {
    const progress = progressReporter(extra);
    try {
      return await callToolWith(params, extra, progress?.report);
    } finally {
      // The answer goes out after the progress it reported: a client drops progress for a
      // request it already has the result of.
      await progress?.flushed();
    }
  }

  // The keyed views of the runtime by key (a connection's calls carry one key): a view holds no
  // state, so the same key may reuse it; each call still authenticates. A Map (matched by hash
  // first), not a string comparison with the last key, so no key is compared with another.
  const keyed = new Map<string, Runtime>();
  function keyedFor(apiKey: string | null | undefined): Runtime {
    if (apiKey == null || apiKey === '') return keyedRuntime(rt, apiKey);
    let view = keyed.get(apiKey);
    if (view === undefined) {
      if (keyed.size >= 16) keyed.clear();
      view = keyedRuntime(rt, apiKey);
      keyed.set(apiKey, view);
    }
    return view;
  }

  async function callToolWith(
    params: Record<string, unknown> | undefined,
    extra: McpExtra,
    onProgress: Caller['onProgress'],
  ): Promise<CallToolResult> {
    const name = params?.name;
    const args = (params?.arguments ?? {}) as Record<string, unknown>;
    const { narrowing, apiKey, ...creds } = options.credentials?.(extra) ?? {};
    // An API key is authenticated (through src/identity) by each dispatch and refusal of this call.
    const crt = keyedFor(apiKey);
    const narrowed = narrowSelection(toolsets, narrowing?.toolsets);
    const caller: Caller = {
      ...creds,
      surface: 'mcp_stdio',
      ...(narrowed !== undefined ? { toolsets: narrowed } : {}),
      ...(narrowing?.readOnly === true ? { readOnly: true } : {}),
      // A write whose result this server could not send is refused before it commits.
      maxResultBytes: options.limits?.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES,
      signal: extra.signal,
      ...(onProgress !== undefined ? { onProgress } : {}),
    };
    if (typeof name !== 'string') return noToolName(crt, caller, name);
    const meta = isPlainObject(params?._meta) ? params._meta : undefined;
    if (dynamic && (name === SEARCH_VERBS || name === DESCRIBE_VERB || name === CALL_VERB)) {
      if (!isPlainObject(args)) return badMetaInput(name, '', 'arguments must be an object.');
      if (name === SEARCH_VERBS) return searchVerbs(rt, narrowed, args);
      if (name === DESCRIBE_VERB) return describeVerb(rt, narrowed, args);
      return callVerbByName(crt, args, caller, extra, meta);
    }
    const entry = catalog.lookup(name, profile);
    if (entry === undefined) return unknownTool(crt, caller, name, args);
    return callEntry(crt, entry, args, caller, extra, meta);
  }

  /** tools/call of one projected verb (its own tool, or call_verb): dispatch, elicitation, result. */
  async function callEntry(
    crt: Runtime,
    entry: CatalogEntry,
    args: Record<string, unknown>,
    caller: Caller,
    extra: McpExtra,
    meta: Record<string, unknown> | undefined,
  ): Promise<CallToolResult> {
    const call = {
      rt: crt,
      server,
      extra,
      caller,
      entry,
      // Anything but an object goes to the pipeline as sent: it answers (and audits) invalid_input.
      args: isPlainObject(args) ? verbArgsOf(entry, args) : args,
      options: dispatchOptions(meta),
    };
    let env = await crt.dispatch(caller, entry.verb.name, call.args, call.options);
    // A form the client software answers is never a human channel (spec/consent.md §channels): it
    // is offered only where the answer shows the phrase to the agent anyway (the tenant chose
    // phrase_channel `any`), and what comes back counts as the agent's.
    const phrase = isTypedPending(env) ? env.consent?.typed_phrase : undefined;
    const atUrl = isTypedPending(env) ? env.consent : undefined;
    // URL mode first: the phrase is typed on the server's own approval page by a signed-in human,
    // never in a form the client software controls. spec/consent.md §approval-page
    if (atUrl?.approval_url !== undefined && options.approvalDecided !== undefined && canElicitUrl(server))
      env = await approvalAtUrl(
        call,
        { ...atUrl, approval_url: atUrl.approval_url },
        env,
        options.approvalDecided,
        options.elicitationTimeoutMs,
      );
    else if (phrase !== undefined && canElicitForm(server))
      env = await consentByHuman(
        call,
        { ...env.consent!, typed_phrase: phrase },
        options.elicitationTimeoutMs,
      );
    return envelopeToToolResult(env, {
      toolName: entry.tool.name,
      limits: options.limits,
      approvalUrl: options.approvalUrl,
    });
  }

  /** call_verb { name, arguments }: the verb's own tools/call path; any other name is dispatched to be refused and audited. */
  async function callVerbByName(
    crt: Runtime,
    args: Record<string, unknown>,
    caller: Caller,
    extra: McpExtra,
    meta: Record<string, unknown> | undefined,
  ): Promise<CallToolResult> {
    const { name, arguments: verbArgs } = args;
    if (typeof name !== 'string' || name === '' || name.length > 200)
      return badMetaInput(CALL_VERB, '/name', 'name must be a verb name (a string of 1 to 200 characters).');
    if (
      verbArgs !== undefined &&
      (verbArgs === null || typeof verbArgs !== 'object' || Array.isArray(verbArgs))
    )
      return badMetaInput(CALL_VERB, '/arguments', "arguments must be an object: the verb's arguments.");
    const a = (verbArgs ?? {}) as Record<string, unknown>;
    const entry = catalog.lookup(name, profile);
    if (entry !== undefined) return callEntry(crt, entry, a, caller, extra, meta);
    // Not on MCP (or not registered): the pipeline refuses it (unknown_verb, blocked_verb, surface_denied) and audits the attempt.
    const env = await crt.dispatch(caller, name, a, dispatchOptions(meta));
    return envelopeToToolResult(env, { toolName: CALL_VERB, limits: options.limits });
  }

  // Dynamic mode lists fixed meta tools: a changed verb set changes nothing they list.
  const unsubscribe =
    listChanged && !dynamic
      ? catalog.onChange(() => {
          server.sendToolListChanged().catch(() => {
            /* not connected (yet/anymore): nothing to tell */
          });
        })
      : () => {};
  const previous = server.onclose;
  server.onclose = () => {
    unsubscribe();
    if (ownCatalog) catalog.dispose();
    previous?.();
  };
  return server;
}

/**
 * The consent options a client sends in `params._meta` (never in the arguments). A call that
 * sends neither confirm nor nonce (agent frameworks cannot) is passed on as a plain retry: the
 * pipeline's consent step decides whether it completes an earlier pending answer of the
 * identical call (spec/consent.md §plain-retry).
 */
export function dispatchOptions(meta: Record<string, unknown> | undefined): DispatchOptions {
  const out: DispatchOptions = {};
  if (meta === undefined || (meta[META.confirm] === undefined && meta[META.nonce] === undefined))
    out.plain_retry = true;
  if (meta === undefined) return out;
  // Passed on as sent: the pipeline answers idempotency_key_invalid for a malformed key.
  if (meta[META.idempotencyKey] !== undefined) out.idempotency_key = meta[META.idempotencyKey] as string;
  if (meta[META.confirm] === true) out.confirm = true;
  if (typeof meta[META.nonce] === 'string') out.nonce = meta[META.nonce] as string;
  return out;
}

/**
 * notifications/progress for a request with a progressToken: strictly increasing, sent in order
 * (each after the previous one), never failing the call; `flushed()` resolves once every
 * reported step has been handed to the transport (the call's answer waits for it).
 */
export function progressReporter(
  extra: McpExtra,
): { report: NonNullable<Caller['onProgress']>; flushed(): Promise<void> } | undefined {
  const token = extra._meta?.progressToken;
  if (token === undefined) return undefined;
  let last = -Infinity;
  let chain: Promise<void> = Promise.resolve();
  const report: NonNullable<Caller['onProgress']> = (done, total, message) => {
    if (!(typeof done === 'number' && done > last)) return;
    last = done;
    chain = chain.then(() =>
      extra
        .sendNotification({
          method: 'notifications/progress',
          params: {
            progressToken: token,
            progress: done,
            ...(total !== undefined ? { total } : {}),
            ...(message ? { message } : {}),
          },
        })
        .catch(() => {}),
    );
  };
  return { report, flushed: () => chain };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * A tools/call without a string `name`: no tool is known, so the attempt is audited as a refusal
 * of `tools/call` (invalid_request) in the caller's tenant, and answered JSON-RPC -32602 carrying
 * that envelope, like an unknown tool.
 */
export async function noToolName(rt: Runtime, caller: Caller, name: unknown): Promise<never> {
  const message = `tools/call needs params.name, the tool name as a string (got ${name === undefined ? 'none' : JSON.stringify(name)?.slice(0, 100)}).`;
  const env = await rt.recordRefusal(
    caller,
    'tools/call',
    new VerbError('invalid_request', message, { hint: 'Call tools/list for the tool names.' }),
  );
  throw new McpError(ErrorCode.InvalidParams, env.error?.message ?? message, { envelope: env });
}

export async function unknownTool(rt: Runtime, caller: Caller, name: string, args: unknown): Promise<never> {
  // Dispatched only to audit the attempt (a hallucinated blocked name is a blocked attempt):
  // the pipeline refuses every verb not projected onto mcp_stdio before anything runs.
  const env = await rt.dispatch(caller, name, args, {});
  const e = env.error;
  throw new McpError(
    ErrorCode.InvalidParams,
    `Unknown tool: ${name.slice(0, 200)}${e ? `. ${e.message}${e.hint ? ` ${e.hint}` : ''}` : ''}`,
    { envelope: env },
  );
}

export function isTypedPending(env: Envelope): boolean {
  return !env.ok && env.error?.reason === 'dispatch_pending' && env.consent?.gate === 'typed_phrase';
}

interface Call {
  rt: Runtime;
  server: Server;
  extra: McpExtra;
  caller: Caller;
  entry: CatalogEntry;
  args: Record<string, unknown>;
  options: DispatchOptions;
}

/**
 * Ask the client to open the approval page (URL-mode elicitation) and, once a human decided
 * there in time, confirm with the nonce as the agent (no phrase: the approval carries the
 * consent). Declined, unanswered or still open: the pending answer, whose hint names the page.
 */
async function approvalAtUrl(
  call: Call,
  consent: ConsentRequest & { approval_url: string },
  pending: Envelope,
  approvalDecided: (approvalId: string) => Promise<boolean>,
  timeoutMs: number | undefined,
): Promise<Envelope> {
  const { rt, entry, args, options } = call;
  const approvalId = String(consent.approval_id);
  const answer = await askToApproveAtUrl(
    call.server,
    entry.tool.title ?? entry.tool.name,
    consent,
    () => approvalDecided(approvalId),
    { relatedRequestId: call.extra.requestId, signal: call.extra.signal, timeoutMs },
  );
  if (answer.kind !== 'decided') {
    if (answer.kind === 'unanswered')
      rt.logger.info({ verb: entry.verb.name, why: answer.why }, 'mcp: approval page not decided in time');
    return pending;
  }
  return rt.dispatch(call.caller, entry.verb.name, args, { ...options, confirm: true, nonce: consent.nonce });
}

/** Ask the human for the typed phrase and dispatch their answer (spec/transports.md §mcp-consent). */
async function consentByHuman(
  call: Call,
  consent: ConsentRequest,
  timeoutMs: number | undefined,
): Promise<Envelope> {
  const { rt, entry, args, options } = call;
  // What comes back from the client's form is the agent's call (spec/consent.md §channels).
  const caller: Caller = call.caller;
  const answer = await askForPhrase(call.server, entry.tool.title ?? entry.tool.name, consent, {
    relatedRequestId: call.extra.requestId,
    signal: call.extra.signal,
    timeoutMs,
  });
  const confirmed = { ...options, confirm: true, nonce: consent.nonce };
  switch (answer.kind) {
    case 'typed':
      return rt.dispatch(caller, entry.verb.name, args, { ...confirmed, typed_phrase: answer.phrase });
    case 'mismatch':
      // The SDK refused the human's text against the pattern and did not keep it; any phrase that
      // cannot match makes the pipeline answer (and audit) phrase_mismatch.
      return rt.dispatch(caller, entry.verb.name, args, { ...confirmed, typed_phrase: '' });
    case 'declined':
    case 'cancelled':
      return refuse(call, consent, answer.kind);
    case 'unanswered':
      rt.logger.warn(
        { verb: entry.verb.name, why: answer.why },
        'mcp: elicitation unanswered; failing closed (out-of-band approval)',
      );
      // No human answered: the pending answer goes to the model, as the model's channel.
      return rt.dispatch(call.caller, entry.verb.name, args, confirmed);
  }
}

/**
 * The form was declined (or dismissed). The client software answers a form, so this is not a
 * human's rejection (only a signed-in human rejects: spec/consent.md §channels): the caller
 * withdraws its own request (approvals.withdraw, audited), and the call with the nonce answers
 * approval_superseded — nothing runs and the approval can no longer be used. Without
 * approvals.withdraw, fall back to a phrase that cannot match (phrase_mismatch, audited as a denial).
 */
async function refuse(
  call: Call,
  consent: ConsentRequest,
  action: 'declined' | 'cancelled',
): Promise<Envelope> {
  const { rt, entry, args, options } = call;
  const caller: Caller = call.caller;
  const confirmed = { ...options, confirm: true, nonce: consent.nonce };
  if (consent.approval_id !== undefined && rt.registry.get('approvals.withdraw') !== undefined) {
    const withdrawn = await rt.dispatch(
      { ...caller, surface: 'internal', onProgress: undefined },
      'approvals.withdraw',
      { approval_id: String(consent.approval_id) },
    );
    if (withdrawn.ok) return rt.dispatch(caller, entry.verb.name, args, confirmed);
    rt.logger.warn(
      { verb: entry.verb.name, reason: withdrawn.error?.reason, action },
      'mcp: could not withdraw the request after the form was not accepted',
    );
  }
  return rt.dispatch(caller, entry.verb.name, args, { ...confirmed, typed_phrase: '' });
}

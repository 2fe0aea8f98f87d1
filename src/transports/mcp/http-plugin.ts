/**
 * MCP over Streamable HTTP at `/mcp` (MCP 2025-11-25 `basic/transports`), as one encapsulated
 * Fastify plugin mounted by `solid serve` (http-mounts.ts) or on any Fastify instance.
 *
 *   POST    initialize without Mcp-Session-Id → a new stateful session (own SDK Server and
 *           transport; the tool projection is shared); other POSTs need the session's id
 *   GET     with Last-Event-ID: resumes a dropped POST stream of the session (sse-event-store.ts:
 *           each POST stream of a 2025-11-25 client opens with a priming event carrying an id
 *           and `retry`); a stream that is over gets the rest and ends (`204` when nothing
 *           followed), one still running resumes live. Any other GET:
 *           405 (no standalone SSE stream is offered: answers and server→client requests such
 *           as elicitation travel on each POST's response stream). tools.listChanged is
 *           therefore not declared here: a client sees a changed verb set on its next tools/list
 *   DELETE  ends the session
 *   Sessions: at most `maxSessions` (default 100; the least recently used idle session is
 *           evicted), closed after `idleMs` without a request (default 10 min); unknown or
 *           expired id → 404 (the client re-initializes); no id on a non-initialize POST → 400
 *   Origin/Host (DNS rebinding): an Origin that is neither listed (here or on the server),
 *           same-origin as the socket saw it (origin-policy.ts; never from X-Forwarded-*) nor (on a
 *           loopback socket) a loopback origin → 403; on a loopback socket the Host must name a
 *           loopback host (or be listed, or be the host of an allowed origin) → 403
 *   Auth:   `Authorization: Bearer sk_solid_…` checked on every request (a revoked key stops
 *           working mid-session); an invalid key → 401 with `WWW-Authenticate: Bearer
 *           error="invalid_token"` (audited as auth_invalid). No Authorization header: the
 *           sandbox tenant, reads only, exactly like stdio without SOLID_API_KEY (401 when the
 *           runtime has no sandbox tenant or `requireKey` is set). A session belongs to the
 *           credential that opened it; another credential gets 404 for it.
 *   Narrowing: `X-MCP-Toolsets: crm,payments` and `X-MCP-Readonly: 1` on a request narrow what
 *           it lists and may call (never widen: on top of --toolsets and the key's own limits);
 *           the pipeline's scope step refuses the rest (scope_denied). Per request.
 *   Refusals: every refusal here is a JSON-RPC error whose `data.envelope` is the refusal's
 *           envelope (reason, message, hint; the request's id when the body shows one), and a
 *           refusal of a caller the server can name — a valid key, also before the body was
 *           read (malformed JSON, too large, not a JSON-RPC message, a batch, an unknown
 *           session, a refused Origin) — is an audit row in its tenant whose audit_id the
 *           envelope carries. A bad key is the audited auth_invalid; keyless
 *           callers are nobody the server can name (not audited; rate limits bound them).
 *
 * Spec: spec/transports.md §mcp-http.
 */
import { approvalDecidedIn } from './consent-elicitation.ts';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import { isVerbError, VerbError } from '../../runtime/errors.ts';
import type { Envelope, Principal } from '../../spec/types.ts';
import { apiKeyOf } from '../../identity/api-key-auth.ts';
import { rateLimitRefusal } from '../http/rate-limit.ts';
import { transportEnvelope } from '../http/envelope-map.ts';
import type { HttpPlugin, HttpPluginOptions } from '../http/server.ts';
import { hostsOfOrigins, normalizeAllowedOrigins } from '../../identity/origin-policy.ts';
import { createMcpServer, type McpServerOptions } from './mcp-server.ts';
import { isModernMessage } from './modern.ts';
import { createModernHttp } from './modern-http.ts';
import { ToolCatalog } from './tool-catalog.ts';
import { isSchemaProfile, SCHEMA_PROFILES } from './schema-profiles.ts';
import { narrowingOf, selectionOf, ToolsetError, type McpNarrowing } from './toolsets.ts';
import { DEFAULT_SSE_RETRY_MS, SessionEventStore } from './sse-event-store.ts';
import { authFailure, refuseWithKey } from '../../identity/api-key-auth.ts';
import {
  BATCH_REFUSED,
  batchesAllowed,
  idOfBody,
  isJsonRpcBody,
  negotiatedVersion,
  originHostGuard,
  rpcError,
  type RpcRefusal,
} from './http-request-checks.ts';

/** The path the MCP Streamable HTTP endpoint is served at by default. */
export const DEFAULT_MCP_PATH = '/mcp';
export const DEFAULT_MAX_SESSIONS = 100;
export const DEFAULT_IDLE_MS = 600_000;
/** Largest POST body (bytes): the SDK transport's own default. */
export const DEFAULT_MCP_BODY_LIMIT_BYTES = 4 * 1024 * 1024;

/** Options of the MCP Streamable HTTP plugin: path, session limits, toolsets. docs/mcp.md */
export interface McpHttpOptions extends Pick<
  McpServerOptions,
  'limits' | 'elicitationTimeoutMs' | 'approvalUrl' | 'toolsets' | 'dynamic' | 'schemaProfile'
> {
  path?: string;
  maxSessions?: number;
  /** Close a session after this long without a request (ms). */
  idleMs?: number;
  /** Origins allowed besides same-origin and, on loopback, loopback origins (e.g. "https://app.example"). */
  allowedOrigins?: readonly string[];
  /** Host names allowed besides loopback names on a loopback socket (e.g. "solid.example"). */
  allowedHosts?: readonly string[];
  /** Refuse keyless requests (default false: keyless = sandbox reads). */
  requireKey?: boolean;
  bodyLimitBytes?: number;
  /** Clock for idle expiry (ms since epoch); inject in tests. */
  now?: () => number;
  /** tools/list page size. */
  pageSize?: number;
  /** MCP 2026-07-28: longest wait, on a retry after input_required, for the approval to be decided (ms). */
  approvalWaitMs?: number;
  /** The `retry` (ms) of SSE priming events: how long a client waits to resume a dropped stream. */
  sseRetryMs?: number;
}

interface Session {
  id: string;
  transport: StreamableHTTPServerTransport;
  /** The session's SSE events, for resumption (Last-Event-ID). */
  events: SessionEventStore;
  server: Server;
  /** Who opened it: key id, or "sandbox". */
  owner: string;
  lastSeen: number;
  inflight: number;
  /** The protocol version initialize negotiated (the SDK server's rule: the client's if supported, else the latest). */
  protocolVersion: string;
}

interface Authed {
  principal: Principal | undefined;
  owner: string;
  /** This request's X-MCP-Toolsets / X-MCP-Readonly (set after authentication). */
  narrowing?: McpNarrowing;
}

/**
 * Build the plugin with options (mount the result with `app.register(plugin, { rt })` or list it
 * in `createHttpServer(rt, { plugins })`). `mcpHttpPlugin` is the default-configured one.
 */
export function createMcpHttpPlugin(config: McpHttpOptions = {}): HttpPlugin {
  const path = config.path ?? DEFAULT_MCP_PATH;
  const maxSessions = config.maxSessions ?? DEFAULT_MAX_SESSIONS;
  const idleMs = config.idleMs ?? DEFAULT_IDLE_MS;
  const now = config.now ?? Date.now;
  const ownOrigins = normalizeAllowedOrigins(config.allowedOrigins ?? []);

  return async function mcpHttp(app: FastifyInstance, opts: HttpPluginOptions): Promise<void> {
    const rt: Runtime = opts.rt;
    // The plugin's own lists plus the server's (`solid serve --allowed-origin`): an allowed
    // origin's host is an allowed Host too.
    const allowedOrigins = [...new Set([...ownOrigins, ...(opts.allowedOrigins ?? [])])];
    const allowedHosts = new Set([
      ...(config.allowedHosts ?? []).map((h) => h.toLowerCase()),
      ...hostsOfOrigins(allowedOrigins),
    ]);
    // Checked once, at mount: an unknown toolset fails the server's start (ToolsetError), not a session.
    const toolsets = selectionOf(rt, config.toolsets);
    const catalog = new ToolCatalog(rt, { pageSize: config.pageSize });
    const sessions = new Map<string, Session>(); // insertion order = least recently used first
    // MCP 2026-07-28 requests (modern.ts): stateless, answered by any node.
    const modern = createModernHttp(rt, {
      catalog,
      ...(toolsets !== undefined ? { toolsets } : {}),
      dynamic: config.dynamic === true,
      limits: config.limits,
      approvalDecided: approvalDecidedIn(rt.store, rt.clock),
      approvalWaitMs: config.approvalWaitMs,
    });

    const close = async (s: Session) => {
      sessions.delete(s.id);
      await s.transport.close().catch(() => {});
      await s.server.close().catch(() => {});
    };
    const sweep = () => {
      const t = now();
      for (const s of [...sessions.values()]) if (s.inflight === 0 && t - s.lastSeen > idleMs) void close(s);
    };
    const timer = setInterval(sweep, Math.max(1000, Math.min(idleMs, 60_000)));
    timer.unref();
    // preClose: end the sessions (and their open response streams, e.g. a pending elicitation)
    // before the server waits for in-flight requests to finish.
    app.addHook('preClose', async () => {
      clearInterval(timer);
      await Promise.all([...sessions.values()].map(close));
    });
    app.addHook('onClose', async () => {
      await modern.close().catch(() => {});
      catalog.dispose();
    });

    // JSON-RPC error bodies for what goes wrong before the SDK sees the request (body parse,
    // size); the rest of the server keeps its envelope errors.
    /**
     * Answer a refusal (see the header): audited in the caller's tenant when the server can name
     * the caller — `principal` (authenticated already), else a valid API key in the request —,
     * the envelope in the JSON-RPC error's data.
     */
    const refuseRpc = async (
      request: FastifyRequest,
      reply: FastifyReply,
      r: RpcRefusal,
      principal?: Principal,
    ): Promise<FastifyReply> => {
      const err = new VerbError(r.reason, r.message, {
        hint: r.hint,
        ...(r.details !== undefined ? { details: r.details } : {}),
      });
      const caller = { surface: 'mcp_stdio' as const, address: request.ip };
      const apiKey = apiKeyOf(request.headers.authorization);
      let envelope: Envelope;
      try {
        envelope =
          principal !== undefined
            ? await rt.recordRefusal({ ...caller, principal }, '', err)
            : apiKey !== null
              ? await refuseWithKey(rt, caller, apiKey, '', err)
              : { ok: false, verb: '', error: err.toEnvelopeError() };
      } catch (e) {
        rt.logger.warn({ err: e }, 'mcp http: could not audit a refusal');
        envelope = { ok: false, verb: '', error: err.toEnvelopeError() };
      }
      // A bad key answers its own audited auth_invalid (401), whatever else was wrong.
      const authFailed = envelope.error?.reason === 'auth_invalid' && r.reason !== 'auth_invalid';
      if (authFailed)
        void reply.header('www-authenticate', 'Bearer realm="solid-verbs", error="invalid_token"');
      else for (const [k, v] of Object.entries(r.headers ?? {})) void reply.header(k, v);
      const message = authFailed ? `auth_invalid: ${envelope.error!.message}` : r.message;
      return reply
        .code(authFailed ? 401 : r.status)
        .send(rpcError(authFailed ? -32001 : r.code, message, envelope, idOfBody(request.body)));
    };

    app.setErrorHandler(async function mcpErrorHandler(err, request, reply) {
      const e = err as { statusCode?: number; code?: string; message?: string };
      // The HTTP server's rate limiter (a root onRequest hook) refused before this route: 429 with
      // Retry-After, the refusal's envelope in the JSON-RPC error's data (spec/transports.md §rate-limits).
      const limited = rateLimitRefusal(err);
      if (limited !== undefined) {
        const envelope = transportEnvelope(
          '',
          'rate_limited',
          limited.message,
          limited.hint,
          limited.details,
        );
        return reply
          .code(429)
          .header('retry-after', String(limited.retryAfterSeconds))
          .send(rpcError(-32000, limited.message, envelope));
      }
      if (isVerbError(err))
        return refuseRpc(request, reply, {
          status: 400,
          code: -32700,
          reason: err.reason,
          message: `Parse error: ${err.message}`,
          hint: err.hint ?? 'Send one JSON-RPC message as a JSON body.',
          ...(err.details !== undefined ? { details: err.details } : {}),
        });
      if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
        const limit = config.bodyLimitBytes ?? DEFAULT_MCP_BODY_LIMIT_BYTES;
        return refuseRpc(request, reply, {
          status: 413,
          code: -32600,
          reason: 'payload_too_large',
          message: `The request body exceeds the limit of ${limit} bytes.`,
          hint: 'Send a smaller message; large inputs belong in several calls.',
          details: { limit_bytes: limit },
        });
      }
      const status =
        typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500 ? e.statusCode : 500;
      if (status === 500) rt.logger.error({ err }, 'mcp http: unexpected error');
      else
        return refuseRpc(request, reply, {
          status,
          code: -32600,
          reason: 'invalid_request',
          message: `The request is malformed: ${String(e.message ?? 'bad request')}.`,
          hint: 'Check the method, headers and JSON-RPC body (MCP Streamable HTTP).',
        });
      return reply
        .code(status)
        .send(
          rpcError(
            status === 500 ? -32603 : -32600,
            status === 500 ? 'Internal error' : String(e.message ?? 'Bad request'),
          ),
        );
    });

    /** Origin/Host checks (DNS-rebinding protection): the 403 refusal, or undefined when allowed. */
    const guardOf = originHostGuard(allowedOrigins, allowedHosts);
    /** Origin/Host checks; false after answering the (audited) 403. */
    const guard = async (request: FastifyRequest, reply: FastifyReply): Promise<boolean> => {
      const refused = guardOf(request);
      if (refused === undefined) return true;
      await refuseRpc(request, reply, refused);
      return false;
    };

    /** Authenticate the request. Returns undefined after answering 401. */
    const authenticate = async (
      request: FastifyRequest,
      reply: FastifyReply,
    ): Promise<Authed | undefined> => {
      const apiKey = apiKeyOf(request.headers.authorization);
      if (apiKey === null) {
        // With OAuth mounted, a keyless request gets the 401 challenge (naming the resource
        // metadata) unless the operator keeps the keyless sandbox (spec/oauth.md §resource-server).
        if (!config.requireKey && rt.tenants.bearer?.keylessSandbox !== false) {
          try {
            await rt.sandboxPrincipal();
            return { principal: undefined, owner: 'sandbox' };
          } catch {
            /* no sandbox tenant: a key is required */
          }
        }
        void reply
          .code(401)
          .header('www-authenticate', 'Bearer realm="solid-verbs"')
          .send(
            rpcError(
              -32001,
              `auth_required: an API key${rt.tenants.bearer !== undefined ? ' or an OAuth access token' : ''} is required (Authorization: Bearer …).`,
              transportEnvelope(
                '',
                'auth_required',
                'An API key is required on this MCP endpoint.',
                'Send Authorization: Bearer sk_solid_… (solid api-keys create).',
              ),
            ),
          );
        return undefined;
      }
      try {
        const principal = await rt.tenants.authenticate(apiKey);
        return {
          principal,
          owner: `key:${principal.key_id ?? `${principal.company_id}:${principal.user_id}`}`,
        };
      } catch (err) {
        const env = await authFailure(rt, { surface: 'mcp_stdio', address: request.ip }, 'mcp', err);
        void reply
          .code(401)
          .header('www-authenticate', 'Bearer realm="solid-verbs", error="invalid_token"')
          .send(
            rpcError(
              -32001,
              `${env.error!.reason}: ${env.error!.message}${env.error!.hint ? ` — ${env.error!.hint}` : ''}`,
              env,
            ),
          );
        return undefined;
      }
    };

    /** The session named by Mcp-Session-Id, if it exists and belongs to this credential. */
    const sessionOf = (request: FastifyRequest, authed: Authed): Session | undefined => {
      const sid = request.headers['mcp-session-id'];
      const s = typeof sid === 'string' ? sessions.get(sid) : undefined;
      if (s === undefined || s.owner !== authed.owner) return undefined;
      if (now() - s.lastSeen > idleMs && s.inflight === 0) {
        void close(s);
        return undefined;
      }
      return s;
    };

    /** Hand the request to the session's SDK transport (it writes the response itself). */
    const handOver = async (s: Session, request: FastifyRequest, reply: FastifyReply, authed: Authed) => {
      s.lastSeen = now();
      if (s.id !== undefined) {
        sessions.delete(s.id);
        sessions.set(s.id, s); // most recently used last
      }
      s.inflight++;
      const raw = request.raw as IncomingMessage & { auth?: AuthInfo };
      raw.auth = {
        token: '',
        clientId: authed.owner,
        scopes: [],
        extra: { principal: authed.principal, narrowing: authed.narrowing },
      };
      reply.hijack();
      try {
        await s.transport.handleRequest(raw, reply.raw, request.body);
      } finally {
        s.inflight--;
        s.lastSeen = now();
      }
    };

    const notFound = (request: FastifyRequest, reply: FastifyReply, authed: Authed) =>
      refuseRpc(
        request,
        reply,
        {
          status: 404,
          code: -32001,
          reason: 'not_found',
          message: 'Session not found: initialize a new session (POST initialize without Mcp-Session-Id).',
          hint: 'POST an initialize request without Mcp-Session-Id, then use the id it answers.',
        },
        authed.principal,
      );
    const notJsonRpc: RpcRefusal = {
      status: 400,
      code: -32600,
      reason: 'invalid_request',
      message:
        'Invalid Request: the body is not a JSON-RPC 2.0 message (jsonrpc "2.0", a method or a result/error, an id).',
      hint: 'Send one JSON-RPC 2.0 message per POST, e.g. {"jsonrpc":"2.0","id":1,"method":"tools/list"}.',
    };

    app.post(
      path,
      { bodyLimit: config.bodyLimitBytes ?? DEFAULT_MCP_BODY_LIMIT_BYTES },
      async (request, reply) => {
        if (!(await guard(request, reply))) return reply;
        const authed = await authenticate(request, reply);
        if (authed === undefined) return reply;
        // X-MCP-Toolsets / X-MCP-Readonly: this request narrows the server (spec/transports.md §mcp-narrowing).
        try {
          authed.narrowing = narrowingOf(rt, request.headers);
        } catch (err) {
          if (!(err instanceof ToolsetError)) throw err;
          return refuseRpc(
            request,
            reply,
            {
              status: 400,
              code: -32602,
              reason: 'invalid_request',
              message: `X-MCP-Toolsets: ${err.message}`,
              hint: 'Name toolsets this server exposes (comma-separated), or leave the header out.',
            },
            authed.principal,
          );
        }
        // Per client: `?schema_profile=openai-strict` on the URL a host is given (§mcp-schema-profiles);
        // a session keeps the one its initialize asked for.
        const asked = (request.query as Record<string, unknown> | undefined)?.schema_profile;
        if (asked !== undefined && !isSchemaProfile(asked))
          return refuseRpc(
            request,
            reply,
            {
              status: 400,
              code: -32602,
              reason: 'invalid_request',
              message: `Unknown schema_profile ${JSON.stringify(String(asked)).slice(0, 80)}.`,
              hint: `Use one of ${SCHEMA_PROFILES.join(', ')}, or leave schema_profile out.`,
            },
            authed.principal,
          );
        if (request.headers['mcp-session-id'] === undefined && isModernMessage(request.body)) {
          const refused = await modern.serve(request, reply, {
            principal: authed.principal,
            narrowing: authed.narrowing,
            approvalUrl: config.approvalUrl ?? dashboardApprovals(app, request),
            schemaProfile: asked ?? config.schemaProfile,
          });
          if (refused === undefined) return reply;
          return refuseRpc(
            request,
            reply,
            {
              status: refused.status,
              code: refused.code,
              reason: 'invalid_request',
              message: refused.message,
              hint: 'Send MCP 2026-07-28 requests with the _meta envelope and the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers, or open a 2025-11-25 session with initialize.',
              ...(refused.data !== undefined ? { details: refused.data } : {}),
            },
            authed.principal,
          );
        }
        if (request.headers['mcp-session-id'] !== undefined) {
          const s = sessionOf(request, authed);
          if (s === undefined) return notFound(request, reply, authed);
          if (Array.isArray(request.body) && !batchesAllowed(s.protocolVersion))
            return refuseRpc(request, reply, BATCH_REFUSED, authed.principal);
          if (!isJsonRpcBody(request.body)) return refuseRpc(request, reply, notJsonRpc, authed.principal);
          await handOver(s, request, reply, authed);
          return reply;
        }
        if (Array.isArray(request.body))
          return refuseRpc(
            request,
            reply,
            {
              ...BATCH_REFUSED,
              message:
                'Invalid Request: the first request of a session is one initialize message, not a batch.',
            },
            authed.principal,
          );
        if (!isInitializeRequest(request.body)) {
          return refuseRpc(
            request,
            reply,
            isJsonRpcBody(request.body)
              ? {
                  status: 400,
                  code: -32000,
                  reason: 'invalid_request',
                  message:
                    'Bad Request: no Mcp-Session-Id header; the first request of a session must be initialize.',
                  hint: 'POST initialize first, then send Mcp-Session-Id with every later request.',
                }
              : notJsonRpc,
            authed.principal,
          );
        }
        sweep();
        if (sessions.size >= maxSessions) {
          const idle = [...sessions.values()].find((x) => x.inflight === 0);
          if (idle === undefined)
            return refuseRpc(
              request,
              reply,
              {
                status: 503,
                code: -32000,
                reason: 'rate_limited',
                message: 'Too many MCP sessions are busy; retry shortly.',
                hint: 'Retry after the Retry-After seconds, or reuse an open session.',
                headers: { 'retry-after': '1' },
              },
              authed.principal,
            );
          await close(idle);
        }
        const session = {
          owner: authed.owner,
          lastSeen: now(),
          inflight: 0,
          protocolVersion: negotiatedVersion(request.body),
        } as Session;
        const server = createMcpServer(rt, {
          catalog,
          listChanged: false,
          credentials: (extra) => ({
            principal: (extra.authInfo?.extra?.principal as Principal | undefined) ?? null,
            narrowing: extra.authInfo?.extra?.narrowing as McpNarrowing | undefined,
          }),
          limits: config.limits,
          elicitationTimeoutMs: config.elicitationTimeoutMs,
          ...(toolsets !== undefined ? { toolsets } : {}),
          dynamic: config.dynamic === true,
          schemaProfile: asked ?? config.schemaProfile,
          approvalUrl: config.approvalUrl ?? dashboardApprovals(app, request),
          approvalDecided: approvalDecidedIn(rt.store, rt.clock),
        });
        const events = new SessionEventStore();
        const transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          eventStore: events,
          retryInterval: config.sseRetryMs ?? DEFAULT_SSE_RETRY_MS,
          onsessioninitialized: (id) => {
            session.id = id;
            sessions.set(id, session);
          },
          onsessionclosed: (id) => {
            sessions.delete(id);
          },
        });
        session.transport = transport;
        session.events = events;
        session.server = server;
        transport.onclose = () => {
          if (session.id !== undefined) sessions.delete(session.id);
        };
        await server.connect(transport);
        await handOver(session, request, reply, authed);
        return reply;
      },
    );

    app.get(path, async (request, reply) => {
      if (!(await guard(request, reply))) return reply;
      const lastEventId = request.headers['last-event-id'];
      if (typeof lastEventId === 'string' && lastEventId !== '') {
        // Resuming a dropped POST stream (SEP-1699): the session's own events only.
        const authed = await authenticate(request, reply);
        if (authed === undefined) return reply;
        const s = sessionOf(request, authed);
        if (s === undefined) return notFound(request, reply, authed);
        // A stream that is over gets what followed and ends (204: nothing followed); one still
        // running is resumed live by the SDK transport.
        const finished = s.events.finishedAfter(lastEventId);
        if (finished !== undefined && finished.length === 0) return reply.code(204).send();
        if (finished !== undefined)
          return reply
            .header('content-type', 'text/event-stream')
            .header('cache-control', 'no-cache, no-transform')
            .header('mcp-session-id', s.id)
            .send(
              finished
                .map((e) => `event: message\nid: ${e.id}\ndata: ${JSON.stringify(e.message)}\n\n`)
                .join(''),
            );
        await handOver(s, request, reply, authed);
        return reply;
      }
      return reply
        .code(405)
        .header('allow', 'POST, DELETE')
        .send(
          rpcError(
            -32000,
            'Method not allowed: this server offers no standalone SSE stream; POST requests get their answers on their own stream.',
          ),
        );
    });

    app.delete(path, async (request, reply) => {
      if (!(await guard(request, reply))) return reply;
      const authed = await authenticate(request, reply);
      if (authed === undefined) return reply;
      const s = sessionOf(request, authed);
      if (s === undefined) return notFound(request, reply, authed);
      await handOver(s, request, reply, authed);
      return reply;
    });
  };
}

/** The dashboard's approvals page on this server, when a dashboard is mounted at `/`. */
function dashboardApprovals(
  app: FastifyInstance,
  request: FastifyRequest,
): ((approvalId: string) => string) | undefined {
  if (!app.hasRoute({ method: 'GET', url: '/' }) || request.headers.host === undefined) return undefined;
  const base = `${request.protocol}://${request.headers.host}`;
  return (approvalId) => `${base}/approvals/${encodeURIComponent(approvalId)}`;
}

/** The plugin with default options, for `solid serve` (http-mounts.ts). */
export const mcpHttpPlugin: HttpPlugin = createMcpHttpPlugin();

/**
 * MCP 2026-07-28 on `/mcp` (Streamable HTTP, stateless): the SDK v2 entry `createMcpHandler` in
 * strict mode (`legacy: 'reject'`, since the plugin keeps serving 2025-era clients through their
 * sessions), behind the plugin's own Origin/Host guard, rate limit and API-key authentication.
 * Each request builds a fresh modern.ts Server over the plugin's shared ToolCatalog; nothing lives
 * between requests, so two `solid serve` nodes on one database answer alternating requests of one
 * client (an approval, its decision and the receipts live in the store).
 *
 * The SDK validates the envelope, the `MCP-Protocol-Version` / `Mcp-Method` / `Mcp-Name` headers
 * and the method before our handlers run; a refusal it answers with an HTTP error status is
 * re-answered by the plugin as an envelope refusal (audited when the caller can be named), with
 * the SDK's JSON-RPC code and message.
 *
 * Spec: spec/transports.md §mcp-2026.
 */
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createMcpHandler, type McpHttpHandler } from '@modelcontextprotocol/server';
import type { Principal } from '../../spec/types.ts';
import type { McpRuntime as Runtime } from '../runtime-surface.ts';
import type { ToolsetSelection } from '../../runtime/core.ts';
import { createModernServer, type ModernServerOptions } from './modern.ts';
import type { SchemaProfile } from './schema-profiles.ts';
import type { ToolCatalog } from './tool-catalog.ts';
import type { McpNarrowing } from './toolsets.ts';

/** What the plugin knows of one request, handed to the per-request server. */
interface RequestExtra {
  principal: Principal | undefined;
  approvalUrl: ((approvalId: string) => string | undefined) | undefined;
  /** The client's `?schema_profile=` (checked by the plugin), else the plugin's default. */
  schemaProfile?: SchemaProfile;
  /** The request's X-MCP-Toolsets / X-MCP-Readonly (toolsets.ts narrowingOf). */
  narrowing?: McpNarrowing;
}

export interface ModernHttpOptions extends Pick<
  ModernServerOptions,
  'limits' | 'approvalDecided' | 'dynamic' | 'approvalWaitMs'
> {
  catalog: ToolCatalog;
  toolsets?: ToolsetSelection;
  bodyLimitBytes?: number;
}

/** The JSON-RPC error of an SDK refusal (HTTP 4xx), to be re-answered as an envelope refusal. */
export interface ModernRefusal {
  status: number;
  code: number;
  message: string;
  /** The error's `data` (e.g. the supported versions of -32022), as the envelope's details. */
  data?: Record<string, unknown>;
}

export interface ModernHttp {
  /**
   * Serve one modern request (the plugin checked Origin/Host and authenticated). Writes the
   * answer, or returns the SDK's refusal for the plugin to answer as an envelope.
   */
  serve(
    request: FastifyRequest,
    reply: FastifyReply,
    extra: RequestExtra,
  ): Promise<ModernRefusal | undefined>;
  close(): Promise<void>;
}

/** Build the modern leg of the `/mcp` plugin. */
export function createModernHttp(rt: Runtime, options: ModernHttpOptions): ModernHttp {
  const handler: McpHttpHandler = createMcpHandler(
    ({ authInfo }) => {
      const extra = authInfo?.extra as unknown as RequestExtra | undefined;
      return createModernServer(rt, {
        catalog: options.catalog,
        ...(options.toolsets !== undefined ? { toolsets: options.toolsets } : {}),
        dynamic: options.dynamic === true,
        limits: options.limits,
        approvalDecided: options.approvalDecided,
        approvalWaitMs: options.approvalWaitMs,
        approvalUrl: extra?.approvalUrl,
        ...(extra?.schemaProfile !== undefined ? { schemaProfile: extra.schemaProfile } : {}),
        credentials: () => ({
          principal: extra?.principal ?? null,
          ...(extra?.narrowing !== undefined ? { narrowing: extra.narrowing } : {}),
        }),
      });
    },
    {
      legacy: 'reject',
      onerror: (err) => rt.logger.debug({ err: err.message }, 'mcp 2026-07-28: request refused or failed'),
      ...(options.bodyLimitBytes !== undefined ? { maxRequestBodySize: options.bodyLimitBytes } : {}),
    },
  );

  return {
    async serve(request, reply, extra) {
      const abort = new AbortController();
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) abort.abort();
      });
      const headers = new Headers();
      for (const [k, v] of Object.entries(request.headers)) {
        if (v === undefined) continue;
        for (const one of Array.isArray(v) ? v : [v]) headers.append(k, one);
      }
      headers.delete('content-length');
      const url = new URL(request.url, `${request.protocol}://${request.headers.host ?? 'localhost'}`);
      const body = JSON.stringify(request.body);
      const webRequest = new Request(url, { method: 'POST', headers, body, signal: abort.signal });
      const response = await handler.fetch(webRequest, {
        parsedBody: request.body,
        authInfo: {
          token: '',
          clientId: extra.principal?.key_id ?? 'sandbox',
          scopes: [],
          extra: extra as unknown as Record<string, unknown>,
        },
      });
      if (response.status >= 400 && response.status < 500) {
        const refusal = await refusalOf(response);
        if (refusal !== undefined) return refusal;
      }
      void reply.code(response.status);
      response.headers.forEach((value, key) => {
        void reply.header(key, value);
      });
      if (response.body === null) return void reply.send();
      return void reply.send(Readable.fromWeb(response.body as unknown as NodeReadableStream));
    },
    close: () => handler.close(),
  };
}

/** The JSON-RPC error in an SDK 4xx answer, when it is one. */
async function refusalOf(response: Response): Promise<ModernRefusal | undefined> {
  try {
    const body = (await response.clone().json()) as {
      error?: { code?: unknown; message?: unknown; data?: unknown };
    };
    const e = body.error;
    if (e === undefined || typeof e.code !== 'number' || typeof e.message !== 'string') return undefined;
    const data =
      e.data !== null && typeof e.data === 'object' && !Array.isArray(e.data)
        ? { data: e.data as Record<string, unknown> }
        : {};
    return { status: response.status, code: e.code, message: e.message, ...data };
  } catch {
    return undefined;
  }
}

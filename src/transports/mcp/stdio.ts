/**
 * serveStdio(rt, options): the MCP server over stdio (newline-delimited JSON-RPC on stdin/stdout).
 *
 *   - stdout carries ONLY JSON-RPC. Logs go to stderr: bin/solid.js points console.* at stderr
 *     before anything loads, and the runtime's pino logger writes to fd 2.
 *   - The server stops when stdin ends or closes, even with the database and timers open: the
 *     SDK's StdioServerTransport listens only to `data`/`error` (typescript-sdk#2002), so we
 *     listen to `end`/`close` ourselves. `closed` resolves after the server closed.
 *   - Auth: `apiKey` (SOLID_API_KEY) is checked by the runtime on every call; without one, calls
 *     run on the sandbox tenant, where only read verbs run (writes answer auth_required).
 *   - A frame over `maxFrameBytes` (default 1 MiB, the HTTP body limit; at most 10 MiB) is refused
 *     by a FrameGuard on the byte stream before it is parsed,
 *     before the SDK's line reader (which would close the transport and let the process exit 0):
 *     its bytes are discarded up to the next newline (memory stays bounded), the refusal is
 *     logged on stderr (reason payload_too_large), and when the frame's `id` is certain from its
 *     first 4 KiB it is answered a JSON-RPC -32600 error whose `data.envelope` is the
 *     payload_too_large envelope. The server keeps serving.
 *   - The manifest refreshes every `refreshMs` (default 5 min): `refresh()` re-reads what the
 *     database serves (its packs); a changed verb set reaches the client as
 *     notifications/tools/list_changed (so does any registration in this process).
 *
 * Spec: spec/transports.md §mcp-stdio.
 */
import { PassThrough, type Readable, type Writable } from 'node:stream';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { McpRuntime as Runtime } from '../runtime-surface.ts';
import type { Envelope } from '../../spec/types.ts';
import { createMcpServer, type McpServerOptions } from './mcp-server.ts';
import { modernStdioSwitch } from './modern-stdio.ts';
import { ToolCatalog } from './tool-catalog.ts';
import { selectionOf } from './toolsets.ts';
import {
  DEFAULT_STDIO_FRAME_BYTES,
  FrameGuard,
  MAX_STDIO_FRAME_BYTES,
  recoverFrameId,
  type OversizeFrame,
} from './stdio-frame-guard.ts';
import { StrictJsonError, parseStrictJson } from '../../spec/strict-json.ts';
import { VerbError } from '../../runtime/errors.ts';
import { keyedRuntime } from './keyed-runtime.ts';

/** Default manifest refresh interval (ms): 5 minutes, as the spec's clients cache the manifest. */
export const DEFAULT_REFRESH_MS = 300_000;

/** Options of `serveStdio`: the API key, toolsets, streams and result limits. docs/mcp.md */
export interface StdioOptions extends Omit<McpServerOptions, 'credentials' | 'catalog'> {
  /** API key of every call (default: none → sandbox reads only). */
  apiKey?: string | null;
  /** MCP 2026-07-28: longest wait, on a retry after input_required, for the approval to be decided (ms). */
  approvalWaitMs?: number;
  /** Default process.stdin / process.stdout. */
  input?: Readable;
  output?: Writable;
  /** Re-read what the database serves (packs); verbs it registers reach the client as list_changed. */
  refresh?: () => Promise<void>;
  /** Refresh interval in ms (default 300 000). */
  refreshMs?: number;
  /** tools/list page size. */
  pageSize?: number;
  /**
   * Largest frame (one JSON-RPC line) in bytes, default DEFAULT_STDIO_FRAME_BYTES (1 MiB, the
   * HTTP body limit), at most MAX_STDIO_FRAME_BYTES (10 MiB); larger → payload_too_large.
   */
  maxFrameBytes?: number;
}

/** A running MCP server over stdio (`serveStdio`). */
export interface StdioServer {
  server: Server;
  catalog: ToolCatalog;
  /** Resolves once the server has stopped (stdin ended/closed, stdout failed, or close()). */
  closed: Promise<void>;
  /** Stop the server and release the catalog; resolves when stopped. */
  close(): Promise<void>;
}

/** Connect an MCP server to stdio. Resolves once it is listening. */
export async function serveStdio(rt: Runtime, options: StdioOptions = {}): Promise<StdioServer> {
  const input = options.input ?? process.stdin;
  const output = options.output ?? process.stdout;
  const apiKey = options.apiKey != null && options.apiKey !== '' ? options.apiKey : null;
  // Checked before anything starts: an unknown toolset throws ToolsetError.
  const toolsets = selectionOf(rt, options.toolsets);
  const catalog = new ToolCatalog(rt, { pageSize: options.pageSize });
  const server = createMcpServer(rt, {
    ...options,
    toolsets,
    catalog,
    credentials: () => ({ apiKey }),
  });
  // The SDK reads guarded lines only (each at most the frame limit + CRLF), never stdin itself.
  const lines = new PassThrough();
  const transport = new StdioServerTransport(lines, output, { maxBufferSize: MAX_STDIO_FRAME_BYTES + 2 });
  // MCP 2026-07-28: the first message decides the connection's era (modern-stdio.ts).
  const modern = modernStdioSwitch(rt, { ...options, toolsets, catalog, apiKey, output });
  const guard = new FrameGuard({
    maxFrameBytes: options.maxFrameBytes ?? DEFAULT_STDIO_FRAME_BYTES,
    onLine: (line) => {
      const problem = lineProblem(line);
      if (problem === undefined) {
        if (!modern.route(line)) lines.write(line);
      } else void refuseLine(rt, transport, line, problem, apiKey);
    },
    onOversize: (frame) => void refuseOversize(rt, transport, frame, apiKey),
  });
  const onData = (chunk: Buffer | string) => guard.push(chunk);

  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  let stopping: Promise<void> | undefined;
  const refreshMs = options.refreshMs ?? DEFAULT_REFRESH_MS;
  let refreshing = false;
  const timer =
    options.refresh === undefined
      ? undefined
      : setInterval(() => {
          if (refreshing) return;
          refreshing = true;
          options.refresh!()
            .catch((err: unknown) =>
              rt.logger.error({ err }, 'mcp: manifest refresh failed; serving the last manifest'),
            )
            .finally(() => {
              refreshing = false;
            });
        }, refreshMs);
  timer?.unref();

  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (timer !== undefined) clearInterval(timer);
      input.off('data', onData);
      input.off('end', onEnd);
      input.off('close', onEnd);
      input.off('error', onInputError);
      input.pause();
      output.off('error', onOutputError);
      await modern.close();
      try {
        await server.close();
      } catch (err) {
        rt.logger.warn({ err }, 'mcp: error while closing the stdio server');
      }
      catalog.dispose();
      resolveClosed();
    })();
    return stopping;
  };
  const onEnd = () => void stop();
  const onOutputError = (err: unknown) => {
    rt.logger.warn({ err }, 'mcp: stdout failed (client gone); stopping');
    void stop();
  };
  const onInputError = (err: unknown) => {
    rt.logger.warn({ err }, 'mcp: stdin failed; stopping');
    void stop();
  };
  input.once('end', onEnd);
  input.on('error', onInputError);
  input.once('close', onEnd);
  output.on('error', onOutputError);
  const previous = server.onclose;
  server.onclose = () => {
    previous?.();
    void stop();
  };
  await server.connect(transport);
  input.on('data', onData);
  return { server, catalog, closed, close: stop };
}

/**
 * The envelope of a refusal the stdio binding decides itself. With an API key (SOLID_API_KEY) the
 * caller is known, so the refusal is audited in its tenant (keyed-runtime.ts; a bad key: the
 * audited auth_invalid instead) and the envelope carries the row's audit_id; keyless, nobody can
 * be named and the stderr line is the record (spec/audit.md).
 */
async function stdioRefusal(rt: Runtime, apiKey: string | null, err: VerbError): Promise<Envelope> {
  if (apiKey === null) return { ok: false, verb: '', error: err.toEnvelopeError() };
  try {
    return await keyedRuntime(rt, apiKey).recordRefusal({ surface: 'mcp_stdio' }, '', err);
  } catch (e) {
    rt.logger.warn({ err: e }, 'mcp stdio: could not audit a refused message');
    return { ok: false, verb: '', error: err.toEnvelopeError() };
  }
}

/**
 * Answer a frame the guard refused for its size: always a warn line on stderr naming the reason
 * (payload_too_large), the bytes seen and the limit; audited in the caller's tenant when it has an
 * API key (stdioRefusal); when its id is known, a JSON-RPC -32600 error to that id whose
 * `data.envelope` is the payload_too_large envelope. Spec: spec/transports.md §mcp-stdio.
 */
async function refuseOversize(
  rt: Runtime,
  transport: StdioServerTransport,
  frame: OversizeFrame,
  apiKey: string | null,
): Promise<void> {
  const message = `The JSON-RPC message exceeds the stdio limit of ${frame.limitBytes} bytes; it was discarded.`;
  rt.logger.warn(
    { reason: 'payload_too_large', id: frame.id, bytes_seen: frame.bytesSeen, limit_bytes: frame.limitBytes },
    frame.id === null
      ? 'mcp stdio: a message over the size limit was discarded; its id is unknown, so it is not answered'
      : 'mcp stdio: a message over the size limit was discarded and answered -32600',
  );
  const envelope = await stdioRefusal(
    rt,
    apiKey,
    new VerbError('payload_too_large', message, {
      hint: 'Send smaller messages: split large inputs over several calls.',
      details: { limit_bytes: frame.limitBytes },
    }),
  );
  if (frame.id === null) return;
  transport
    .send({ jsonrpc: '2.0', id: frame.id, error: { code: -32600, message, data: { envelope } } })
    .catch((err: unknown) => rt.logger.warn({ err }, 'mcp stdio: could not answer an oversize message'));
}

/** Why one stdio line is refused before the SDK reads it: its JSON-RPC code and envelope error. */
interface LineProblem {
  code: -32700 | -32600;
  message: string;
  hint: string;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The same strict reading of a message as HTTP's (spec/transports.md §bad-input): invalid UTF-8
 * and text that is not JSON are -32700; repeated keys, prototype keys, nesting beyond 64 levels
 * and a batch (MCP 2025-06-18 has no JSON-RPC batches) are -32600. Undefined: pass it on.
 */
function lineProblem(line: Buffer): LineProblem | undefined {
  let text: string;
  try {
    text = UTF8.decode(line);
  } catch {
    return {
      code: -32700,
      message: 'The message is not valid UTF-8.',
      hint: 'Send each JSON-RPC message as one line of UTF-8 JSON.',
    };
  }
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = parseStrictJson(text, 'the JSON-RPC message');
  } catch (err) {
    if (!(err instanceof StrictJsonError)) throw err;
    return err.problem === undefined
      ? {
          code: -32700,
          message: `The message is not JSON: ${err.message}`,
          hint: 'Send each JSON-RPC message as one line of JSON, ending with a newline.',
        }
      : { code: -32600, message: err.problem.message, hint: err.problem.hint };
  }
  if (Array.isArray(value))
    return {
      code: -32600,
      message: 'JSON-RPC batches are not accepted: MCP sends one message per line.',
      hint: 'Send the messages of the batch one per line.',
    };
  return undefined;
}

/** Answer a refused line to its id when certain (else log only, as for an oversize frame); audited as stdioRefusal says. */
async function refuseLine(
  rt: Runtime,
  transport: StdioServerTransport,
  line: Buffer,
  problem: LineProblem,
  apiKey: string | null,
): Promise<void> {
  const id = recoverFrameId(line.subarray(0, 4096));
  rt.logger.warn(
    { reason: 'invalid_request', code: problem.code, id },
    id === null
      ? `mcp stdio: a message was refused (${problem.message}); its id is unknown, so it is not answered`
      : `mcp stdio: a message was refused and answered ${problem.code} (${problem.message})`,
  );
  const envelope = await stdioRefusal(
    rt,
    apiKey,
    new VerbError('invalid_request', problem.message, { hint: problem.hint }),
  );
  if (id === null) return;
  transport
    .send({ jsonrpc: '2.0', id, error: { code: problem.code, message: problem.message, data: { envelope } } })
    .catch((err: unknown) => rt.logger.warn({ err }, 'mcp stdio: could not answer a refused message'));
}

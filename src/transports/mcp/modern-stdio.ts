/**
 * MCP 2026-07-28 on stdio: the connection's era is decided by its first message. A first message
 * of the modern era (`server/discover`, or a request whose `_meta` names a protocol version: see
 * isModernMessage) pins the connection to the SDK v2 `serveStdio` entry (strict: `legacy:
 * 'reject'`) over a modern.ts Server built once for the connection; anything else (initialize)
 * keeps the 2025-11-25 server of stdio.ts, unchanged. The frame guard, the refusals of bad lines
 * and stdout stay stdio.ts's; this switch only receives the lines that passed them.
 *
 * The SDK v2 server and modern.ts are imported when a connection turns out modern (a 2025-era
 * client never loads them); the lines it sends meanwhile wait in the switch's stream.
 *
 * Spec: spec/transports.md §mcp-2026.
 */
import { PassThrough, type Writable } from 'node:stream';
import type { StdioServerHandle } from '@modelcontextprotocol/server/stdio';
import type { McpRuntime as Runtime } from '../runtime-surface.ts';
import type { ToolsetSelection } from '../../runtime/core.ts';
import { MAX_STDIO_FRAME_BYTES } from './stdio-frame-guard.ts';
import type { ModernServerOptions } from './modern.ts';
import { isModernMessage } from './modern-era.ts';
import type { ToolCatalog } from './tool-catalog.ts';

export interface ModernStdioOptions extends Pick<
  ModernServerOptions,
  'limits' | 'approvalDecided' | 'approvalUrl' | 'dynamic' | 'approvalWaitMs' | 'schemaProfile'
> {
  catalog: ToolCatalog;
  toolsets?: ToolsetSelection;
  apiKey: string | null;
  output: Writable;
}

export interface ModernStdioSwitch {
  /** Hand one accepted line over; true when the modern era took it (the 2025 server must not see it). */
  route(line: Buffer): boolean;
  /** The era the first message chose (undefined before it). */
  readonly era: 'legacy' | 'modern' | undefined;
  close(): Promise<void>;
}

/** Build the switch for one stdio connection. */
export function modernStdioSwitch(rt: Runtime, options: ModernStdioOptions): ModernStdioSwitch {
  let era: 'legacy' | 'modern' | undefined;
  let lines: PassThrough | undefined;
  let handle: StdioServerHandle | undefined;
  let starting: Promise<void> | undefined;
  const start = async (input: PassThrough) => {
    const [{ StdioServerTransport, serveStdio }, { createModernServer }] = await Promise.all([
      import('@modelcontextprotocol/server/stdio'),
      import('./modern.ts'),
    ]);
    const transport = new StdioServerTransport(input, options.output, {
      maxBufferSize: MAX_STDIO_FRAME_BYTES + 2,
    });
    const { apiKey } = options;
    handle = serveStdio(
      () =>
        createModernServer(rt, {
          catalog: options.catalog,
          ...(options.toolsets !== undefined ? { toolsets: options.toolsets } : {}),
          dynamic: options.dynamic === true,
          limits: options.limits,
          approvalDecided: options.approvalDecided,
          approvalUrl: options.approvalUrl,
          approvalWaitMs: options.approvalWaitMs,
          ...(options.schemaProfile !== undefined ? { schemaProfile: options.schemaProfile } : {}),
          credentials: () => ({ apiKey }),
        }),
      {
        legacy: 'reject',
        transport,
        onerror: (err) => rt.logger.debug({ err: err.message }, 'mcp stdio 2026-07-28: message refused'),
      },
    );
  };
  return {
    get era() {
      return era;
    },
    route(line) {
      if (era === undefined) {
        const text = line.toString('utf8').trim();
        if (text === '') return false;
        let message: unknown;
        try {
          message = JSON.parse(text);
        } catch {
          return false;
        }
        era = isModernMessage(message) ? 'modern' : 'legacy';
        if (era === 'modern') {
          lines = new PassThrough();
          starting = start(lines).catch((err: Error) =>
            rt.logger.error({ err: err.message }, 'mcp stdio 2026-07-28: the server did not start'),
          );
        }
      }
      if (era !== 'modern') return false;
      lines!.write(line);
      return true;
    },
    async close() {
      lines?.end();
      await starting;
      await handle?.close().catch(() => {});
    },
  };
}

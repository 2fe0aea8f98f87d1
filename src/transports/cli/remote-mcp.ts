/**
 * `solid mcp --url https://…` (or SOLID_API_URL): the MCP stdio bridge to a running `solid serve`
 * (../../remote-client/mcp-bridge.ts). The key is SOLID_API_KEY, else the stored `solid login` for that URL, else
 * none (the server's sandbox: reads only).
 *
 * Before serving it checks the server once: an unreachable server, a TLS failure, something that
 * is not a solid server, an invalid manifest (exit 8) or a rejected key (auth_invalid, exit 3) is
 * one line on stderr and a non-zero exit — an MCP host shows that instead of an empty tool list.
 * Afterwards the bridge rides out outages (last good manifest; calls answer upstream_unavailable).
 * Logs go to stderr; stdout carries only JSON-RPC.
 *
 * Spec: spec/transports.md §remote-mcp.
 */
import pino from 'pino';
import { VerbError } from '../../runtime/errors.ts';
import { reasonInfo } from '../../spec/reasons.ts';
import type { Io } from './output.ts';
import { serveMcpBridge } from '../../remote-client/mcp-bridge.ts';
import { ApiClient } from '../../remote-client/api-client.ts';
import { normalizeBaseUrl } from '../../remote-client/remote-url.ts';
import { remoteApiKey } from './remote-target.ts';
import type { SchemaProfile } from '../mcp/schema-profiles.ts';

/** Run the bridge until stdin closes (or SIGINT/SIGTERM); resolves to the exit code. */
export async function runRemoteMcp(
  url: string,
  io: Io,
  refreshMs: number,
  schemaProfile: SchemaProfile = 'default',
): Promise<number> {
  const baseUrl = normalizeBaseUrl(url);
  const logger = pino({ level: process.env.SOLID_LOG_LEVEL ?? 'warn' }, pino.destination(2));
  const client = new ApiClient({
    baseUrl,
    apiKey: remoteApiKey(baseUrl, { warn: io.err }),
    surface: 'mcp_stdio',
    client: 'solid-mcp-bridge',
  });
  try {
    if (client.apiKey !== null) {
      const me = await client.whoami();
      const reason = me.error?.reason;
      // A server without the whoami route (not_found/unavailable "no route") is tolerated; a refused key is not.
      if (
        !me.ok &&
        reason !== undefined &&
        (reasonInfo(reason).kind === 'auth' ||
          (reason === 'upstream_unavailable' && !/has no GET/.test(me.error!.message)))
      ) {
        throw new VerbError(
          reason,
          me.error!.message,
          me.error!.hint !== undefined ? { hint: me.error!.hint } : {},
        );
      }
    }
    const dashboard = process.env.SOLID_DASHBOARD_URL?.trim().replace(/\/+$/, '');
    const served = await serveMcpBridge({
      client,
      logger,
      refreshMs,
      schemaProfile,
      approvalUrl: () => `${dashboard !== undefined && dashboard !== '' ? dashboard : baseUrl}/#approvals`,
    });
    const onSignal = () => void served.close();
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    await served.closed;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  } finally {
    client.close();
  }
  setTimeout(() => process.exit(process.exitCode ?? 0), 1000).unref();
  return 0;
}

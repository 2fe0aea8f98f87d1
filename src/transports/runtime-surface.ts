/**
 * The runtime as the transports see it: dispatch, the registry (to list and describe verbs), the
 * store and tenants (sessions, keys, rate-limit counters), the clock, the logger, signing keys
 * and the hooks request logs and metrics read. HTTP, MCP, WebMCP, UCP and the remote-CLI routes
 * are typed on this, not on the whole Runtime, so what a transport may reach is listed here.
 * Only the CLI, which creates runtimes, uses `Runtime` itself.
 */
import type { Runtime } from '../runtime/runtime.ts';

export type TransportRuntime = Pick<
  Runtime,
  | 'dispatch'
  | 'registry'
  | 'store'
  | 'logger'
  | 'clock'
  | 'tenants'
  | 'keys'
  | 'secrets'
  | 'authFailure'
  | 'sandboxPrincipal'
  | 'refuse'
  | 'recordRefusal'
  | 'onDispatch'
  | 'onAuditRow'
  | 'afterWrite'
  | 'auditBuffer'
>;

/**
 * What the MCP server itself (tools/list, tools/call, stdio) reads: dispatch, refusals of
 * malformed calls, the logger and the registry's listing. `solid mcp --remote`'s bridge
 * implements exactly this over HTTP (src/remote-client/mcp-bridge.ts).
 */
export type McpRuntime = Pick<TransportRuntime, 'dispatch' | 'logger' | 'refuse'> & {
  registry: Pick<TransportRuntime['registry'], 'all' | 'get' | 'onChange' | 'closest'>;
};

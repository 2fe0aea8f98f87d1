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
  | 'sandboxPrincipal'
  | 'recordRefusal'
  | 'onDispatch'
  | 'onAuditRow'
  | 'afterWrite'
  | 'auditBuffer'
  | 'options'
>;

/**
 * What the MCP server itself (tools/list, tools/call, stdio) reads: dispatch, refusals of
 * malformed calls, the logger and the registry's listing. `solid mcp --remote`'s bridge
 * implements exactly this over HTTP (src/remote-client/mcp-bridge.ts).
 */
export type McpRuntime = Pick<TransportRuntime, 'dispatch' | 'logger' | 'recordRefusal'> & {
  registry: Pick<TransportRuntime['registry'], 'all' | 'get' | 'onChange' | 'closest'>;
  /**
   * Present on a local runtime: the tenants an API key is checked against (src/identity
   * api-key-auth.ts). The `solid mcp --remote` bridge has none: its client sends its own key.
   */
  tenants?: TransportRuntime['tenants'];
  /**
   * A remote runtime (the bridge) that sends a call's API key to its server itself: the runtime as
   * the holder of `apiKey` sees it (that server authenticates the key). mcp/keyed-runtime.ts.
   */
  withApiKey?: (apiKey: string) => McpRuntime;
};

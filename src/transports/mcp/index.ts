/**
 * The MCP transport (MCP 2025-11-25, @modelcontextprotocol/sdk 1.32, low-level `Server`):
 *
 *   createMcpServer(rt, options)   one SDK Server per connection (tools/list, tools/call → dispatch)
 *   serveStdio(rt, options)        stdio (`solid mcp`)
 *   createMcpHttpPlugin(options)   Streamable HTTP at /mcp, a Fastify plugin (`solid serve`)
 *   ToolCatalog, projectVerb       the cached registry → Tool projection
 *   envelopeToToolResult           the envelope → CallToolResult mapping
 *   toPortableSchema               the portable JSON Schema subset
 *   META                           the `_meta` keys (dev.solid-verbs/…)
 *   resolveToolsets, listToolsets  toolsets: verb categories a server exposes (--toolsets)
 *   META_TOOLS                     dynamic mode's search_verbs, describe_verb, call_verb
 *
 * Spec: spec/transports.md §mcp. Client configuration: docs/mcp.md.
 */
export {
  createMcpServer,
  SERVER_INSTRUCTIONS,
  type McpServerOptions,
  type McpCredentials,
} from './mcp-server.ts';
export { serveStdio, DEFAULT_REFRESH_MS, type StdioOptions, type StdioServer } from './stdio.ts';
export { createMcpHttpPlugin, mcpHttpPlugin, DEFAULT_MCP_PATH, type McpHttpOptions } from './http-plugin.ts';
export { ToolCatalog, projectVerb, MCP_SURFACE, type CatalogEntry } from './tool-catalog.ts';
export {
  envelopeToToolResult,
  errorEnvelopeOf,
  jsonResultOf,
  DEFAULT_MAX_RESULT_BYTES,
  DEFAULT_MAX_TEXT_BYTES,
  type ResultLimits,
} from './envelope-map.ts';
export { toPortableSchema, restoreNulls, compactOutputSchema } from './portable-schema.ts';
export { META, META_PREFIX } from './meta-keys.ts';
export { ToolsetError, listToolsets, resolveToolsets, selectionOf, type ToolsetInfo } from './toolsets.ts';
export { ALL_TOOLSETS, CORE_VERBS, parseToolsetNames, toolsetSelection } from '../../runtime/toolsets.ts';
export { META_TOOLS, META_TOOL_NAMES, SEARCH_VERBS, DESCRIBE_VERB, CALL_VERB } from './meta-tools.ts';

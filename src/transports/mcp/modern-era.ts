/**
 * Which MCP era a first message belongs to, without importing the SDK v2 server (issue 36: a
 * 2025-era stdio client never loads @modelcontextprotocol/server). modern.ts re-exports it.
 * Spec: spec/transports.md §mcp-2026.
 */

/** `_meta` key naming a request's protocol version (the SDK v2's PROTOCOL_VERSION_META_KEY). */
export const MODERN_PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';

/**
 * Is this JSON-RPC message of the 2026-07-28 era? `server/discover`, or a message whose
 * `params._meta` names a protocol version (the per-request envelope). Anything else — initialize,
 * a claim-less request or notification, a response — is 2025-era.
 */
export function isModernMessage(message: unknown): boolean {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return false;
  const m = message as { method?: unknown; params?: { _meta?: Record<string, unknown> } };
  if (m.method === 'server/discover') return true;
  if (m.method === 'initialize') return false;
  const meta = m.params?._meta;
  return (
    meta !== null && typeof meta === 'object' && typeof meta[MODERN_PROTOCOL_VERSION_META_KEY] === 'string'
  );
}

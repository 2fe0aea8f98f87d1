/**
 * The `_meta` keys of the MCP projection, all under our own reverse-DNS prefix
 * (`dev.solid-verbs/…`; MCP reserves prefixes whose second label is `modelcontextprotocol` or `mcp`).
 *
 * On each tool (tools/list):   consent_class on writes; role_floor when not the class default,
 *                              tier_floor above starter, revertible on writes (tool-catalog.ts).
 *                              No verb key: the tool name is the verb name with "__" for ".".
 * On a tools/call request:     idempotency_key, confirm, nonce. They ride in `params._meta`, not
 *                              in `arguments`, so a tool's inputSchema stays the verb's own.
 * On a tools/call result:      audit_id, idempotency_key, rollback_handle, replayed; tenant
 *                              ({ id, sandbox: true }) when the call ran without an API key.
 *
 * There is no key for a typed phrase: a phrase typed by the model is not consent, so none is read
 * (spec/transports.md §mcp-consent).
 */

export const META_PREFIX = 'dev.solid-verbs/';

/** The `_meta` keys solid-verbs puts on MCP tools and results, by purpose. spec/transports.md §mcp */
export const META = {
  // tools/list
  consentClass: `${META_PREFIX}consent_class`,
  roleFloor: `${META_PREFIX}role_floor`,
  tierFloor: `${META_PREFIX}tier_floor`,
  revertible: `${META_PREFIX}revertible`,
  // tools/call request
  idempotencyKey: `${META_PREFIX}idempotency_key`,
  confirm: `${META_PREFIX}confirm`,
  nonce: `${META_PREFIX}nonce`,
  // tools/call result
  auditId: `${META_PREFIX}audit_id`,
  rollbackHandle: `${META_PREFIX}rollback_handle`,
  replayed: `${META_PREFIX}replayed`,
  tenant: `${META_PREFIX}tenant`,
} as const;

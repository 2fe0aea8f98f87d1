/**
 * envelopeToToolResult(envelope): THE mapping from an envelope to an MCP `CallToolResult`. Pure.
 *
 *   ok          content = one text block holding the result as compact JSON (the whole result),
 *               NO structuredContent; _meta = dev.solid-verbs/{audit_id, idempotency_key,
 *               rollback_handle, replayed, tenant (keyless calls: the sandbox that answered)}.
 *               Why text only: MCP (2025-06-18 through 2026-07-28, server/tools "Structured
 *               Content") makes structuredContent optional for a tool without an outputSchema
 *               (our tools have none, tool-catalog.ts) and says a tool that returns it SHOULD
 *               also return the serialized JSON as text "for backwards compatibility"; hosts
 *               forward `content` to the model (several read nothing else), so the text is the
 *               copy to keep, and a second copy doubled every answer (2.1× the HTTP envelope).
 *               `jsonResultOf` reads the result back.
 *   not ok      isError: true, NO structuredContent, content = two text blocks: one line
 *               "reason: message — hint" (a model that reads only the first still
 *               self-corrects), then the WHOLE envelope as JSON (reason, message, hint, path,
 *               details, consent…; `errorEnvelopeOf` reads it back)
 *   pending     as not ok; the hint says how to consent ON MCP: the consent options ride in the
 *               request's `_meta` (dev.solid-verbs/confirm + dev.solid-verbs/nonce), never in
 *               the arguments, and a typed phrase is never typed by the model (out-of-band
 *               approval instead); a pending answer to a call without consent `_meta`
 *               (`consent.retry`, spec/consent.md §plain-retry) says instead who acts first and
 *               to call the same tool again with the same arguments
 *
 * Size: stdio caps one message at 10 MiB (SDK STDIO_DEFAULT_MAX_BUFFER_SIZE) and closes the
 * connection past it, so results are bounded HERE, never by the transport: a result whose JSON
 * exceeds `maxResultBytes` (default 4 MiB) is answered as an isError envelope with reason
 * result_too_large and a hint to page or filter. Worst case on the wire: the 4 MiB text JSON-
 * escaped (at most 2×) + framing, under 10 MiB.
 *
 * Spec: spec/transports.md §mcp-results.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Envelope } from '../../spec/types.ts';
import { META } from './meta-keys.ts';

/** Largest result (bytes of its JSON) sent in one answer by default: 4 MiB. */
export const DEFAULT_MAX_RESULT_BYTES = 4 * 1024 * 1024;
/** @deprecated The text is the only copy of a result now (never cut); kept for importers. */
export const DEFAULT_MAX_TEXT_BYTES = 1024 * 1024;

/** Byte limits of an MCP tool result. spec/transports.md §mcp-results */
export interface ResultLimits {
  /** Largest result (bytes of its JSON) sent in one answer; above → result_too_large. */
  maxResultBytes: number;
  /** @deprecated Ignored: the text is the only copy of a result, bounded by maxResultBytes. */
  maxTextBytes?: number;
}

export interface ToolResultOptions {
  /** The tool name the client called (hints name it). */
  toolName: string;
  limits?: Partial<ResultLimits>;
  /** Where a human approves a pending typed-phrase action out of band (dashboard page), if any. */
  approvalUrl?: (approvalId: string) => string | undefined;
}

/** Map an envelope to the tool result (see the header). */
export function envelopeToToolResult(envelope: Envelope, options: ToolResultOptions): CallToolResult {
  const maxResult = options.limits?.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;
  if (!envelope.ok) return errorResult(withMcpHint(envelope, options));
  const json = JSON.stringify(envelope.result ?? {});
  // A UTF-16 unit is at most 3 UTF-8 bytes: short results skip the byte count.
  const bytes = json.length * 3 <= maxResult ? json.length : Buffer.byteLength(json, 'utf8');
  if (bytes > maxResult) return errorResult(tooLarge(envelope, bytes, maxResult));
  const out: CallToolResult = { content: [{ type: 'text', text: json }] };
  const meta = resultMeta(envelope);
  if (meta !== undefined) out._meta = meta;
  return out;
}

/**
 * The result of a successful tool result of ours (its one text block, parsed); undefined for an
 * isError result or one that is not ours. For clients and tests of this server.
 */
export function jsonResultOf(result: { isError?: boolean; content?: unknown }): unknown {
  if (result.isError === true || !Array.isArray(result.content) || result.content.length !== 1)
    return undefined;
  const block = result.content[0] as { type?: string; text?: unknown } | undefined;
  if (block?.type !== 'text' || typeof block.text !== 'string') return undefined;
  try {
    return JSON.parse(block.text) as unknown;
  } catch {
    return undefined;
  }
}

/** A successful tool result holding `result` as its compact JSON text (the meta tools' answers). */
export function jsonToolResult(result: unknown): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(result) }] };
}

function errorResult(envelope: Envelope): CallToolResult {
  const e = envelope.error ?? { reason: 'internal_error', message: 'The call failed.' };
  const line = `${e.reason}: ${e.message}${e.hint ? ` — ${e.hint}` : ''}`.replace(/\s*\n\s*/g, ' ');
  const out: CallToolResult = {
    content: [
      { type: 'text', text: line },
      { type: 'text', text: JSON.stringify(envelope) },
    ],
    isError: true,
  };
  const meta = resultMeta(envelope);
  if (meta !== undefined) out._meta = meta;
  return out;
}

/**
 * The envelope of an isError tool result (its second text block, see the header); undefined for a
 * success or a result that is not one of ours. For clients and tests of this server.
 */
export function errorEnvelopeOf(result: { isError?: boolean; content?: unknown }): Envelope | undefined {
  if (result.isError !== true || !Array.isArray(result.content)) return undefined;
  const block = result.content[1] as { type?: string; text?: unknown } | undefined;
  if (block?.type !== 'text' || typeof block.text !== 'string') return undefined;
  try {
    const env = JSON.parse(block.text) as Envelope;
    return typeof env === 'object' && env !== null && env.ok === false ? env : undefined;
  } catch {
    return undefined;
  }
}

function resultMeta(envelope: Envelope): Record<string, unknown> | undefined {
  const meta: Record<string, unknown> = {};
  if (envelope.audit_id !== undefined) meta[META.auditId] = envelope.audit_id;
  if (envelope.idempotency_key !== undefined) meta[META.idempotencyKey] = envelope.idempotency_key;
  if (envelope.rollback_handle !== undefined) meta[META.rollbackHandle] = envelope.rollback_handle;
  if (envelope.replayed === true) meta[META.replayed] = true;
  if (envelope.tenant !== undefined) meta[META.tenant] = envelope.tenant;
  return Object.keys(meta).length > 0 ? meta : undefined;
}

/** The `_meta` a client sends to confirm with a nonce, as JSON for hints. */
export function confirmMetaJson(nonce: string): string {
  return JSON.stringify({ [META.confirm]: true, [META.nonce]: nonce });
}

/**
 * A dispatch_pending envelope with the hint rewritten for MCP (the runtime's hint names the
 * HTTP/CLI options confirm/nonce/typed_phrase; on MCP they are `_meta` keys, and a typed phrase
 * comes from a human through elicitation or an out-of-band approval, never from the model).
 */
function withMcpHint(envelope: Envelope, options: ToolResultOptions): Envelope {
  const c = envelope.consent;
  if (envelope.error?.reason !== 'dispatch_pending' || c === undefined) return envelope;
  const again = `call ${options.toolName} again with the same arguments and _meta ${confirmMetaJson(c.nonce)} before ${c.expires_at}`;
  let hint: string;
  if (c.retry !== undefined) {
    // The caller sent no consent _meta (agent frameworks cannot): the same call again is the
    // retry; the _meta path stays for hosts that use it. spec/consent.md §plain-retry
    const url =
      c.approval_url ??
      (c.approval_id !== undefined ? options.approvalUrl?.(String(c.approval_id)) : undefined);
    const same = `call ${options.toolName} again with the same arguments`;
    hint =
      c.retry.after === 'user_confirms'
        ? `Ask the user: ${c.summary} If they agree, ${same} before ${c.expires_at}; that call is the confirmation and runs once.`
        : `A human must approve this; the model cannot. Tell the user: ${c.summary} A user allowed to approve it does so ${url !== undefined ? `at ${url} (or ` : '('}\`solid approvals approve ${c.approval_id}\` at a terminal on the server); then ${same}. It runs once.`;
    hint += ` (Hosts that send _meta may instead ${again}.)`;
  } else if (c.gate === 'typed_phrase') {
    // The runtime's approval page (consent.approval_url) first; else the transport's own guess.
    const url =
      c.approval_url ??
      (c.approval_id !== undefined ? options.approvalUrl?.(String(c.approval_id)) : undefined);
    const where =
      c.approval_id !== undefined
        ? `\`solid approvals approve ${c.approval_id}\`${url ? ` or ${url}` : ''}`
        : 'the dashboard';
    hint =
      `No human typed the confirmation phrase: a phrase typed by the model, or by this client in a form, is not consent here. ` +
      `Tell the human: ${c.summary} A user allowed to approve it must type ${c.typed_phrase !== undefined ? `"${c.typed_phrase}"` : 'the phrase shown there'} at ${where}. ` +
      `After they approve, ${again}.`;
  } else {
    hint = `Ask the human to confirm: ${c.summary} If they agree, ${again}.`;
  }
  return { ...envelope, error: { ...envelope.error, hint } };
}

function tooLarge(envelope: Envelope, bytes: number, limit: number): Envelope {
  const ran =
    envelope.audit_id !== undefined
      ? `${envelope.verb} ran (audit_id ${envelope.audit_id}), but its`
      : `${envelope.verb} answered, but its`;
  const out: Envelope = {
    ok: false,
    verb: envelope.verb,
    error: {
      reason: 'result_too_large',
      message: `${ran} result is ${bytes} bytes, more than the ${limit} bytes this MCP server sends in one message.`,
      hint: 'Ask for less: narrow the filters, or page with the limit/cursor arguments when the verb has them.',
      details: { bytes, limit_bytes: limit },
    },
  };
  if (envelope.audit_id !== undefined) out.audit_id = envelope.audit_id;
  if (envelope.idempotency_key !== undefined) out.idempotency_key = envelope.idempotency_key;
  if (envelope.rollback_handle !== undefined) out.rollback_handle = envelope.rollback_handle;
  return out;
}

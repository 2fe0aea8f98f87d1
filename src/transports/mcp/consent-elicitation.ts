/**
 * Asking the HUMAN for a typed phrase through MCP form elicitation (`elicitation/create`).
 *
 * A WRITE_FINANCIAL or IRREVERSIBLE verb needs a person to type its phrase; a phrase written by
 * the model is not consent, so the MCP server never reads one from arguments or `_meta`. When the
 * client declared form elicitation, the server asks the human with one string field whose
 * `pattern` is the exact phrase (regex metacharacters escaped), showing the summary and the
 * phrase. The SDK validates the answer against that pattern and throws -32602 on a mismatch;
 * that is reported as `mismatch`, never as a protocol error of the whole call.
 *
 * Spec: spec/transports.md §mcp-consent, spec/consent.md §typed-phrase.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  ErrorCode,
  McpError,
  type ElicitRequestFormParams,
  type ElicitRequestURLParams,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { ConsentRequest } from '../../spec/types.ts';
import type { Store } from '../../store/store.ts';

/** Default time a human has to answer (ms): the nonce's own time to live is 300 s. */
export const DEFAULT_ELICITATION_TIMEOUT_MS = 300_000;

/** The requested field's name. */
export const PHRASE_FIELD = 'typed_phrase';

export type PhraseAnswer =
  /** The human typed the phrase exactly (the SDK checked it against the pattern). */
  | { kind: 'typed'; phrase: string }
  /** The human typed something else (the SDK refused it against the pattern). */
  | { kind: 'mismatch' }
  | { kind: 'declined' }
  | { kind: 'cancelled' }
  /** No answer: timeout, cancelled call, or a transport failure. Fail closed (out of band). */
  | { kind: 'unanswered'; why: string };

/** Did the client declare form elicitation (capabilities.elicitation.form, or `{}`)? */
export function canElicitForm(server: Server): boolean {
  return server.getClientCapabilities()?.elicitation?.form !== undefined;
}

/** Escape ECMA-262 syntax characters so the phrase matches itself literally (valid with the `u` flag). */
export function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
}

/** The form shown to the human: the summary, the exact phrase, one string field. */
export function phraseRequest(verbTitle: string, consent: ConsentRequest): ElicitRequestFormParams {
  const phrase = consent.typed_phrase ?? '';
  return {
    mode: 'form',
    message:
      `An AI agent asks to run "${verbTitle}" (${consent.class.replace(/_/g, ' ').toLowerCase()}).\n\n` +
      `${consent.summary}\n\n` +
      `To approve, type exactly:\n\n    ${phrase}\n\n` +
      `Decline to refuse. Nothing happens unless the phrase matches character for character.`,
    requestedSchema: {
      type: 'object',
      properties: {
        [PHRASE_FIELD]: {
          type: 'string',
          title: 'Confirmation phrase',
          description: `Type exactly: ${phrase}`,
          minLength: 1,
          // `pattern` is not in the SDK's StringSchema type but is part of the form-elicitation
          // subset; the SDK server validates the answer against it.
          ...({ pattern: `^${escapeRegExp(phrase)}$` } as object),
        },
      },
      required: [PHRASE_FIELD],
    },
  };
}

/**
 * Ask the human (the caller checked `canElicitForm`). `relatedRequestId` ties the request to the
 * tools/call being answered, so over Streamable HTTP it travels on that call's response stream.
 */
export async function askForPhrase(
  server: Server,
  verbTitle: string,
  consent: ConsentRequest,
  options: { relatedRequestId: RequestId; signal?: AbortSignal; timeoutMs?: number },
): Promise<PhraseAnswer> {
  try {
    const res = await server.elicitInput(phraseRequest(verbTitle, consent), {
      relatedRequestId: options.relatedRequestId,
      signal: options.signal,
      timeout: options.timeoutMs ?? DEFAULT_ELICITATION_TIMEOUT_MS,
    });
    if (res.action === 'decline') return { kind: 'declined' };
    if (res.action === 'cancel') return { kind: 'cancelled' };
    const typed = res.content?.[PHRASE_FIELD];
    return typeof typed === 'string' ? { kind: 'typed', phrase: typed } : { kind: 'mismatch' };
  } catch (err) {
    if (err instanceof McpError && err.code === ErrorCode.InvalidParams) return { kind: 'mismatch' };
    return { kind: 'unanswered', why: err instanceof Error ? err.message : String(err) };
  }
}

/** Did the client declare URL-mode elicitation (MCP 2025-11-25, SEP-1036: capabilities.elicitation.url)? */
export function canElicitUrl(server: Server): boolean {
  return server.getClientCapabilities()?.elicitation?.url !== undefined;
}

/** How often the server looks whether the human decided on the approval page (ms). */
export const APPROVAL_POLL_MS = 500;

/** What came of asking the client to open the approval page. */
export type UrlAnswer =
  /** A human decided on the page in time (approved, or rejected: the confirm call says which). */
  | { kind: 'decided' }
  /** The client's user declined or dismissed opening the page: the approval stays open. */
  | { kind: 'declined' }
  /** Nobody decided before the timeout, the call was cancelled, or the client failed. */
  | { kind: 'unanswered'; why: string };

/**
 * The URL-mode request: the client opens the server's approval page (where a signed-in human sees
 * the action and types the phrase); nothing sensitive passes through the client or the model.
 */
export function approvalPageRequest(
  verbTitle: string,
  consent: ConsentRequest & { approval_url: string },
): ElicitRequestURLParams {
  return {
    mode: 'url',
    elicitationId: String(consent.approval_id ?? consent.nonce.slice(-22)),
    url: consent.approval_url,
    message:
      `An AI agent asks to run "${verbTitle}": ${consent.summary} ` +
      `Open this page of the business's server, sign in and approve or reject it there.`,
  };
}

/**
 * Ask the client to open the approval page (the caller checked `canElicitUrl` and that the
 * pending answer carries `approval_url`), then wait until the approval is decided — read from
 * `isDecided` every {@link APPROVAL_POLL_MS} — or the nonce expires, the timeout passes, or the
 * call is cancelled; then tell the client the elicitation completed (best effort).
 * spec/consent.md §approval-page, spec/transports.md §mcp-consent
 */
export async function askToApproveAtUrl(
  server: Server,
  verbTitle: string,
  consent: ConsentRequest & { approval_url: string },
  isDecided: () => Promise<boolean>,
  options: { relatedRequestId: RequestId; signal?: AbortSignal; timeoutMs?: number; now?: () => number },
): Promise<UrlAnswer> {
  const now = options.now ?? Date.now;
  const request = approvalPageRequest(verbTitle, consent);
  const deadline = Math.min(
    now() + (options.timeoutMs ?? DEFAULT_ELICITATION_TIMEOUT_MS),
    Date.parse(consent.expires_at),
  );
  try {
    const res = await server.elicitInput(request, {
      relatedRequestId: options.relatedRequestId,
      signal: options.signal,
      timeout: Math.max(1, deadline - now()),
    });
    if (res.action !== 'accept') return { kind: 'declined' };
  } catch (err) {
    return { kind: 'unanswered', why: err instanceof Error ? err.message : String(err) };
  }
  while (now() < deadline) {
    if (options.signal?.aborted) return { kind: 'unanswered', why: 'the call was cancelled' };
    if (await isDecided()) {
      await server
        .createElicitationCompletionNotifier(request.elicitationId, {
          relatedRequestId: options.relatedRequestId,
        })()
        .catch(() => {
          /* the client went away: the call's answer still says what happened */
        });
      return { kind: 'decided' };
    }
    await new Promise((resolve) => setTimeout(resolve, APPROVAL_POLL_MS));
  }
  return { kind: 'unanswered', why: 'no human decided on the approval page in time' };
}

/**
 * `McpServerOptions.approvalDecided` over a store: true once the approval (an id from this
 * server's own pending answer) is no longer pending, or is pending past its expiry.
 */
export function approvalDecidedIn(
  store: Store,
  clock: () => Date = () => new Date(),
): (approvalId: string) => Promise<boolean> {
  return async (approvalId) => {
    const row = await store.read((q) =>
      q.get<{ status: string; expires_at: string }>(
        'SELECT status, expires_at FROM approvals WHERE approval_id = ?',
        [approvalId],
      ),
    );
    return row === undefined || row.status !== 'pending' || row.expires_at <= clock().toISOString();
  };
}

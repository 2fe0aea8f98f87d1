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
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { ConsentRequest } from '../../spec/types.ts';

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

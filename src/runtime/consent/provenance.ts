/**
 * Consent provenance: who consented to a write, in which channel, when, and through which
 * approval — `{ class, channel, user_id | "agent", approval_id, at }` — carried by the write's
 * audit row (column `consent`, in the row hash) and its signed receipt (member `consent`), and
 * put in words for `solid receipt verify` and the dashboard ("Typed by Jane Ruiz (owner) on the
 * approval page, 10:14"; "Typed by the agent: this business allows agent-typed phrases";
 * "Confirmed by the agent").
 *
 * Spec: spec/consent.md §provenance, spec/receipts.md §consent.
 */
import type { VerbClass } from '../../spec/types.ts';

/** Channels a consent can come from. `agent`: the agent's own call (a confirm, or a phrase where the tenant allows it). */
export const CONSENT_CHANNELS = [
  'approval_page',
  'dashboard',
  'operator_terminal',
  'mcp_form',
  'webmcp_dialog',
  'agent',
] as const;
export type ConsentChannel = (typeof CONSENT_CHANNELS)[number];

/** What kind of consent it was: a typed phrase, a confirmation click, or an out-of-band approval. */
export type ConsentAct = 'typed_phrase' | 'confirmation' | 'approval';

/** The provenance object of a consented write (audit row and receipt). */
export interface ConsentProvenance {
  /** The class of the gate that applied (the declared class, or higher when a rule raised it). */
  class: VerbClass;
  act: ConsentAct;
  channel: ConsentChannel;
  /** The human who consented, or "agent" when the agent's own call was the consent. */
  user_id: number | 'agent';
  /** The role of that human at the time (absent for the agent). */
  role?: string;
  /** That human's display name at the time, when known (the users table). */
  user_name?: string;
  /** The approval that carried the consent (out-of-band approvals and typed-phrase gates). */
  approval_id?: string;
  /** When the consent was given (the approval's decision, or the confirm call). */
  at: string;
  /** The owner's rules that raised the gate, when any. */
  raised_by?: string[];
}

/**
 * The channel of a call that carries consent itself (a confirm or a typed phrase), from what the
 * transport marked: a human channel is named by its surface (the dashboard over HTTP, the
 * terminal prompt on the CLI, the MCP form, the WebMCP dialog); everything else is the agent.
 */
export function channelOfCall(
  humanChannel: boolean,
  surface: string | undefined,
  named?: string,
): ConsentChannel {
  if (named !== undefined && (CONSENT_CHANNELS as readonly string[]).includes(named))
    return named as ConsentChannel;
  if (!humanChannel) return 'agent';
  if (surface === 'http') return 'dashboard';
  if (surface === 'cli') return 'operator_terminal';
  if (surface === 'mcp_stdio' || surface === 'mcp') return 'mcp_form';
  if (surface === 'webmcp') return 'webmcp_dialog';
  return 'agent';
}

/** Canonical text of a provenance object (the audit column): sorted keys, no spaces. */
export function provenanceText(p: ConsentProvenance): string {
  const o = p as unknown as Record<string, unknown>;
  return JSON.stringify(
    Object.fromEntries(
      Object.keys(o)
        .sort()
        .map((k) => [k, o[k]]),
    ),
  );
}

/** Parse the audit column (or a receipt member) back; undefined when absent or not provenance. */
export function parseProvenance(v: unknown): ConsentProvenance | undefined {
  let o: unknown = v;
  if (typeof v === 'string') {
    try {
      o = JSON.parse(v);
    } catch {
      return undefined;
    }
  }
  if (o === null || typeof o !== 'object') return undefined;
  const p = o as Partial<ConsentProvenance>;
  if (typeof p.channel !== 'string' || typeof p.at !== 'string' || p.user_id === undefined) return undefined;
  return p as ConsentProvenance;
}

const CHANNEL_WORDS: Record<ConsentChannel, string> = {
  approval_page: 'on the approval page',
  dashboard: 'in the dashboard',
  operator_terminal: "at the operator's terminal",
  mcp_form: "in the MCP client's form",
  webmcp_dialog: 'in the page dialog',
  agent: 'by the agent',
};

/** "10:14" (UTC) of an ISO instant; the date too when `withDate`. */
function clock(iso: string, withDate: boolean): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const hm = iso.slice(11, 16);
  return withDate ? `${iso.slice(0, 10)} ${hm} UTC` : `${hm} UTC`;
}

/**
 * The provenance in words. `nameOf` gives a user's display name when known (the users table);
 * otherwise "user N (role)". Examples: "Typed by Jane Ruiz (owner) on the approval page, 10:14
 * UTC"; "Typed by the agent: this business allows agent-typed phrases"; "Confirmed by the agent".
 */
export function provenanceWords(
  p: ConsentProvenance,
  nameOf?: (userId: number) => string | undefined,
  options: { withDate?: boolean } = {},
): string {
  const at = clock(p.at, options.withDate === true);
  const raised =
    p.raised_by !== undefined && p.raised_by.length > 0
      ? ` (gate raised by the owner's rule ${p.raised_by.join(', ')})`
      : '';
  if (p.user_id === 'agent' || p.channel === 'agent') {
    if (p.act === 'typed_phrase')
      return `Typed by the agent: this business allows agent-typed phrases, ${at}${raised}`;
    return `Confirmed by the agent, ${at}${raised}`;
  }
  const name = p.user_name ?? nameOf?.(p.user_id);
  const who = `${name ?? `user ${p.user_id}`}${p.role !== undefined ? ` (${p.role})` : ''}`;
  const verb = p.act === 'confirmation' ? 'Confirmed' : 'Typed';
  return `${verb} by ${who} ${CHANNEL_WORDS[p.channel]}, ${at}${p.approval_id ? ` (approval ${p.approval_id})` : ''}${raised}`;
}

/**
 * A receipt's `consent` member with its words, for `solid receipt verify` and
 * audit.verify_receipt; null when the receipt carries none (older receipts, ungated writes).
 */
export function consentInWords(
  v: unknown,
  nameOf?: (userId: number) => string | undefined,
): { provenance: ConsentProvenance; words: string } | null {
  const p = parseProvenance(v);
  return p === undefined ? null : { provenance: p, words: provenanceWords(p, nameOf, { withDate: true }) };
}

/**
 * What the dashboard views share: the session, the verb catalogue, one way to call a verb
 * (POST /api/v1/dashboard/dispatch/{verb} through the consent loop, so gated actions open the same
 * consent dialog as WebMCP tools), and whether the signed-in role may use a verb at all — a view
 * never calls a verb below the caller's role floor, so a visit leaves no `role_denied` row
 * (spec/audit.md §dashboard-reads).
 */
import { callWithConsent, type ConsentOutcome } from './verb-client.ts';
import type { Envelope } from '../src/spec/types.ts';

/** `result` of the session answers (src/identity/session-routes.ts). */
export interface SessionInfo {
  company_id: number;
  tenant_name: string;
  user_id: number;
  role: string;
  tier: string;
  key_id: string | null;
  /** `human` for a person signed in (passkey, TOTP). */
  actor?: string;
  /** The signed-in person's name. */
  user_name?: string | null;
  expires_at: string;
  csrf_token: string;
}

/** One entry of GET /api/v1/dashboard/catalog. */
export interface CatalogEntry {
  name: string;
  tool_name: string;
  title: string | null;
  description: string;
  shape: string;
  category: string;
  consent_class: string | null;
  side_effects: string;
  role_floor: string;
  tier_floor: string;
  surfaces: string[];
  webmcp_surfaces: string[];
  revertible: boolean;
  /** The verb that undoes this one when it has no revert (a charge's refund), from its receipt. */
  undone_by?: { verb: string; args: Record<string, string>; label: string } | null;
}

/** Role ranks (src/runtime/verb.ts ROLE_RANK). */
export const ROLE_RANK: Readonly<Record<string, number>> = { read_only: 0, employee: 1, admin: 2, owner: 3 };

export interface DashboardContext {
  session: SessionInfo;
  catalog: CatalogEntry[];
  /** Is this verb registered and callable from the dashboard (projected on http)? */
  has(verb: string): boolean;
  /** Registered, callable here, and the signed-in role meets its role floor. */
  canUse(verb: string): boolean;
  /** The catalogue entry of a verb callable here, if any. */
  entry(verb: string): CatalogEntry | undefined;
  /** The verb's title (or its name). */
  title(verb: string): string;
  /** Call a verb as the signed-in human, through the consent dialog when it is gated. */
  call(verb: string, input: Record<string, unknown>): Promise<ConsentOutcome>;
  /** Tell the views that data changed. */
  changed(): void;
}

/**
 * Build the context; `onChanged` is what `changed()` runs, `onSessionEnded` runs when a call
 * answers session_invalid (the session expired or was revoked: back to sign-in).
 */
export function createContext(
  session: SessionInfo,
  catalog: CatalogEntry[],
  onChanged: () => void,
  onSessionEnded: () => void,
): DashboardContext {
  const callable = new Map(catalog.filter((v) => v.surfaces.includes('http')).map((v) => [v.name, v]));
  const rank = ROLE_RANK[session.role] ?? 0;
  return {
    session,
    catalog,
    has: (verb) => callable.has(verb),
    canUse: (verb) => {
      const v = callable.get(verb);
      return v !== undefined && rank >= (ROLE_RANK[v.role_floor] ?? 0);
    },
    entry: (verb) => callable.get(verb),
    title: (verb) => callable.get(verb)?.title ?? verb,
    call: async (verb, input) => {
      const outcome = await callWithConsent({
        tool: verb,
        title: callable.get(verb)?.title ?? verb,
        input,
        target: { kind: 'dashboard' },
      });
      if (!outcome.envelope.ok && outcome.envelope.error?.reason === 'session_invalid') onSessionEnded();
      return outcome;
    },
    changed: onChanged,
  };
}

/** One sentence for a failed envelope: its message and hint (the reason code stays in a data attribute). */
export function describeError(envelope: Envelope): string {
  const e = envelope.error;
  if (e === undefined) return 'Something went wrong.';
  return `${e.message}${e.hint !== undefined ? ` ${e.hint}` : ''} (${e.reason})`;
}

/**
 * What the dashboard panels share: the session, the verb catalogue, and one way to call a verb
 * (POST /api/v1/dashboard/dispatch/{verb} through the consent loop, so gated actions open the same
 * consent dialog as WebMCP tools).
 */
import { callWithConsent, type ConsentOutcome, type Envelope } from './verb-client.ts';

/** `result` of the session answers (src/transports/webmcp/session-routes.ts). */
export interface SessionInfo {
  company_id: number;
  tenant_name: string;
  user_id: number;
  role: string;
  tier: string;
  key_id: string | null;
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
}

export interface DashboardContext {
  session: SessionInfo;
  catalog: CatalogEntry[];
  /** Is this verb registered and callable from the dashboard (projected on http)? */
  has(verb: string): boolean;
  /** Call a verb as the signed-in human, through the consent dialog when it is gated. */
  call(verb: string, input: Record<string, unknown>): Promise<ConsentOutcome>;
  /** Tell the panels that data changed (reloads trail, approvals, reputation). */
  changed(): void;
}

/** Build the context; `onChanged` is what `changed()` runs. */
export function createContext(
  session: SessionInfo,
  catalog: CatalogEntry[],
  onChanged: () => void,
): DashboardContext {
  const callable = new Map(catalog.filter((v) => v.surfaces.includes('http')).map((v) => [v.name, v]));
  return {
    session,
    catalog,
    has: (verb) => callable.has(verb),
    call: (verb, input) =>
      callWithConsent({
        tool: verb,
        title: callable.get(verb)?.title ?? verb,
        input,
        target: { kind: 'dashboard' },
      }),
    changed: onChanged,
  };
}

/** One line for a failed envelope: message and hint. */
export function describeError(envelope: Envelope): string {
  const e = envelope.error;
  if (e === undefined) return 'Unknown error.';
  return `${e.message}${e.hint !== undefined ? ` ${e.hint}` : ''} (${e.reason})`;
}

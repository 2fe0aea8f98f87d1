/**
 * The dashboard's own API (spec/transports.md §webmcp-dashboard):
 *
 *   GET  /api/v1/dashboard/catalog
 *        → 200 { verbs: CatalogEntry[], total }: every registered verb with its catalogue facts
 *          (category, consent class, floors, surfaces). The registry is public (it is also
 *          GET /api/v1/agent/verbs); no session needed.
 *   POST /api/v1/dashboard/dispatch/{verb}   body { input?, confirm?, nonce?, typed_phrase?, idempotency_key? }
 *        → the dispatch envelope (status from envelopeToHttp). Session, same-origin Origin and
 *          X-CSRF-Token required (401 session_invalid, 403 origin_denied / csrf_failed).
 *
 * The dashboard is a human's HTTP client, so its calls dispatch on the `http` surface with the
 * session's principal (agent_type `dashboard`): the human-only verbs (approvals.approve /
 * approvals.reject, projected on http and cli) work there and stay out of agents' WebMCP tool
 * lists. Every gate still applies: role floors, the consent gate (the dashboard shows the same
 * consent dialog), daily caps, the audit row.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import { dispatchAndReply } from './browser-dispatch.ts';
import { parseCallBody } from './call-body.ts';
import { requireSessionForWrite } from '../../identity/request-guard.ts';
import type { Principal } from '../../spec/types.ts';
import type { SessionStore, WebSession } from '../../identity/session-store.ts';
import { ROUTE_DOCS } from './route-docs.ts';
import { onChannel } from '../../identity/principal.ts';

/** The session each dashboard dispatch's onRequest hook checked (session, Origin, CSRF). */
const checkedSessions = new WeakMap<FastifyRequest, WebSession>();

/** The session's principal as the dashboard acts: agent_type `dashboard`, on its audit rows and refusals alike. */
function dashboardPrincipal(p: Principal): Principal {
  return onChannel(p, 'dashboard', 'dashboard');
}

/** One catalogue entry of `GET /api/v1/dashboard/catalog`. */
export interface CatalogEntry {
  name: string;
  tool_name: string;
  title: string | null;
  description: string;
  shape: string;
  category: string;
  /** null: decided per call from the target action (audit.revert, approvals.approve…). */
  consent_class: string | null;
  side_effects: string;
  role_floor: string;
  tier_floor: string;
  surfaces: string[];
  webmcp_surfaces: string[];
  revertible: boolean;
  /** The verb that undoes this one when it has no revert (a charge's refund), or null. */
  undone_by: { verb: string; args: Record<string, string>; label: string } | null;
}

export interface DashboardApiDeps {
  rt: Runtime;
  sessions: SessionStore;
  allowedOrigins: readonly string[];
  /** Body limit of the dispatch route in bytes. */
  bodyLimitBytes: number;
}

/** Register the catalogue and dispatch routes on `app`. */
export function registerDashboardApiRoutes(app: FastifyInstance, deps: DashboardApiDeps): void {
  const { rt, sessions, allowedOrigins } = deps;

  app.get(
    '/api/v1/dashboard/catalog',
    { config: ROUTE_DOCS['GET /api/v1/dashboard/catalog'] },
    async function catalog(_request: FastifyRequest, reply: FastifyReply) {
      const verbs: CatalogEntry[] = rt.registry.all().map((v) => ({
        name: v.name,
        tool_name: v.toolName,
        title: v.definition.title ?? null,
        description: v.definition.description,
        shape: v.shape,
        category: v.category,
        consent_class: v.delegated ? null : v.consentClass,
        side_effects: v.record.side_effects ?? 'read',
        role_floor: v.roleFloor,
        tier_floor: v.tierFloor,
        surfaces: [...v.surfaces],
        webmcp_surfaces: [...v.webmcpSurfaces],
        revertible: v.revertible,
        undone_by:
          v.definition.undone_by === undefined
            ? null
            : { ...v.definition.undone_by, args: { ...v.definition.undone_by.args } },
      }));
      return reply
        .header('cache-control', 'no-cache')
        .type('application/json; charset=utf-8')
        .send({ verbs, total: verbs.length });
    },
  );

  app.post(
    '/api/v1/dashboard/dispatch/:verb',
    {
      bodyLimit: deps.bodyLimitBytes,
      config: ROUTE_DOCS['POST /api/v1/dashboard/dispatch/:verb'],
      // Before the body is parsed: the session, its Origin and its CSRF token are checked first
      // (a foreign or token-less request is refused as such, whatever its body), and then a
      // signed-in dashboard's malformed, duplicate-key or prototype-key body is an audited attempt
      // in its tenant (the error handler reads the noted principal), named as the dashboard.
      onRequest: async (request: FastifyRequest) => {
        checkedSessions.set(
          request,
          await requireSessionForWrite(sessions, request, allowedOrigins, dashboardPrincipal),
        );
      },
    },
    async function dashboardDispatch(request: FastifyRequest, reply: FastifyReply) {
      const verb = String((request.params as Record<string, unknown>).verb ?? '');
      const session = checkedSessions.get(request)!;
      const body = parseCallBody(request.body, { surface: false });
      return dispatchAndReply(
        rt,
        request,
        reply,
        // A signed-in page of this server (session cookie, same Origin, CSRF token): the session's
        // principal, human on the dashboard channel only when a person signed in (src/identity).
        { principal: dashboardPrincipal(session.principal), surface: 'http' },
        verb,
        body,
      );
    },
  );
}

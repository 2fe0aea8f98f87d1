/**
 * The surface a thin client projects, declared on its HTTP dispatch requests.
 *
 * In remote mode the `solid` CLI and the `solid mcp` bridge reach the runtime through
 * `POST /api/v1/agent/dispatch/{verb}`. So that a verb answers them exactly as it answers the
 * embedded CLI or the stdio MCP server (a verb not on `mcp_stdio` is refused to the bridge with
 * surface_denied, audit rows name the surface the human used), they send
 * `Solid-Surface: cli` or `Solid-Surface: mcp_stdio`. Absent, the surface is `http`.
 *
 * A declared surface narrows or re-labels what an HTTP client with the same key could do; it is a
 * projection, never a credential: roles, tiers, consent and the blocklist apply unchanged.
 *
 * Spec: spec/transports.md §remote.
 */
import { VerbError } from '../../runtime/errors.ts';

/** Request header naming the declared surface. */
export const CLIENT_SURFACE_HEADER = 'solid-surface';

/** Surfaces a client may declare over HTTP (webmcp and ucp have their own routes and proofs). */
export const DECLARABLE_SURFACES = ['http', 'cli', 'mcp_stdio'] as const;
export type DeclarableSurface = (typeof DECLARABLE_SURFACES)[number];

/**
 * The dispatch surface of a request from its `Solid-Surface` header value.
 * @returns 'http' when absent
 * @throws VerbError invalid_request for any other value
 */
export function clientSurfaceOf(header: string | undefined): DeclarableSurface {
  if (header === undefined) return 'http';
  const value = header.trim().toLowerCase();
  if ((DECLARABLE_SURFACES as readonly string[]).includes(value)) return value as DeclarableSurface;
  throw new VerbError(
    'invalid_request',
    `The Solid-Surface header "${header.slice(0, 40)}" is not a surface a client may declare.`,
    {
      hint: `Send one of ${DECLARABLE_SURFACES.join(', ')}, or leave the header out (http).`,
      details: { allowed: [...DECLARABLE_SURFACES] },
    },
  );
}

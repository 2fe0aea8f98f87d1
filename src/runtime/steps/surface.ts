/**
 * Step 5, surface: `surface_denied` when the verb is not projected onto this transport (or WebMCP
 * page surface), or is outside the MCP server's toolsets.
 * Spec: spec/manifest.md §record (surfaces), spec/transports.md §mcp-toolsets.
 */
import { VerbError } from '../errors.ts';
import { surfaceDenied } from '../verb-checks.ts';
import type { Resolved, Step } from './call.ts';

export const surface: Step<Resolved> = {
  name: 'surface',
  run(c) {
    const { verb, caller } = c;
    const denied = surfaceDenied(verb, caller.surface, caller.webmcpSurface);
    if (denied !== undefined) throw denied;
    if (caller.toolsets !== undefined && !caller.toolsets.admits(verb)) {
      throw new VerbError(
        'surface_denied',
        `${verb.name} is in the toolset "${verb.category}", which this MCP ${caller.toolsets.byRequest === true ? 'request (X-MCP-Toolsets)' : 'server'} does not expose (enabled: ${caller.toolsets.names.join(', ')}).`,
        {
          hint:
            caller.toolsets.byRequest === true
              ? `Add ${verb.category} to the X-MCP-Toolsets header if the server serves it, or leave the header out.`
              : `Start the server with --toolsets ${[...caller.toolsets.names, verb.category].join(',')} (or SOLID_TOOLSETS), or --toolsets all.`,
          details: { toolset: verb.category, enabled: [...caller.toolsets.names] },
        },
      );
    }
    return undefined;
  },
};

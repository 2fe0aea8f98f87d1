/**
 * Refusals decided on a compiled verb alone, shared by the pipeline's steps and by the transaction
 * ledger (which checks each step of a transaction the same way): the surface projection and the
 * first input-schema issue.
 *
 * Spec: spec/manifest.md §record (surfaces), spec/envelope.md §error, spec/transactions.md.
 */
import type { CredentialScope, Principal, Surface, WebmcpSurface } from '../spec/types.ts';
import type { ToolsetSelection } from './core.ts';
import { VerbError } from './errors.ts';
import type { CompiledVerb } from './verb.ts';
import { CORE_VERBS } from './toolsets.ts';

/** Does a credential's allow-list (verbs or toolsets) name `verb`? True when it has none; core verbs always. */
export function scopeAdmits(scope: CredentialScope | undefined, verb: CompiledVerb): boolean {
  if (scope === undefined || (scope.verbs === undefined && scope.toolsets === undefined)) return true;
  if (CORE_VERBS.includes(verb.name)) return true;
  return (scope.verbs?.includes(verb.name) ?? false) || (scope.toolsets?.includes(verb.category) ?? false);
}

/** What limits one call's reach: the principal's scope and the transport's narrowing. */
export interface Reach {
  principal: Principal;
  toolsets?: ToolsetSelection | undefined;
  readOnly?: boolean | undefined;
}

/**
 * The scope_denied refusal when the credential may not reach `verb` — the call's own verb, or
 * (with `via`, the delegating verb's name) a verb a revert, transaction step or macro step would
 * run — else undefined. Checks, in order: expiry (key_expired), read-only (the key's flag or the
 * MCP session's `X-MCP-Readonly`: no write), the key's verb/toolset allow-list, and for a reached
 * verb the transport's toolsets. spec/consent.md §api-keys
 */
export function reachDenied(
  reach: Reach,
  verb: CompiledVerb,
  now: Date,
  via?: string,
): VerbError | undefined {
  const scope = reach.principal.scope;
  if (scope?.expires_at !== undefined && Date.parse(scope.expires_at) <= now.getTime()) {
    return new VerbError('key_expired', `This API key expired at ${scope.expires_at}.`, {
      hint: 'Ask an owner for a new key (solid api-keys create, or api_keys.create).',
    });
  }
  const what = via === undefined ? verb.name : `${via} of ${verb.name}`;
  const details = { verb: verb.name, ...(via !== undefined ? { via } : {}) };
  if (verb.isWrite && (scope?.read_only === true || reach.readOnly === true)) {
    return new VerbError(
      'scope_denied',
      `${what} changes data and this ${scope?.read_only === true ? 'API key is' : 'MCP session is'} read-only.`,
      {
        hint:
          scope?.read_only === true
            ? 'Use a key without --read-only for writes (an owner creates one with solid api-keys create).'
            : 'Open the session without X-MCP-Readonly to write (the key still limits what it can do).',
        details: { ...details, read_only: true },
      },
    );
  }
  if (!scopeAdmits(scope, verb)) {
    const lists = [
      ...(scope?.verbs !== undefined ? [`verbs ${scope.verbs.join(', ') || '(none)'}`] : []),
      ...(scope?.toolsets !== undefined ? [`toolsets ${scope.toolsets.join(', ') || '(none)'}`] : []),
    ].join('; ');
    const grant = reach.principal.key_id?.startsWith('grant:') === true;
    return new VerbError(
      'scope_denied',
      `${what}: this ${grant ? 'OAuth grant' : 'API key'} is limited to ${lists}.`,
      {
        hint: grant
          ? `Ask the person who allowed this app to connect it again with ${verb.category} (or ${verb.name}) ticked on the consent screen.`
          : `Use a key whose allow-list names ${verb.name} or its toolset ${verb.category}.`,
        details: { ...details, toolset: verb.category },
      },
    );
  }
  if (via !== undefined && reach.toolsets !== undefined && !reach.toolsets.admits(verb)) {
    return new VerbError(
      'scope_denied',
      `${what}: ${verb.name} is in the toolset "${verb.category}", which this MCP server or session does not expose (enabled: ${reach.toolsets.names.join(', ')}).`,
      {
        hint: 'Call it through a server or session that exposes that toolset.',
        details: { ...details, toolset: verb.category, enabled: [...reach.toolsets.names] },
      },
    );
  }
  return undefined;
}

/**
 * A surface in words for refusals: `mcp_stdio` is the specification's name of every MCP transport
 * (stdio and Streamable HTTP `/mcp` alike), so a caller on `/mcp` is not told "stdio".
 */
const SURFACE_WORDS: Record<Surface, string> = {
  http: 'the HTTP API (surface http)',
  mcp_stdio: 'MCP (surface mcp_stdio, which serves stdio and /mcp alike)',
  webmcp: 'WebMCP (surface webmcp)',
  ucp: 'UCP (surface ucp)',
  cli: 'the CLI (surface cli)',
};

/**
 * The surface_denied refusal when `verb` is not projected onto `surface` (or, on WebMCP, onto the
 * page surface `webmcpSurface`); undefined when it is. For a step of another verb, `step` ends the
 * message with why it is refused and points at its argument. Used by the pipeline's surface step
 * and by transactions.
 */
export function surfaceDenied(
  verb: CompiledVerb,
  surface: Surface | 'internal' | undefined,
  webmcpSurface: WebmcpSurface | undefined,
  step?: { context: string; path: string },
): VerbError | undefined {
  const context = step?.context ?? '';
  const at = step === undefined ? {} : { path: step.path };
  if (surface !== undefined && surface !== 'internal' && !verb.surfaces.includes(surface)) {
    return new VerbError(
      'surface_denied',
      `${verb.name} is not exposed on ${SURFACE_WORDS[surface]}${context}.`,
      {
        ...at,
        hint: `It is available on: ${verb.surfaces.join(', ')}.`,
      },
    );
  }
  if (surface === 'webmcp' && webmcpSurface !== undefined && !verb.webmcpSurfaces.includes(webmcpSurface)) {
    return new VerbError(
      'surface_denied',
      `${verb.name} is not exposed on the WebMCP ${webmcpSurface} surface${context}.`,
      { ...at, hint: `Its WebMCP surfaces: ${verb.webmcpSurfaces.join(', ')}.` },
    );
  }
  return undefined;
}

/** The first input-schema issue of the args just validated (`verb.validate` returned false). */
export interface SchemaIssue {
  /** JSON Pointer of the argument (the missing or extra property for required/additionalProperties). */
  path: string;
  /** What is wrong, as the end of a sentence ("is required"). */
  what: string;
  details: { keyword: string; params: unknown } | undefined;
}

/** Describe the first Ajv error of `verb`'s last validation (call right after `verb.validate` failed). */
export function schemaIssue(verb: CompiledVerb): SchemaIssue {
  const e = verb.validateErrors()?.[0];
  let path = e?.instancePath ?? '';
  if (e?.keyword === 'required')
    path = `${path}/${(e.params as { missingProperty: string }).missingProperty}`;
  if (e?.keyword === 'additionalProperties')
    path = `${path}/${(e.params as { additionalProperty: string }).additionalProperty}`;
  const what =
    e?.keyword === 'required'
      ? 'is required'
      : e?.keyword === 'additionalProperties'
        ? 'is not an accepted argument'
        : (e?.message ?? 'is invalid');
  return { path, what, details: e === undefined ? undefined : { keyword: e.keyword, params: e.params } };
}

/** When validateOutputs is on (tests), throw on an output that does not match the verb's output schema. */
export function checkOutput(
  settings: { validateOutputs: boolean },
  verb: CompiledVerb,
  result: unknown,
): void {
  if (!settings.validateOutputs) return;
  if (!verb.validateOutput(result)) {
    throw new Error(
      `output of ${verb.name} does not match its output schema: ${JSON.stringify(verb.outputErrors()?.slice(0, 3))}`,
    );
  }
}

/**
 * Refusals decided on a compiled verb alone, shared by the pipeline's steps and by the transaction
 * ledger (which checks each step of a transaction the same way): the surface projection and the
 * first input-schema issue.
 *
 * Spec: spec/manifest.md §record (surfaces), spec/envelope.md §error, spec/transactions.md.
 */
import type { Surface, WebmcpSurface } from '../spec/types.ts';
import { VerbError } from './errors.ts';
import type { CompiledVerb } from './verb.ts';

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
    return new VerbError('surface_denied', `${verb.name} is not exposed on ${surface}${context}.`, {
      ...at,
      hint: `It is available on: ${verb.surfaces.join(', ')}.`,
    });
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

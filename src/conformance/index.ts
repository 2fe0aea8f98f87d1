/**
 * `solid-verbs/conformance`: the conformance kit as a library, for a test runner that checks a
 * solid-verbs server (ours or another implementation) over the wire.
 *
 *   import { runConformance, formatHuman, exitCodeOf } from 'solid-verbs/conformance';
 *   const report = await runConformance({ baseUrl: 'http://127.0.0.1:4400', apiKey, allowWrites: true,
 *                                          mcp: 'solid mcp' });
 *   console.log(formatHuman(report));
 *   assert.equal(report.summary.failed, 0);
 *
 * Also the server side a test needs: the conformance test pack and the HTTP mount that declares
 * it. Spec: spec/conformance.md; the checks: docs/conformance.md.
 */
export { runConformance, exitCodeOf, CHECKS } from './runner.ts';
export { formatHuman, formatJson, formatJunit, summaryLine, xmlEscape, type HumanOptions } from './report.ts';
export {
  SECTIONS,
  SECTION_TITLES,
  type Check,
  type CheckNeeds,
  type CheckResult,
  type ConformanceOptions,
  type ConformanceReport,
  type Evidence,
  type McpTarget,
  type Outcome,
  type SectionId,
  type Status,
  type Summary,
} from './types.ts';
export {
  DECLARATION_PATH,
  RUN_PLACEHOLDER,
  packDeclaration,
  withRunId,
  type ConformanceDeclaration,
  type DeclaredState,
  type DeclaredTestVerb,
} from './declaration.ts';
export { conformancePack, CONFORMANCE_VERBS, CONFORMANCE_PACK_NAME } from './pack.ts';
export { conformanceDeclarationPlugin } from './declaration-plugin.ts';
export { synthesizeArgs, type Synthesized } from './args.ts';
export { splitCommand } from './mcp.ts';
export { ConformanceNotRun } from './outcome.ts';
export { DEFAULT_MAX_RESPONSE_BYTES } from './http.ts';

/**
 * ARCHITECTURE.md as tests read it: the numbered pipeline step list under the `pipeline-steps`
 * marker (up to the next section).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const DOC = fileURLToPath(new URL('../../ARCHITECTURE.md', import.meta.url));

/** The step names ARCHITECTURE.md numbers, in its order. */
export function documentedPipelineSteps(): string[] {
  const doc = readFileSync(DOC, 'utf8');
  const start = doc.indexOf('<!-- pipeline-steps');
  if (start < 0) throw new Error('ARCHITECTURE.md has no <!-- pipeline-steps --> marker');
  const end = doc.indexOf('\n## ', start);
  const section = doc.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/^\d+\. \*\*([a-z-]+)\*\*/gm)].map((m) => m[1]!);
}

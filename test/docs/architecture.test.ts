/**
 * ARCHITECTURE.md stays true: its pipeline step list matches PIPELINE_STEPS (derived from the step
 * array in dispatch.ts), and every source path it names exists.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { PIPELINE_STEPS } from '../../src/runtime/dispatch.ts';
import { documentedPipelineSteps } from '../support/architecture.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const doc = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');

it('ARCHITECTURE.md numbers the pipeline steps in the order of the step array in dispatch.ts', () => {
  // PIPELINE_STEPS is derived from dispatch.ts's STEPS: reordering the array without the doc fails here.
  assert.deepEqual(documentedPipelineSteps(), [...PIPELINE_STEPS]);
});

it('every src/ path ARCHITECTURE.md names exists', () => {
  const paths = new Set(
    [...doc.matchAll(/`?(src\/[A-Za-z0-9_\-/.{},]+?)`?(?=[\s`)|,])/g)].map((m) => m[1]!.replace(/[.,]$/, '')),
  );
  const missing: string[] = [];
  for (const p of paths) {
    if (p.includes('{') || p.includes('*')) continue;
    if (!existsSync(join(ROOT, p))) missing.push(p);
  }
  assert.deepEqual(missing, []);
});

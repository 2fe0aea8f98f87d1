/**
 * ARCHITECTURE.md stays true: its pipeline step list matches PIPELINE_STEPS (derived from the step
 * array in dispatch.ts), and every source path it names exists.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join, relative, resolve } from 'node:path';
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

/** The relative imports (static, type-only included) of every .ts file under src/runtime/<folder>. */
function importsUnder(folder: string): Array<{ file: string; target: string }> {
  const dir = join(ROOT, 'src/runtime', folder);
  const out: Array<{ file: string; target: string }> = [];
  for (const f of readdirSync(dir)) {
    if (!f.endsWith('.ts')) continue;
    const text = readFileSync(join(dir, f), 'utf8');
    for (const m of text.matchAll(/(?:from\s+|import\()\s*'(\.[^']+)'/g))
      out.push({ file: `${folder}/${f}`, target: relative(join(ROOT, 'src/runtime'), resolve(dir, m[1]!)) });
  }
  return out;
}

it('the folders of src/runtime import only what ARCHITECTURE.md allows them', () => {
  const never: Record<string, string[]> = {
    steps: ['dispatch.ts', 'runtime.ts'],
    ledger: ['steps/', 'dispatch.ts', 'runtime.ts'],
    consent: ['ledger/', 'steps/', 'observe/', 'dispatch.ts', 'runtime.ts'],
    observe: ['steps/', 'dispatch.ts', 'runtime.ts'],
  };
  const broken: string[] = [];
  for (const [folder, forbidden] of Object.entries(never))
    for (const { file, target } of importsUnder(folder))
      if (forbidden.some((x) => (x.endsWith('/') ? target.startsWith(x) : target === x)))
        broken.push(`${file} → ${target}`);
  // Only runtime.ts knows the Runtime class; the rest of src/runtime sees RuntimeCore / PackRuntime.
  for (const { file, target } of importsUnder('.'))
    if (target === 'runtime.ts') broken.push(`${file} → ${target}`);
  assert.deepEqual(broken, []);
});

/** Every .ts file under `dir` (recursive), as paths relative to the repository root. */
function tsFilesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...tsFilesUnder(p));
    else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out;
}

it('only src/identity sets a principal actor (human or agent): spec/consent.md §channels', () => {
  // A principal's `actor` literal, a cast to Actor, or an assignment to `.actor` outside the room.
  const setsActor =
    /\bactor\s*:\s*(['"`](?:human|agent)['"`]|[^,;\n}]*\bas\s+Actor\b)|\.actor\s*=\s*(['"`](?:human|agent)|[^;\n]*\bas\s+Actor\b)|\bconsent_channel\s*:\s*['"`]/;
  const offenders = tsFilesUnder('src')
    .filter((f) => !f.startsWith('src/identity/'))
    .filter((f) => setsActor.test(readFileSync(join(ROOT, f), 'utf8')));
  assert.deepEqual(offenders, []);
  // The check itself still catches a planted assignment.
  assert.ok(setsActor.test("const p = { ...q, actor: 'human' };"));
  assert.ok(setsActor.test("p.actor = 'human';"));
  assert.ok(!setsActor.test('out.actor = e.actor;'), 'a domain event actor is not a principal');
});

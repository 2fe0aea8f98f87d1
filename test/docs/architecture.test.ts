/**
 * ARCHITECTURE.md stays true: its pipeline step list matches PIPELINE_STEPS (derived from the step
 * array in dispatch.ts), every source path it names exists, and every room of src/ imports only
 * what its layer table allows (transports never a sibling transport).
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join, relative } from 'node:path';
import { PIPELINE_STEPS } from '../../src/runtime/dispatch.ts';
import { documentedPipelineSteps } from '../support/architecture.ts';
import { boundaryViolations, importGraph, roomOf } from '../support/import-graph.ts';

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

const graph = importGraph(ROOT);

it('every room of src/ imports only the rooms ARCHITECTURE.md allows it (no transport imports a sibling)', () => {
  const broken = boundaryViolations(graph);
  assert.deepEqual(broken, []);
});

it('the boundary check fails on a planted sibling import', () => {
  // A tree where src/transports/mcp imports the HTTP core (allowed) and src/transports/ucp (not).
  const tree = importGraph(fileURLToPath(new URL('./fixtures/planted-sibling/', import.meta.url)));
  assert.equal(tree.length, 2);
  assert.deepEqual(boundaryViolations(tree), ['src/transports/mcp/server.ts → src/transports/ucp/sign.ts']);
  // The rule names every room: a new room of src/ without a rule is checked by nothing.
  assert.deepEqual(boundaryViolations([{ from: 'src/store/x.ts', to: 'src/runtime/y.ts' }]), [
    'src/store/x.ts → src/runtime/y.ts',
  ]);
  // The runtime reads identity's core (modules that import only src/spec), never the rest.
  const planted = [
    { from: 'src/runtime/steps/consent.ts', to: 'src/identity/consent-predicate.ts' },
    { from: 'src/identity/consent-predicate.ts', to: 'src/spec/types.ts' },
    { from: 'src/runtime/runtime.ts', to: 'src/identity/authenticate.ts' },
    { from: 'src/identity/authenticate.ts', to: 'src/runtime/core.ts' },
  ];
  assert.deepEqual(boundaryViolations(planted), ['src/runtime/runtime.ts → src/identity/authenticate.ts']);
});

it('ARCHITECTURE.md lists every room of src/ in its layer table', () => {
  const rooms = new Set(graph.map((e) => roomOf(e.from)).filter((r) => !r.endsWith('.ts')));
  const missing = [...rooms].filter(
    (r) => !doc.includes(r === 'transports' ? 'src/transports/' : `src/${r}/`),
  );
  assert.deepEqual(missing, []);
});

it('the folders of src/runtime import only what ARCHITECTURE.md allows them', () => {
  const never: Record<string, string[]> = {
    steps: ['dispatch.ts', 'runtime.ts'],
    ledger: ['steps/', 'dispatch.ts', 'runtime.ts'],
    consent: ['ledger/', 'steps/', 'observe/', 'dispatch.ts', 'runtime.ts'],
    observe: ['steps/', 'dispatch.ts', 'runtime.ts'],
  };
  const inRuntime = graph
    .filter((e) => e.from.startsWith('src/runtime/') && e.to.startsWith('src/runtime/'))
    .map((e) => ({ file: relative('src/runtime', e.from), target: relative('src/runtime', e.to) }));
  const broken: string[] = [];
  for (const [folder, forbidden] of Object.entries(never))
    for (const { file, target } of inRuntime.filter((e) => e.file.startsWith(`${folder}/`)))
      if (forbidden.some((x) => (x.endsWith('/') ? target.startsWith(x) : target === x)))
        broken.push(`${file} → ${target}`);
  // Only runtime.ts knows the Runtime class; the rest of src/runtime sees RuntimeCore / PackRuntime.
  for (const { file, target } of inRuntime)
    if (target === 'runtime.ts' && file !== 'runtime.ts') broken.push(`${file} → ${target}`);
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

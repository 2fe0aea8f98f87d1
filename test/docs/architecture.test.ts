/**
 * ARCHITECTURE.md stays true: its pipeline step list matches PIPELINE_STEPS (derived from the step
 * array in dispatch.ts), every source path it names exists, and every room of src/ imports only
 * what its layer table allows (transports never a sibling transport).
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
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

/**
 * Sibling imports that wait for the identity room (src/identity): the session store, the request
 * guard and the CLI login / whoami routes move there, and these arrows then point at identity.
 * An entry may only leave this list, never join it.
 */
const WAITS_FOR_IDENTITY = [
  'src/transports/http/rate-limit.ts → src/transports/webmcp/session-store.ts',
  'src/transports/remote/cli-login-routes.ts → src/transports/webmcp/request-guard.ts',
  'src/transports/remote/cli-login-routes.ts → src/transports/webmcp/session-store.ts',
  'src/transports/remote/remote-plugin.ts → src/transports/webmcp/session-store.ts',
  'src/remote-client/api-client.ts → src/transports/remote/whoami.ts',
  'src/remote-client/api-client.ts → src/transports/remote/cli-login-routes.ts',
];

it('every room of src/ imports only the rooms ARCHITECTURE.md allows it (no transport imports a sibling)', () => {
  const broken = boundaryViolations(graph).filter((v) => !WAITS_FOR_IDENTITY.includes(v));
  assert.deepEqual(broken, []);
});

it('the boundary check fails on a planted sibling import', () => {
  // A tree where src/transports/mcp imports the HTTP core (allowed) and src/transports/ucp (not).
  const planted = importGraph(fileURLToPath(new URL('./fixtures/planted-sibling/', import.meta.url)));
  assert.equal(planted.length, 2);
  assert.deepEqual(boundaryViolations(planted), [
    'src/transports/mcp/server.ts → src/transports/ucp/sign.ts',
  ]);
  // The rule names every room: a new room of src/ without a rule is checked by nothing.
  assert.deepEqual(boundaryViolations([{ from: 'src/store/x.ts', to: 'src/runtime/y.ts' }]), [
    'src/store/x.ts → src/runtime/y.ts',
  ]);
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

/**
 * spec/transports.md §webmcp enumerates the plugin's routes, the manifest's tool members and the
 * dashboard's Content-Security-Policy, and the code cites its subsections; these tests keep the
 * page and the code in step in both directions.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import { DASHBOARD_CSP } from '../../../src/transports/webmcp/dashboard-routes.ts';
import { createWebmcpPlugin, toWebmcpTool } from '../../../src/transports/webmcp/index.ts';
import { createTestRuntime } from '../../support/runtime.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const page = readFileSync(join(ROOT, 'spec/transports.md'), 'utf8');
const section = page.split('\n## §webmcp\n')[1]!.split('\n## ')[0]!;
const intro = section.split('\n### ')[0]!;

function tableRows(text: string): string[][] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|[-|]+\|$/.test(line))
    .slice(1)
    .map((line) =>
      line
        .slice(1, -1)
        .split('|')
        .map((cell) => cell.trim()),
    );
}

test('§webmcp lists exactly the routes the plugin registers', async (t) => {
  const h = await createTestRuntime(t);
  const app = Fastify({ logger: false });
  const registered = new Set<string>();
  app.addHook('onRoute', (route) => {
    for (const method of ([] as string[]).concat(route.method))
      if (method !== 'HEAD') registered.add(`${method} ${route.url}`);
  });
  await app.register(createWebmcpPlugin(), { rt: h.rt });
  await app.ready();
  t.after(() => app.close());
  const documented = new Set<string>();
  for (const [methods, paths] of tableRows(intro)) {
    for (const method of methods!.split(',').map((m) => m.trim())) {
      for (const path of [...paths!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!))
        documented.add(`${method} ${path.replace(/\{([a-z_]+)\}/g, ':$1')}`);
    }
  }
  assert.deepEqual([...documented].sort(), [...registered].sort());
});

test('§webmcp-manifest documents every member of a manifest tool', async (t) => {
  const h = await createTestRuntime(t);
  const tool = toWebmcpTool(h.rt.registry.get('audit.trail')!);
  const members = Object.entries(tool).flatMap(([k, v]) =>
    k === 'annotations' ? Object.keys(v as object).map((a) => `annotations.${a}`) : [k],
  );
  const manifestSection = section.split('### §webmcp-manifest')[1]!.split('\n### ')[0]!;
  const documented = tableRows(manifestSection).flatMap(([cell]) =>
    [...cell!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!),
  );
  assert.deepEqual([...new Set(documented)].sort(), members.sort());
});

test('§webmcp-dashboard states the Content-Security-Policy the page is served with', () => {
  assert.ok(section.includes(`Content-Security-Policy: ${DASHBOARD_CSP}`));
});

test('every §webmcp section id cited in the code exists in the page', () => {
  const files = [
    ...readdirSync(join(ROOT, 'src/transports/webmcp')).map((f) => join(ROOT, 'src/transports/webmcp', f)),
    ...readdirSync(join(ROOT, 'web'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => join(ROOT, 'web', f)),
  ];
  const cited = new Set(
    files.flatMap((f) => [...readFileSync(f, 'utf8').matchAll(/§(webmcp[a-z-]*)/g)].map((m) => m[1]!)),
  );
  assert.ok(cited.size >= 5);
  for (const id of cited) assert.ok(page.includes(`## §${id}\n`), `spec/transports.md has no section §${id}`);
});

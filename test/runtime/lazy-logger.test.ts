/**
 * The runtime's stderr logger (src/runtime/lazy-logger.ts): pino's own lines at the enabled
 * levels, nothing at the others, and pino's refusal of an unknown level, as `pino(…)` gives.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MODULE = fileURLToPath(new URL('../../src/runtime/lazy-logger.ts', import.meta.url));

function run(code: string) {
  return spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `const { stderrLogger } = await import(${JSON.stringify(MODULE)});\n${code}`,
    ],
    { encoding: 'utf8' },
  );
}

test('lines at enabled levels are pino JSON on stderr; disabled levels print nothing', () => {
  const r = run(`const log = stderrLogger('warn');
log.info({ a: 1 }, 'quiet'); log.debug('quiet too');
process.stdout.write(String(log.level) + ' ' + log.isLevelEnabled('info') + ' ' + log.isLevelEnabled('error') + '\\n');
log.warn({ a: 1 }, 'loud'); log.child({ c: 2 }).error('child');`);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'warn false true\n');
  const lines = r.stderr
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(
    lines.map((l) => [l.level, l.msg, l.a ?? l.c]),
    [
      [40, 'loud', 1],
      [50, 'child', 2],
    ],
  );
});

test('silent prints nothing; an unknown level is refused as pino refuses it', () => {
  const silent = run(`const log = stderrLogger('silent'); log.fatal('x'); log.error('y');`);
  assert.equal(silent.status, 0);
  assert.equal(silent.stderr, '');
  const bad = run(`stderrLogger('loudest');`);
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /default level:loudest must be included in custom levels/);
});

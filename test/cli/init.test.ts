/**
 * `solid init --starter NAME [--dir DIR]` (formerly `--pack NAME`, still accepted with a notice): the starter project it writes is a pack that registers and
 * whose verbs dispatch (aggregate, preview, confirmed write, revert), and whose own test passes
 * under `node --test`; bad names and non-empty folders are refused with an envelope, nothing
 * written. Spec: spec/transports.md §cli, spec/manifest.md §packs.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { cliHarness } from '../support/cli.ts';
import { createTestBusiness } from '../../src/testing.ts';
import type { Pack } from '../../src/runtime/pack.ts';
import { starterSource } from '../../src/transports/cli/commands/init.ts';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, '');
const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** Point a generated file's solid-verbs imports at the source tree (no install, no build). */
function toSources(file: string): void {
  const text = readFileSync(file, 'utf8')
    .replace(/from 'solid-verbs\/testing'/g, `from ${JSON.stringify(join(SRC, 'testing.ts'))}`)
    .replaceAll("from 'solid-verbs'", `from ${JSON.stringify(join(SRC, 'index.ts'))}`);
  assert.doesNotMatch(text, /from 'solid-verbs/);
  writeFileSync(file, text);
}

describe('solid init --starter', () => {
  it('writes a starter project whose pack registers and whose verbs dispatch and revert', async (t) => {
    const cli = cliHarness(t);
    const dir = join(cli.dir, 'shop');
    const r = await cli.run(['init', '--starter', 'shop', '--dir', dir, '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.json<{ result: { files: string[] } }>().result.files.sort(), [
      '.gitignore',
      'README.md',
      'pack.mjs',
      'package.json',
      'test/pack.test.mjs',
    ]);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    // Not on the npm registry: from a checkout, the tarball `npm pack` writes into the project.
    assert.equal(pkg.dependencies['solid-verbs'], `file:solid-verbs-${VERSION}.tgz`);
    const next = r.json<{ result: { dependency: string; next: string[] } }>().result;
    assert.equal(next.dependency, `file:solid-verbs-${VERSION}.tgz`);
    assert.deepEqual(next.next, [
      process.cwd() === ROOT
        ? `npm pack --pack-destination ${dir}`
        : `(cd ${ROOT} && npm pack --pack-destination ${dir})`,
      `cd ${dir}`,
      'npm install && npm start',
      'npm test',
    ]);
    assert.equal(pkg.type, 'module');
    // exec: npm's shell is replaced by the server, so stopping npm stops the server too.
    assert.match(pkg.scripts.start, /; exec solid serve --pack \.\/pack\.mjs$/);
    const readme = readFileSync(join(dir, 'README.md'), 'utf8');
    assert.match(readme, /npm install && npm start/);
    assert.match(readme, /npm test/);
    // Until the package is on the registry, the README says where the tarball comes from.
    assert.match(readme, new RegExp(`npm pack --pack-destination /path/to/this/folder`));
    assert.match(readme, new RegExp(`file:solid-verbs-${VERSION.replaceAll('.', '\\.')}\\.tgz`));
    assert.doesNotMatch(readme, /"\^\d/);
    assert.match(readme, /--port 4401/);
    assert.doesNotMatch(readme, /github\.com\/solid-verbs \(/);

    toSources(join(dir, 'pack.mjs'));
    toSources(join(dir, 'test', 'pack.test.mjs'));
    const pack = (await import(pathToFileURL(join(dir, 'pack.mjs')).href)).default as Pack;
    const b = await createTestBusiness({ packs: [pack] });
    t.after(() => b.close());

    const empty = await b.call('shop.items', {}, { role: 'read_only' });
    assert.equal(empty.ok, true, JSON.stringify(empty));
    assert.deepEqual(empty.result!.data, { items: 0, value_cents: 0 });
    const preview = await b.call('shop.item_add_preview', { title: 'Mug', price_cents: 900 });
    assert.deepEqual(preview.result!.delta, { items: 1, value_cents: 900 });
    const pending = await b.dispatch('shop.item_add', { title: 'Mug', price_cents: 900 });
    assert.equal(pending.error?.reason, 'dispatch_pending');
    assert.equal(pending.consent?.gate, 'confirmation');
    const added = await b.call('shop.item_add', { title: 'Mug', price_cents: 900 });
    assert.equal(added.ok, true, JSON.stringify(added));
    assert.deepEqual((await b.call('shop.items')).result!.data, { items: 1, value_cents: 900 });
    const reverted = await b.call('audit.revert', { audit_id: added.audit_id });
    assert.equal(reverted.ok, true, JSON.stringify(reverted));
    assert.deepEqual((await b.call('shop.items')).result!.data, { items: 0, value_cents: 0 });
    // The financial verb: a typed phrase naming the amount, a receipt with a rollback_handle,
    // a revert that refunds.
    const item = (await b.call('shop.item_add', { title: 'Pot', price_cents: 1250 })).result as {
      item_id: number;
    };
    const charge = { item_id: item.item_id, customer: 'Ada', cents: 1250 };
    const gate = await b.dispatch('shop.charge', charge, { role: 'admin' });
    assert.equal(gate.consent?.gate, 'typed_phrase');
    const charged = await b.call('shop.charge', charge, { role: 'admin' });
    assert.equal(charged.ok, true, JSON.stringify(charged));
    assert.equal(typeof (charged.result as { rollback_handle?: unknown }).rollback_handle, 'string');
    const refund = await b.call('audit.revert', { audit_id: charged.audit_id }, { role: 'admin' });
    assert.equal(refund.ok, true, JSON.stringify(refund));
    assert.equal((await b.verifyAudit()).ok, true);

    // The generated test itself, as `npm test` runs it (node --test), against the sources.
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '' };
    delete env.NODE_TEST_CONTEXT; // report as a top-level `node --test`, not to this runner
    const run = spawnSync(process.execPath, ['--import', import.meta.resolve('tsx'), '--test', 'test/'], {
      cwd: dir,
      encoding: 'utf8',
      env,
    });
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /# pass 6/);
    assert.match(run.stdout, /# fail 0/);
  });

  it('defaults the folder to ./NAME', async (t) => {
    const cli = cliHarness(t);
    const prev = process.cwd();
    process.chdir(cli.dir);
    let out: string;
    try {
      const r = await cli.run(['init', '--starter', 'tea_room']);
      assert.equal(r.code, 0, r.stderr);
      out = r.stdout;
    } finally {
      process.chdir(prev);
    }
    assert.match(readFileSync(join(cli.dir, 'tea_room', 'pack.mjs'), 'utf8'), /name: 'tea_room'/);
    // The printed next steps make the tarball first; none of them asks the registry.
    assert.match(out, /npm pack --pack-destination /);
    assert.match(out, /not on the npm registry/);
    const steps = out.split('\n').filter((l) => /^\s+(\(cd|cd|npm|cp)\b/.test(l));
    assert.ok(steps.findIndex((l) => /npm pack/.test(l)) < steps.findIndex((l) => /npm install/.test(l)));
  });

  it('from an installed tarball, package.json names that tarball (never a registry range)', () => {
    const base = mkdtempSync(join(tmpdir(), 'solid-init-src-'));
    try {
      const host = join(base, 'app');
      const root = join(host, 'node_modules', 'solid-verbs');
      mkdirSync(root, { recursive: true });
      writeFileSync(join(base, 'solid-verbs-9.8.7.tgz'), 'tarball');
      writeFileSync(
        join(host, 'package.json'),
        JSON.stringify({ dependencies: { 'solid-verbs': 'file:../solid-verbs-9.8.7.tgz' } }),
      );
      const target = join(base, 'shop');
      const found = starterSource({ root, version: '9.8.7', target, dirArg: 'shop', cwd: base });
      assert.equal(found.dependency, 'file:../solid-verbs-9.8.7.tgz');
      assert.deepEqual(found.before, []);
      // The host names no tarball (or it is gone): the project expects one in its own folder.
      writeFileSync(
        join(host, 'package.json'),
        JSON.stringify({ dependencies: { 'solid-verbs': '^9.8.7' } }),
      );
      const lost = starterSource({ root, version: '9.8.7', target, dirArg: 'shop', cwd: base });
      assert.equal(lost.dependency, 'file:solid-verbs-9.8.7.tgz');
      assert.equal(lost.before.length, 1);
      assert.match(lost.before[0]!, /^cp \/path\/to\/solid-verbs-9\.8\.7\.tgz shop\//);
      // A checkout: make the tarball into the project (relative when run from the checkout).
      const checkout = join(base, 'checkout');
      mkdirSync(join(checkout, 'src'), { recursive: true });
      const co = starterSource({ root: checkout, version: '9.8.7', target, dirArg: 'shop', cwd: checkout });
      assert.equal(co.dependency, 'file:solid-verbs-9.8.7.tgz');
      assert.deepEqual(co.before, ['npm pack --pack-destination shop']);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('refuses a non-empty folder with an envelope and writes nothing', async (t) => {
    const cli = cliHarness(t);
    const dir = join(cli.dir, 'taken');
    mkdirSync(dir);
    writeFileSync(join(dir, 'notes.txt'), 'mine');
    const r = await cli.run(['init', '--starter', 'shop', '--dir', dir, '--json']);
    assert.equal(r.code, 2);
    const env = r.json<{ ok: boolean; error: { reason: string; message: string; hint: string } }>();
    assert.equal(env.ok, false);
    assert.equal(env.error.reason, 'invalid_input');
    assert.match(env.error.message, /not an empty folder/);
    assert.ok(env.error.hint.length > 0);
    assert.deepEqual(readdirSync(dir), ['notes.txt']);
  });

  for (const name of ['Shop', 'my-shop', '1shop', 'runtime', 'a'.repeat(41)]) {
    it(`refuses the pack name ${JSON.stringify(name)}`, async (t) => {
      const cli = cliHarness(t);
      const dir = join(cli.dir, 'out');
      const r = await cli.run(['init', '--starter', name, '--dir', dir, '--json']);
      assert.equal(r.code, 2);
      assert.equal(r.json<{ error: { reason: string } }>().error.reason, 'invalid_input');
      assert.equal(existsSync(dir), false);
    });
  }

  it('the old `init --pack NAME` still writes the starter, with a notice naming --starter', async (t) => {
    const cli = cliHarness(t);
    const dir = join(cli.dir, 'old');
    const r = await cli.run(['init', '--pack', 'shop', '--dir', dir, '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /--pack shop is deprecated: use solid init --starter shop/);
    assert.ok(existsSync(join(dir, 'pack.mjs')));
  });

  it('init --pack FILE means a pack module, as on every command: the database serves it', async (t) => {
    const cli = cliHarness(t);
    const starter = join(cli.dir, 'mine');
    assert.equal((await cli.run(['init', '--starter', 'mine', '--dir', starter])).code, 0);
    toSources(join(starter, 'pack.mjs'));
    const r = await cli.run(['--pack', join(starter, 'pack.mjs'), 'init', '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /deprecated/);
    const list = await cli.run(['--pack', join(starter, 'pack.mjs'), 'verbs', 'list', '--json']);
    assert.match(list.stdout, /mine\.charge/);
  });

  it('refuses --dir without --starter and two starter names', async (t) => {
    const cli = cliHarness(t);
    assert.equal((await cli.run(['init', '--dir', join(cli.dir, 'x')])).code, 2);
    const two = await cli.run([
      'init',
      '--starter',
      'a',
      '--starter',
      'b',
      '--dir',
      join(cli.dir, 'y'),
      '--json',
    ]);
    assert.equal(two.code, 2);
    assert.equal(existsSync(join(cli.dir, 'y')), false);
  });
});

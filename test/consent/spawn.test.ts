/**
 * bin/solid.js as a real process with stdin not a terminal (issue 3 §8): a typed-phrase dispatch
 * with --confirm but no --phrase never waits for input — it prints the pending envelope and exits
 * 4; the phrase given on the command line runs it; `approvals approve` without a terminal is a
 * script's: refused human_required (exit 3, audited), the hint naming where a human approves. The consent test pack is preloaded with `--import` so the process
 * serves the same verbs.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { consentHarness, pendingOf } from './support.ts';
import type { Envelope } from '../../src/spec/types.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PACK = fileURLToPath(new URL('./pack.ts', import.meta.url));

function solid(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--import', PACK, 'bin/solid.js', ...args], {
      cwd: ROOT,
      env: { ...process.env, SOLID_LOG_LEVEL: 'silent', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    // stdin stays open and silent: a process that prompted would hang here (and fail the test by timeout)
  });
}

test(
  'bin/solid.js without a terminal: --confirm with no phrase prints pending (exit 4), --phrase runs, approvals approve without a terminal is refused (exit 3)',
  { timeout: 120_000 },
  async (t) => {
    const h = await consentHarness(t, { start: new Date().toISOString() });
    const args = JSON.stringify({ invoice_id: 77, amount_cents: 1999 });
    const pending = await solid(
      ['--db', h.dbPath, 'agent', 'dispatch', 'charge_invoice', '--args', args, '--confirm', '--json'],
      { SOLID_API_KEY: h.keys.admin },
    );
    assert.equal(pending.code, 4, pending.stderr);
    const c = pendingOf(JSON.parse(pending.stdout) as Envelope);
    assert.equal(c.typed_phrase, 'CHARGE $19.99 to invoice #77');
    assert.equal(await h.effects(), 0);

    const approve = await solid(['--db', h.dbPath, 'approvals', 'approve', c.approval_id!], {
      SOLID_API_KEY: h.keys.owner,
    });
    assert.equal(approve.code, 3, approve.stderr);
    assert.match(approve.stderr, /human_required/);
    assert.match(approve.stderr, /typed at a terminal on the server/);

    const done = await solid(
      [
        '--db',
        h.dbPath,
        'agent',
        'dispatch',
        'charge_invoice',
        '--args',
        args,
        '--confirm',
        '--phrase',
        'CHARGE $19.99 to invoice #77',
        '--json',
      ],
      { SOLID_API_KEY: h.keys.admin },
    );
    assert.equal(done.code, 0, done.stderr);
    assert.equal((JSON.parse(done.stdout) as Envelope).ok, true);
    assert.equal(await h.effects('charge_invoice'), 1);
  },
);

/**
 * The CLI as a real process at the edges of its streams (issue 20, row 11): a closed stdout pipe
 * (`solid approvals list | head -5`) ends quietly, never with an EPIPE stack; Ctrl-C at the
 * typed-phrase prompt exits 130, says nothing was decided, and the approval stays pending — on a
 * real terminal (a pty by util-linux `script`, skipped where it is absent) and in-process.
 * Spec: spec/transports.md §cli.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { consentHarness, pendingOf, type ConsentHarness } from '../consent/support.ts';
import { PromptInterrupted } from '../../src/transports/cli/output.ts';
import { enrolTotp, humanPrompt, OWNER, totpCode } from '../support/terminal-human.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PACK = fileURLToPath(new URL('../consent/pack.ts', import.meta.url));
const ARGS = { invoice_id: 4242, amount_cents: 5000 };
const SOLID = ['--import', 'tsx', '--import', PACK, 'bin/solid.js'];

async function pendingApproval(h: ConsentHarness): Promise<string> {
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  assert.ok(c.approval_id !== undefined);
  return String(c.approval_id);
}

async function statusOf(h: ConsentHarness, approvalId: string): Promise<string> {
  const listed = await h.call('owner', 'approvals.list', { approval_id: approvalId });
  assert.equal(listed.ok, true, JSON.stringify(listed));
  return (listed.result!.approvals as Array<{ status: string }>)[0]!.status;
}

test(
  'a closed stdout pipe (`solid approvals list | head`) ends quietly with exit 0, no EPIPE stack',
  { timeout: 120_000 },
  async (t) => {
    const h = await consentHarness(t, { start: new Date().toISOString() });
    await pendingApproval(h);
    for (const args of [
      ['approvals', 'list'],
      ['verbs', 'list'],
    ]) {
      const child = spawn(process.execPath, [...SOLID, '--db', h.dbPath, ...args], {
        cwd: ROOT,
        env: { ...process.env, SOLID_LOG_LEVEL: 'silent', SOLID_API_KEY: h.keys.owner },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      // The reader goes away before the CLI writes its first line, as `head` does after five.
      child.stdout.destroy();
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
      assert.equal(code, 0, `${args.join(' ')}: ${stderr}`);
      assert.doesNotMatch(stderr, /EPIPE|internal_error|at \w+ \(|node:internal/, args.join(' '));
    }
  },
);

test('Ctrl-C at the typed-phrase prompt (in-process): exit 130, nothing decided, the approval stays pending', async (t) => {
  const h = await consentHarness(t, { start: new Date().toISOString() });
  const id = await pendingApproval(h);
  const r = await h.cli(['approvals', 'approve', id], {
    apiKey: h.keys.owner,
    tty: true,
    prompt: await humanPrompt(h.rt, h.companyId, OWNER, () => {
      throw new PromptInterrupted('SIGINT');
    }),
  });
  assert.equal(r.code, 130, r.stderr);
  assert.match(r.stderr, /interrupted.*nothing was decided/);
  assert.doesNotMatch(r.stderr, /internal_error/);
  assert.equal(await statusOf(h, id), 'pending');
  assert.equal((await h.audit({ action_type: 'approvals.approve' })).length, 0);
  const eof = await h.cli(['approvals', 'approve', id], {
    apiKey: h.keys.owner,
    tty: true,
    prompt: await humanPrompt(h.rt, h.companyId, OWNER, () => {
      throw new PromptInterrupted('EOF');
    }),
  });
  assert.equal(eof.code, 2, eof.stderr);
  assert.equal(await statusOf(h, id), 'pending');
});

const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

test(
  'Ctrl-C at the typed-phrase prompt on a real terminal: exit 130, one line, the approval stays pending',
  { timeout: 180_000, skip: hasScript ? false : 'util-linux `script` (a pty) is not installed' },
  async (t) => {
    const h = await consentHarness(t, { start: new Date().toISOString() });
    const id = await pendingApproval(h);
    const owner = await enrolTotp(h.rt, h.companyId, OWNER);
    const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const command = [process.execPath, ...SOLID, '--db', h.dbPath, 'approvals', 'approve', id]
      .map(quote)
      .join(' ');
    // script runs the command on a new pty; bytes written to its stdin are typed on that terminal.
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: ROOT,
      env: { ...process.env, SOLID_LOG_LEVEL: 'silent', SOLID_API_KEY: h.keys.owner },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    t.after(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
    // The person at the terminal first types their authenticator's code (terminal-human.ts).
    for (let i = 0; i < 12_000 && !/One-time code of/.test(out); i++)
      await new Promise((r) => setTimeout(r, 10));
    child.stdin.write(`${totpCode(owner.secret)}\r`);
    for (let i = 0; i < 12_000 && !/To approve, type exactly:[^\n]*\n[\s\S]*> /.test(out); i++)
      await new Promise((r) => setTimeout(r, 10));
    assert.match(out, /> /, `the prompt is shown: ${out}`);
    child.stdin.write('\x03');
    const code = await closed;
    assert.equal(code, 130, out);
    assert.match(out, /interrupted at the prompt: nothing was decided/);
    assert.doesNotMatch(out, /internal_error|at \w+ \(|node:internal/);
    assert.equal(await statusOf(h, id), 'pending');
  },
);

test(
  'Ctrl-D or Ctrl-C at the one-time code prompt on a real terminal: nothing decided, never internal_error',
  { timeout: 180_000, skip: hasScript ? false : 'util-linux `script` (a pty) is not installed' },
  async (t) => {
    const h = await consentHarness(t, { start: new Date().toISOString() });
    const id = await pendingApproval(h);
    await enrolTotp(h.rt, h.companyId, OWNER);
    const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const command = [process.execPath, ...SOLID, '--db', h.dbPath, 'approvals', 'approve', id]
      .map(quote)
      .join(' ');
    for (const [key, exit] of [
      ['\x04', 2],
      ['\x03', 130],
    ] as const) {
      const child = spawn('script', ['-qfec', command, '/dev/null'], {
        cwd: ROOT,
        env: { ...process.env, SOLID_LOG_LEVEL: 'silent', SOLID_API_KEY: h.keys.owner },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      t.after(() => {
        if (child.exitCode === null) child.kill('SIGKILL');
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
      for (let i = 0; i < 12_000 && !/One-time code of/.test(out); i++)
        await new Promise((r) => setTimeout(r, 10));
      child.stdin.write(key);
      const code = await closed;
      assert.equal(code, exit, `${JSON.stringify(key)}: ${out}`);
      assert.match(out, /nothing was decided/, JSON.stringify(key));
      assert.doesNotMatch(out, /internal_error|Aborted with Ctrl\+D|at \w+ \(|node:internal/);
      assert.equal(await statusOf(h, id), 'pending');
    }
  },
);

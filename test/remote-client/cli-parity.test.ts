/**
 * Remote mode gives the CLI the same answers as embedded mode: the same sequence of commands run
 * against the local copy of the demo (`--db`) and against a running server on the other copy
 * (`--url`) prints the same envelopes (modulo audit ids, nonces, timestamps, signatures) with the
 * same exit codes — reads, a confirmation write, a typed-phrase write (by --phrase and by the
 * terminal prompt), idempotent replays, refusals, the approvals queue, the manifest commands,
 * whoami and the shortcuts. Spec: spec/transports.md §remote.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalize, remoteFixture, type CliOptions, type Mode, type RemoteFixture } from './support.ts';
import type { Envelope } from '../../src/spec/types.ts';
import Database from 'better-sqlite3';
import { humanPrincipal } from '../../src/identity/principal.ts';
import { openLocal } from '../../src/transports/cli/local.ts';
import { enrolTotp, totpCode } from '../support/terminal-human.ts';

/** Set the demo tenant's phrase_channel on both copies (the served runtime and the local file). */
async function phraseChannel(f: RemoteFixture, value: 'any' | 'human'): Promise<void> {
  const sql = `UPDATE tenants SET settings = json_set(COALESCE(settings, '{}'), '$.phrase_channel', ?) WHERE company_id = ?`;
  const companyId = (await f.server.rt.tenants.authenticate(f.keys.owner)).company_id;
  await f.server.rt.store.write((tx) => tx.run(sql, [value, companyId]));
  f.server.rt.tenants.invalidate();
  const db = new Database(f.localDb);
  try {
    db.prepare(sql).run(value, companyId);
  } finally {
    db.close();
  }
}

/**
 * The person holding the authenticator app of `key`'s user on the local database copy (enrolled
 * here): a terminal prompt answering the human factor's questions (terminal-human.ts), the rest
 * with `answer`. The served runtime never asks: a remote server cannot see a terminal.
 */
async function localHuman(
  f: RemoteFixture,
  key: string,
  answer: (q: string) => string,
): Promise<(q: string) => Promise<string>> {
  const local = await openLocal({ db: f.localDb, logLevel: 'silent' });
  let enrolled: { user_id: number; secret: string };
  try {
    const p = await local.rt.tenants.authenticate(key);
    enrolled = await enrolTotp(local.rt, p.company_id, { user_id: p.user_id, role: p.role });
  } finally {
    await local.close();
  }
  return async (q) => {
    if (/One-time code of/.test(q)) {
      // Several invocations within one 30 s step: a test's liberty, not a person's.
      const db = new Database(f.localDb);
      try {
        db.prepare('UPDATE user_totp SET last_step = NULL WHERE user_id = ?').run(enrolled.user_id);
      } finally {
        db.close();
      }
      return totpCode(enrolled.secret);
    }
    if (/Who is at this terminal/.test(q)) return String(enrolled.user_id);
    return answer(q);
  };
}

/** A receipt printed for a human, without its consent block (who consented and where). */
function withoutConsent(text: string): string {
  return normalize(text.replace(/ {2}consent:\n(?: {4}.*\n)+/g, '')) as string;
}

/** The owner approves on the served runtime as a signed-in human (the approval page's principal). */
async function approveAsHuman(
  f: RemoteFixture,
  approvalId: string,
  phrase: string,
): Promise<{ code: number; stdout: string }> {
  const owner = await f.server.rt.tenants.authenticate(f.keys.owner);
  const env = await f.server.rt.dispatch(
    { surface: 'http', principal: humanPrincipal(owner, { user_name: 'The owner' }) },
    'approvals.approve',
    { approval_id: approvalId, typed_phrase: phrase },
  );
  return { code: env.ok ? 0 : 1, stdout: JSON.stringify(env) };
}

async function both(
  f: RemoteFixture,
  argv: string[],
  options: CliOptions = {},
): Promise<{
  local: { code: number; stdout: string; stderr: string };
  remote: { code: number; stdout: string; stderr: string };
}> {
  const run = (mode: Mode) => f.cli(mode, argv, options);
  const local = await run('local');
  const remote = await run('remote');
  return { local, remote };
}

/** Run in both modes; the JSON outputs must be equal after normalisation, with the same exit code. */
async function sameJson(
  f: RemoteFixture,
  argv: string[],
  options: CliOptions = {},
): Promise<{ code: number; env: Envelope }> {
  const { local, remote } = await both(f, argv, options);
  assert.equal(
    remote.code,
    local.code,
    `exit codes of ${argv.join(' ')}: local ${local.code} (${local.stderr}), remote ${remote.code} (${remote.stderr})`,
  );
  const l = JSON.parse(local.stdout) as Envelope;
  const r = JSON.parse(remote.stdout) as Envelope;
  assert.deepEqual(normalize(r), normalize(l), `envelopes of ${argv.join(' ')}`);
  return { code: local.code, env: r };
}

test(
  'the CLI answers the same envelopes and exit codes embedded and remote',
  { timeout: 240_000 },
  async (t) => {
    const f = await remoteFixture(t);
    const fx = f.facts.fixtures!;
    const owner = { env: { SOLID_API_KEY: f.keys.owner } };
    const admin = { env: { SOLID_API_KEY: f.keys.admin } };

    await t.test('reads, keyless and keyed', async () => {
      const keyed = await sameJson(
        f,
        [
          'agent',
          'dispatch',
          'customer.full_context',
          '--args',
          JSON.stringify({ customer_id: fx.customer_id }),
          '--json',
        ],
        owner,
      );
      assert.equal(keyed.code, 0);
      assert.equal(keyed.env.ok, true);
      await sameJson(
        f,
        ['agent', 'dispatch', 'crm_contacts_search', '--args', '{"query":"Franey","limit":3}', '--json'],
        owner,
      );
      const keyless = await sameJson(f, [
        'agent',
        'dispatch',
        'audit.trail',
        '--args',
        '{"limit":2}',
        '--json',
      ]);
      assert.equal(keyless.code, 0);
    });

    await t.test(
      'refusals: invalid input, unknown verb, bad key, role floor, a domain not_found, keyless write',
      async () => {
        assert.equal(
          (
            await sameJson(
              f,
              [
                'agent',
                'dispatch',
                'deals_create',
                '--args',
                '{"contact_id":42,"title":"x","amount_cents":"lots"}',
                '--json',
              ],
              owner,
            )
          ).code,
          2,
        );
        assert.equal((await sameJson(f, ['agent', 'dispatch', 'deals_craete', '--json'], owner)).code, 5);
        assert.equal(
          (
            await sameJson(f, ['agent', 'dispatch', 'audit.trail', '--json'], {
              env: { SOLID_API_KEY: 'sk_solid_000000000000_notarealkeynotarealkey' },
            })
          ).code,
          3,
        );
        const role = await sameJson(
          f,
          [
            'agent',
            'dispatch',
            'charge_invoice',
            '--args',
            JSON.stringify({ invoice_number: fx.open_invoice.number, amount_cents: 500 }),
            '--json',
          ],
          { env: { SOLID_API_KEY: f.keys.read_only } },
        );
        assert.equal(role.env.error?.reason, 'role_denied');
        const missing = await sameJson(
          f,
          ['agent', 'dispatch', 'customer.full_context', '--args', '{"customer_id":987654}', '--json'],
          owner,
        );
        assert.equal(missing.env.error?.reason, 'not_found');
        assert.equal(missing.code, 5);
        assert.equal(
          (
            await sameJson(f, [
              'agent',
              'dispatch',
              'deals_create',
              '--args',
              '{"contact_id":42,"title":"x","amount_cents":1}',
              '--json',
            ])
          ).env.error?.reason,
          'auth_required',
        );
      },
    );

    await t.test(
      'a confirmation write: pending (exit 4), then --confirm runs it; the same idempotency key replays',
      async () => {
        const args = JSON.stringify({
          contact_id: fx.customer_id,
          title: 'Remote parity deal',
          amount_cents: 12_345,
        });
        const pending = await sameJson(
          f,
          ['agent', 'dispatch', 'deals_create', '--args', args, '--json'],
          owner,
        );
        assert.equal(pending.code, 4);
        assert.equal(pending.env.consent?.gate, 'confirmation');
        const done = await sameJson(
          f,
          [
            'agent',
            'dispatch',
            'deals_create',
            '--args',
            args,
            '--json',
            '--confirm',
            '--idempotency-key',
            'parity-1',
          ],
          owner,
        );
        assert.equal(done.code, 0);
        assert.equal(done.env.idempotency_key, 'parity-1');
        const again = await sameJson(
          f,
          [
            'agent',
            'dispatch',
            'deals_create',
            '--args',
            args,
            '--json',
            '--confirm',
            '--idempotency-key',
            'parity-1',
          ],
          owner,
        );
        assert.equal(again.env.replayed, true);
        const reused = await sameJson(
          f,
          [
            'agent',
            'dispatch',
            'deals_create',
            '--args',
            JSON.stringify({ contact_id: fx.customer_id, title: 'Other', amount_cents: 1 }),
            '--json',
            '--confirm',
            '--idempotency-key',
            'parity-1',
          ],
          owner,
        );
        assert.equal(reused.env.error?.reason, 'idempotency_key_reused');
      },
    );

    await t.test('a typed-phrase write: --phrase, a wrong phrase, and the terminal prompt', async () => {
      // The owner's explicit choice that agents may type phrases (the default counts only a
      // human's): this part is about the CLI's --phrase and prompt mechanics in both modes.
      await phraseChannel(f, 'any');
      const charge = (cents: number) =>
        JSON.stringify({ invoice_number: fx.open_invoice.number, amount_cents: cents });
      const pending = await sameJson(
        f,
        ['agent', 'dispatch', 'charge_invoice', '--args', charge(500), '--json'],
        admin,
      );
      assert.equal(pending.code, 4);
      const phrase = pending.env.consent!.typed_phrase!;
      assert.equal(phrase, `CHARGE $5.00 to invoice #${fx.open_invoice.number}`);
      const wrong = await sameJson(
        f,
        [
          'agent',
          'dispatch',
          'charge_invoice',
          '--args',
          charge(500),
          '--json',
          '--confirm',
          '--phrase',
          'CHARGE $5 to invoice',
        ],
        admin,
      );
      assert.equal(wrong.env.error?.reason, 'phrase_mismatch');
      const paid = await sameJson(
        f,
        [
          'agent',
          'dispatch',
          'charge_invoice',
          '--args',
          charge(500),
          '--json',
          '--confirm',
          '--phrase',
          phrase,
        ],
        admin,
      );
      assert.equal(paid.code, 0);
      assert.equal(paid.env.result?.status, 'captured');

      // The TTY path of runDispatch: the human types the phrase at the prompt (human output).
      const asked: string[] = [];
      const prompted = await both(
        f,
        ['agent', 'dispatch', 'charge_invoice', '--args', charge(700), '--confirm'],
        {
          ...admin,
          tty: true,
          prompt: await localHuman(f, f.keys.admin, (q) => {
            asked.push(q);
            return `CHARGE $7.00 to invoice #${fx.open_invoice.number}`;
          }),
        },
      );
      assert.equal(asked.length, 2, 'prompted once per mode');
      assert.equal(prompted.local.code, 0, prompted.local.stderr);
      assert.equal(prompted.remote.code, 0, prompted.remote.stderr);
      assert.match(prompted.remote.stderr, /To consent, type exactly: {2}CHARGE \$7\.00/);
      // The one difference: on the local database the terminal is the operator's (a human); a
      // remote server cannot see a terminal, so there the phrase is the agent's (spec/consent.md §channels).
      assert.match(prompted.local.stdout, /channel {6}operator_terminal/);
      assert.match(prompted.remote.stdout, /channel {6}agent/);
      assert.equal(withoutConsent(prompted.remote.stdout), withoutConsent(prompted.local.stdout));
      assert.match(prompted.remote.stdout, /✓ charge_invoice · captured · audit_id \d+ · signed receipt/);
      await phraseChannel(f, 'human');
    });

    await t.test('the approvals queue: an admin request approved out of band by the owner', async () => {
      const args = JSON.stringify({ invoice_number: fx.open_invoice.number, amount_cents: 300 });
      const pending = {
        local: await f.cli('local', ['agent', 'dispatch', 'charge_invoice', '--args', args, '--json'], admin),
        remote: await f.cli(
          'remote',
          ['agent', 'dispatch', 'charge_invoice', '--args', args, '--json'],
          admin,
        ),
      };
      const ids = {
        local: JSON.parse(pending.local.stdout).consent.approval_id as string,
        remote: JSON.parse(pending.remote.stdout).consent.approval_id as string,
      };
      const nonces = {
        local: JSON.parse(pending.local.stdout).consent.nonce as string,
        remote: JSON.parse(pending.remote.stdout).consent.nonce as string,
      };
      await sameJson(f, ['approvals', 'list', '--json'], owner);
      const listed = await both(f, ['approvals', 'list'], owner);
      assert.equal(normalize(listed.remote.stdout), normalize(listed.local.stdout));
      // An agent's --phrase never approves, in either mode (spec/consent.md §channels).
      for (const mode of ['local', 'remote'] as const) {
        const scripted = await f.cli(
          mode,
          [
            'approvals',
            'approve',
            ids[mode],
            '--phrase',
            `CHARGE $3.00 to invoice #${fx.open_invoice.number}`,
            '--json',
          ],
          owner,
        );
        assert.equal(scripted.code, 3, `${mode}: ${scripted.stdout}`);
        assert.equal((JSON.parse(scripted.stdout) as Envelope).error?.reason, 'human_required');
      }
      for (const mode of ['local', 'remote'] as const) {
        // The owner decides as a human: at the terminal of the local database, or signed in on the
        // server's approval page (a human principal on the served runtime).
        const approved =
          mode === 'local'
            ? await f.cli(mode, ['approvals', 'approve', ids[mode]], {
                ...owner,
                tty: true,
                prompt: await localHuman(
                  f,
                  f.keys.owner,
                  () => `CHARGE $3.00 to invoice #${fx.open_invoice.number}`,
                ),
              })
            : await approveAsHuman(f, ids[mode], `CHARGE $3.00 to invoice #${fx.open_invoice.number}`);
        assert.equal(approved.code, 0, approved.stdout);
        const done = await f.cli(
          mode,
          ['agent', 'dispatch', 'charge_invoice', '--args', args, '--nonce', nonces[mode], '--json'],
          admin,
        );
        assert.equal(done.code, 0, `${mode}: ${done.stdout}`);
      }
    });

    await t.test('verbs list / show, whoami and a shortcut print the same in both modes', async () => {
      const listJson = await both(f, ['verbs', 'list', '--json']);
      assert.deepEqual(JSON.parse(listJson.remote.stdout), JSON.parse(listJson.local.stdout));
      const listText = await both(f, ['verbs', 'list', '--surface', 'mcp_stdio']);
      assert.equal(listText.remote.stdout, listText.local.stdout);
      const show = await both(f, ['verbs', 'show', 'deals_create']);
      assert.equal(show.remote.stdout, show.local.stdout);
      assert.match(show.remote.stdout, /role floor: employee/);
      await sameJson(f, ['verbs', 'show', 'deals_craete', '--json']);
      await sameJson(f, ['whoami', '--json'], owner);
      await sameJson(f, ['whoami', '--json']);
      await sameJson(f, ['customer-context', String(fx.customer_id), '--json'], owner);
      const help = await both(f, ['--help']);
      assert.equal(help.remote.stdout, help.local.stdout);
    });
  },
);

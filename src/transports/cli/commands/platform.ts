/**
 * `solid platform …`: provisioning for platforms on the local database (spec/platform.md).
 *
 *   solid platform keys create --name <name>   a platform credential, shown once (operator only)
 *   solid platform keys list | revoke <key_id>
 *   solid platform call <verb> --args '<json>'  one platform.* verb with a platform credential
 *                                               (--platform-key or SOLID_PLATFORM_KEY)
 *
 * Platform keys are made only here, by the operator at the machine holding the database, never
 * through the API: each create and revoke is a row of the platform log (operator, no key id).
 * `call` runs the same code as `POST /api/v1/platform/{verb}` and prints its envelope; the exit
 * code is the reason's (spec/reasons.md).
 */
import type { Command } from 'commander';
import { VerbError } from '../../../runtime/errors.ts';
import { appendPlatformLog } from '../../../platform/platform-log.ts';
import { createPlatformKey, listPlatformKeys, revokePlatformKey } from '../../../platform/platform-keys.ts';
import { callPlatform } from '../../../platform/provisioning.ts';
import { linkBaseOf } from './users.ts';
import { localOptionsOf, openLocal } from '../local.ts';
import { parseArgsJson, printEnvelope, table, type Io } from '../output.ts';

export function registerPlatform(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('platform')
    .description('Provisioning for platforms hosting many businesses: platform keys and platform.* verbs');
  const keys = cmd
    .command('keys')
    .description('Platform credentials (operator only; shown once, stored hashed)');

  keys
    .command('create')
    .description('Make a platform credential (pk_solid_…) for a platform backend; printed once')
    .requiredOption('--name <name>', 'what holds it, e.g. "billing-backend"')
    .option('--json', 'print JSON')
    .action(async (flags: { name: string; json?: boolean }) => {
      const name = flags.name.trim();
      // eslint-disable-next-line no-control-regex -- control characters are what is refused
      if (name === '' || name.length > 100 || /[\u0000-\u001f\u007f]/.test(name))
        throw new VerbError('invalid_args', '--name must be 1-100 printable characters.');
      const local = await openLocal(localOptionsOf(program));
      try {
        const now = local.rt.clock();
        const { key, info } = await createPlatformKey(local.rt.store, name, now);
        await local.rt.store.write((tx) =>
          appendPlatformLog(tx, local.rt.store.engine, {
            key_id: null,
            action: 'platform.keys.create',
            status: 'completed',
            request_data: { name },
            result_data: { key_id: info.key_id },
            now,
          }),
        );
        if (flags.json) io.out(JSON.stringify({ ...info, platform_key: key }, null, 2));
        else
          io.out(
            [
              `✓ platform key ${info.key_id} (${name})`,
              `  ${key}`,
              "  Shown once: store it in the platform backend's secret store (SOLID_PLATFORM_KEY).",
              '  It provisions tenants, their first people (enrolment links) and agent keys; it never acts inside a tenant.',
            ].join('\n'),
          );
      } finally {
        await local.close();
      }
    });

  keys
    .command('list')
    .description('List platform credentials (never their secrets)')
    .option('--json', 'print JSON')
    .action(async (flags: { json?: boolean }) => {
      const local = await openLocal(localOptionsOf(program));
      try {
        const all = await local.rt.store.read((q) => listPlatformKeys(q));
        if (flags.json) io.out(JSON.stringify(all, null, 2));
        else
          io.out(
            table(
              ['KEY', 'NAME', 'CREATED', 'REVOKED'],
              all.map((k) => [k.key_id, k.name, k.created_at, k.revoked_at ?? '-']),
            ),
          );
      } finally {
        await local.close();
      }
    });

  keys
    .command('revoke <key_id>')
    .description('Revoke a platform credential: refused from the next call on')
    .action(async (keyId: string) => {
      const local = await openLocal(localOptionsOf(program));
      try {
        const now = local.rt.clock();
        const done = await local.rt.store.write(async (tx) => {
          const ok = await revokePlatformKey(tx, keyId, now);
          if (ok)
            await appendPlatformLog(tx, local.rt.store.engine, {
              key_id: null,
              action: 'platform.keys.revoke',
              status: 'completed',
              request_data: { key_id: keyId },
              now,
            });
          return ok;
        });
        if (!done)
          throw new VerbError('not_found', `No live platform key ${keyId}.`, {
            hint: 'List them with `solid platform keys list`.',
          });
        io.out(`✓ revoked platform key ${keyId}`);
      } finally {
        await local.close();
      }
    });

  cmd
    .command('call <verb>')
    .description('Call one provisioning verb (platform.tenants.create, …) with a platform credential')
    .option('--args <json>', 'the arguments as a JSON object', '{}')
    .option('--platform-key <key>', 'platform credential (default: SOLID_PLATFORM_KEY)')
    .option(
      '--public-url <url>',
      'base of enrolment links (default SOLID_PUBLIC_URL or http://localhost:4400)',
    )
    .option('--json', 'print the envelope as JSON')
    .action(
      async (
        verb: string,
        flags: { args?: string; platformKey?: string; publicUrl?: string; json?: boolean },
      ) => {
        const parsed = parseArgsJson(verb, flags.args);
        if (!parsed.ok) {
          setExit(printEnvelope(io, parsed.envelope, Boolean(flags.json)));
          return;
        }
        const local = await openLocal(localOptionsOf(program));
        try {
          const env = await callPlatform(
            local.rt,
            flags.platformKey ?? process.env.SOLID_PLATFORM_KEY,
            verb,
            parsed.args,
            { publicUrl: linkBaseOf(flags.publicUrl) },
          );
          // The human rendering never prints a secret member: --json shows the key or link once.
          if (!flags.json && env.ok && env.secret !== undefined)
            for (const [k, v] of Object.entries(env.secret)) io.out(`${k}: ${String(v)}  (shown once)`);
          setExit(printEnvelope(io, env, Boolean(flags.json)));
        } finally {
          await local.close();
        }
      },
    );
}

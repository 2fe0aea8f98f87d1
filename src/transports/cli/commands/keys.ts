/**
 * `solid keys list|create|activate <kid>|rotate|retire <kid> [--tenant N] [--json]`: a tenant's
 * ES256 signing keys (receipts, audit checkpoints, UCP answers), lifecycle
 * pending → active → rotating → retired (src/runtime/ledger/keys/tenant-keys.ts).
 *
 * Owner operations on the local database (no API key): each change is written with an audit row
 * (`keys.create`, `keys.activate`, `keys.rotate`, `keys.retire`; agent_type `cli:operator`) in the
 * same transaction.
 *
 * Rotation publishes before it signs: the UCP profile lists pending keys and platforms cache the
 * profile up to its max-age (300 s), so
 *   - `create` adds a pending key (published now, not signing);
 *   - `activate <kid>` makes a pending key the signing key once it has been published for 300 s
 *     (`--force` skips the wait); the previous active key becomes `rotating`, still published and
 *     accepted for `--grace-days` (default 7);
 *   - `rotate` does the two steps: with no pending key it creates one and says when to run it
 *     again; with a pending key old enough it activates it; `--force` does both at once;
 *   - `retire <kid>` withdraws a pending or rotating key at once (compromise, or after the grace);
 *     the active key cannot be retired (rotate first). Retired keys stay in the database for
 *     verifying old receipts offline (`solid audit export-keys`).
 * A running `solid serve` picks the new signing key up within 30 s (its key cache).
 *
 * The tenant: `--tenant`, else SOLID_UCP_TENANT, else the lowest tenant that is not the sandbox.
 * Exit codes: 0 ok; 2 bad input (unknown state change, too early); 5 unknown key or tenant.
 *
 * Spec: spec/transports.md §ucp-keys.
 */
import type { Command } from 'commander';
import type { Runtime } from '../../../runtime/runtime.ts';
import type { StoreTx } from '../../../store/store.ts';
import type { TenantKeyInfo } from '../../../runtime/ledger/keys/tenant-keys.ts';
import { DEFAULT_GRACE_SECONDS } from '../../../runtime/ledger/keys/tenant-keys.ts';
import { VerbError, isVerbError } from '../../../runtime/errors.ts';
import { reasonInfo } from '../../../spec/reasons.ts';
import { PROFILE_MAX_AGE_SECONDS } from '../../ucp/profile.ts';
import { appendOperatorAudit } from '../../../runtime/ledger/write/operator-audit.ts';
import { primaryTenantOf, ucpConfigFromEnv } from '../../ucp/ucp-config.ts';
import { localOptionsOf, openLocal } from '../local.ts';
import { table, type Io } from '../output.ts';
import { refuse } from '../../../runtime/refusals.ts';

interface KeysFlags {
  tenant?: string;
  json?: boolean;
  graceDays?: string;
  force?: boolean;
}

/** The tenant a keys/ucp command acts on (see the header). @throws VerbError invalid_args, not_found */
export async function tenantOfFlags(rt: Runtime, tenant: string | undefined): Promise<number> {
  if (tenant !== undefined) {
    const n = Number(tenant);
    if (!Number.isSafeInteger(n) || n < 1) throw refuse.tenantFlag(tenant);
    if ((await rt.tenants.get(n)) === undefined)
      throw new VerbError('not_found', `No tenant ${n} in this database.`, {
        hint: 'List tenants with `solid tenant show` or check --db.',
      });
    return n;
  }
  const id = await primaryTenantOf(rt, ucpConfigFromEnv().primaryTenant);
  if (id === undefined)
    throw new VerbError('not_found', 'This database has no tenant.', { hint: 'Run `solid init` first.' });
  return id;
}

function graceSecondsOf(flags: KeysFlags): number {
  if (flags.graceDays === undefined) return DEFAULT_GRACE_SECONDS;
  const days = Number(flags.graceDays);
  if (!Number.isFinite(days) || days < 0 || days > 365)
    throw new VerbError('invalid_args', '--grace-days must be a number of days between 0 and 365.');
  return Math.round(days * 86_400);
}

/** Whether verifiers should accept the key now (what the profile publishes). */
function published(k: TenantKeyInfo, now: Date): boolean {
  return (
    k.state === 'pending' ||
    k.state === 'active' ||
    (k.state === 'rotating' && (k.grace_until === null || k.grace_until > now.toISOString()))
  );
}

function render(keys: readonly TenantKeyInfo[], now: Date): string {
  if (keys.length === 0) return '(no keys)';
  return table(
    ['kid', 'state', 'published', 'created', 'activated', 'grace until', 'retired'],
    keys.map((k) => [
      k.kid,
      k.state,
      published(k, now) ? 'yes' : 'no',
      k.created_at,
      k.activated_at ?? '',
      k.grace_until ?? '',
      k.retired_at ?? '',
    ]),
  );
}

/** Refuse to sign with a key platforms may not have seen yet (unless forced). */
function checkPublishedLongEnough(key: TenantKeyInfo, now: Date, force: boolean): void {
  const age = (now.getTime() - Date.parse(key.created_at)) / 1000;
  if (force || age >= PROFILE_MAX_AGE_SECONDS) return;
  const at = new Date(Date.parse(key.created_at) + PROFILE_MAX_AGE_SECONDS * 1000).toISOString();
  throw new VerbError(
    'invalid_request',
    `Key ${key.kid} was published ${Math.floor(age)} s ago; platforms cache the profile up to ${PROFILE_MAX_AGE_SECONDS} s, so it may not sign yet.`,
    {
      hint: `Run it again after ${at}, or pass --force to start signing now.`,
      details: { kid: key.kid, signs_after: at },
    },
  );
}

type Action = (
  rt: Runtime,
  companyId: number,
  now: Date,
) => Promise<{ out: Record<string, unknown>; text: string }>;

async function run(program: Command, io: Io, flags: KeysFlags, action: Action): Promise<number> {
  const local = await openLocal(localOptionsOf(program));
  try {
    const companyId = await tenantOfFlags(local.rt, flags.tenant);
    const { out, text } = await action(local.rt, companyId, local.rt.clock());
    if (flags.json) io.out(JSON.stringify(out, null, 2));
    else io.out(text);
    return 0;
  } catch (err) {
    if (!isVerbError(err)) throw err;
    if (flags.json) io.out(JSON.stringify({ ok: false, error: err.toEnvelopeError() }, null, 2));
    io.err(`✗ ${err.reason}: ${err.message}${err.hint ? `\n  hint: ${err.hint}` : ''}`);
    return reasonInfo(err.reason).exit;
  } finally {
    await local.close();
  }
}

/** One key change with its audit row, in one store transaction. */
async function change(
  rt: Runtime,
  companyId: number,
  now: Date,
  action: string,
  fn: (tx: StoreTx) => Promise<TenantKeyInfo>,
  extra: Record<string, unknown> = {},
): Promise<TenantKeyInfo> {
  const info = await rt.store.write(async (tx) => {
    const k = await fn(tx);
    const row = await appendOperatorAudit(tx, {
      company_id: companyId,
      action,
      category: 'keys',
      request_data: { kid: k.kid, state: k.state, ...extra },
      entity_type: 'signing_key',
      entity_id: k.kid,
      now,
    });
    tx.afterCommit(() => rt.afterWrite(row));
    return k;
  });
  rt.keys.invalidate(companyId);
  return info;
}

export function registerKeys(program: Command, io: Io, setExit: (code: number) => void): void {
  const keys = program
    .command('keys')
    .description(
      "A tenant's ES256 signing keys: list, create, activate, rotate, retire (owner, local database)",
    );
  const common = (c: Command) =>
    c
      .option('--tenant <company_id>', 'tenant (default: SOLID_UCP_TENANT or the first non-sandbox tenant)')
      .option('--json', 'print JSON');

  common(
    keys.command('list').description('List the keys, newest first, with what the profile publishes'),
  ).action(async (flags: KeysFlags) => {
    setExit(
      await run(program, io, flags, async (rt, companyId, now) => {
        const list = await rt.store.read((q) => rt.keys.list(q, companyId));
        return {
          out: { company_id: companyId, keys: list.map((k) => ({ ...k, published: published(k, now) })) },
          text: render(list, now),
        };
      }),
    );
  });

  common(
    keys.command('create').description('Create a pending key: published now, signing only after activation'),
  ).action(async (flags: KeysFlags) => {
    setExit(
      await run(program, io, flags, async (rt, companyId, now) => {
        const k = await change(rt, companyId, now, 'keys.create', (tx) =>
          rt.keys.create(tx, companyId, 'pending', now),
        );
        const after = new Date(now.getTime() + PROFILE_MAX_AGE_SECONDS * 1000).toISOString();
        return {
          out: { company_id: companyId, key: k, signs_after: after },
          text: `✓ created pending key ${k.kid} (published now)\n  activate it after ${after}: solid keys activate ${k.kid}`,
        };
      }),
    );
  });

  common(
    keys
      .command('activate <kid>')
      .description('Start signing with a pending key; the previous key stays accepted for the grace period'),
  )
    .option('--grace-days <days>', 'how long the previous key stays published (default 7)')
    .option('--force', 'activate even if the key was published less than 300 s ago')
    .action(async (kid: string, flags: KeysFlags) => {
      setExit(
        await run(program, io, flags, async (rt, companyId, now) => {
          const grace = graceSecondsOf(flags);
          const current = (await rt.store.read((q) => rt.keys.list(q, companyId))).find((k) => k.kid === kid);
          if (current === undefined) throw refuse.signingKeyNotFound(kid, companyId);
          if (current.state === 'pending') checkPublishedLongEnough(current, now, flags.force === true);
          const k = await change(
            rt,
            companyId,
            now,
            'keys.activate',
            (tx) => rt.keys.activate(tx, companyId, kid, now, grace),
            { grace_seconds: grace },
          );
          return {
            out: { company_id: companyId, key: k },
            text: `✓ ${k.kid} is now the active signing key; the previous key is accepted for ${grace / 86_400} days`,
          };
        }),
      );
    });

  common(keys.command('rotate').description('Publish a new key, then (run again after 300 s) sign with it'))
    .option('--grace-days <days>', 'how long the previous key stays published (default 7)')
    .option('--force', 'create and activate at once')
    .action(async (flags: KeysFlags) => {
      setExit(
        await run(program, io, flags, async (rt, companyId, now) => {
          const grace = graceSecondsOf(flags);
          const pending = (await rt.store.read((q) => rt.keys.list(q, companyId))).find(
            (k) => k.state === 'pending',
          );
          if (pending === undefined && flags.force !== true) {
            const k = await change(
              rt,
              companyId,
              now,
              'keys.rotate',
              (tx) => rt.keys.create(tx, companyId, 'pending', now),
              { step: 'publish' },
            );
            const after = new Date(now.getTime() + PROFILE_MAX_AGE_SECONDS * 1000).toISOString();
            return {
              out: { company_id: companyId, step: 'published', key: k, signs_after: after },
              text: `✓ published pending key ${k.kid}\n  run \`solid keys rotate\` again after ${after} to start signing with it`,
            };
          }
          let target = pending;
          if (target === undefined)
            target = await change(
              rt,
              companyId,
              now,
              'keys.rotate',
              (tx) => rt.keys.create(tx, companyId, 'pending', now),
              { step: 'publish', forced: true },
            );
          else checkPublishedLongEnough(target, now, flags.force === true);
          const kid = target.kid;
          const k = await change(
            rt,
            companyId,
            now,
            'keys.rotate',
            (tx) => rt.keys.activate(tx, companyId, kid, now, grace),
            { step: 'activate', grace_seconds: grace },
          );
          return {
            out: { company_id: companyId, step: 'activated', key: k },
            text: `✓ ${k.kid} is now the active signing key; the previous key is accepted for ${grace / 86_400} days, then retire it`,
          };
        }),
      );
    });

  common(
    keys.command('retire <kid>').description('Withdraw a pending or rotating key now (never the active one)'),
  ).action(async (kid: string, flags: KeysFlags) => {
    setExit(
      await run(program, io, flags, async (rt, companyId, now) => {
        const k = await change(rt, companyId, now, 'keys.retire', (tx) =>
          rt.keys.retire(tx, companyId, kid, now),
        );
        return {
          out: { company_id: companyId, key: k },
          text: `✓ retired ${k.kid}: no longer published or accepted (kept for verifying old receipts)`,
        };
      }),
    );
  });
}

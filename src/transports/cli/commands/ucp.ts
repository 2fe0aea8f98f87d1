/**
 * `solid ucp …`: the UCP transport from the command line.
 *
 *   solid ucp call <url> <capability> [--args '{…}'] --key-file jwk.json [--kid K]
 *                  [--profile-url URL] [--idempotency-key K] [--nonce N] [--json]
 *       Act as a platform: fetch the business profile at <url> (its /.well-known/ucp or base
 *       URL), POST the capability signed with the private JWK (RFC 9421, ES256), verify the
 *       signed answer against the profile's keys, print the answer. `--profile-url` (or
 *       SOLID_UCP_PROFILE_URL) is the caller's own profile URL sent in UCP-Agent; the business
 *       must trust it. Exit: 0 answered ok and the signature verified, 4 pending, else by status
 *       (2 input, 3 auth/denied, 5 not found, 6 conflict, 7 limit, 8 unavailable, 1 other or an
 *       answer whose signature did not verify).
 *   solid ucp keygen --out FILE [--kid K] [--profile-url URL]
 *       Create a platform key (P-256 private JWK, file mode 0600) and print the platform profile
 *       document to host at the profile URL (public key in keys[]).
 *   solid ucp profile [--tenant N] [--base-url URL]
 *       Print the business profile this database serves (same generator as /.well-known/ucp).
 *   solid ucp config show [--tenant N]
 *   solid ucp config set (--file FILE | --json '{…}') [--tenant N]
 *       Read or replace the tenant's `settings.ucp` (namespace, sub-agent map, trust list:
 *       platforms with role, allow-list, max_class, pinned keys; see ucp-config.ts). The new value
 *       is validated first; the change is audited (`ucp.config_set`, agent_type cli:operator).
 *
 * Spec: spec/transports.md §ucp-cli.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Command } from 'commander';
import { VerbError, isVerbError } from '../../../runtime/errors.ts';
import { generateP256Jwk } from '../../../runtime/ledger/keys/keygen.ts';
import { reasonInfo } from '../../../spec/reasons.ts';
import { authorityBinds, buildCapabilityCatalog, UCP_VERSION } from '../../ucp/capability-names.ts';
import { buildBusinessProfile } from '../../ucp/profile.ts';
import { appendOperatorAudit } from '../../../runtime/ledger/write/operator-audit.ts';
import { callCapability } from '../../ucp/ucp-client.ts';
import { SignatureError } from '../../ucp/signature-error.ts';
import {
  checkBaseUrl,
  parseUcpSettings,
  resolveTenantConfig,
  ucpConfigFromEnv,
} from '../../ucp/ucp-config.ts';
import type { P256JwkInput } from '../../ucp/jwk.ts';
import { localOptionsOf, openLocal } from '../local.ts';
import { parseStrictJson, StrictJsonError } from '../../../spec/strict-json.ts';
import { parseArgsJson, printEnvelope, type Io } from '../output.ts';
import { tenantOfFlags } from './keys.ts';
import { setTenantSetting } from '../../../runtime/tenants.ts';

interface CallFlags {
  args?: string;
  keyFile?: string;
  kid?: string;
  profileUrl?: string;
  idempotencyKey?: string;
  nonce?: string;
  json?: boolean;
}

/** Exit code of a UCP answer's HTTP status (see the header). */
export function exitOfStatus(status: number): number {
  if (status >= 200 && status < 300) return status === 202 ? 4 : 0;
  if (status === 400 || status === 413 || status === 415 || status === 422) return 2;
  if (status === 401 || status === 403) return 3;
  if (status === 404) return 5;
  if (status === 409) return 6;
  if (status === 429) return 7;
  if (status === 424 || status === 502 || status === 503) return 8;
  return 1;
}

function fail(io: Io, err: unknown): number {
  if (isVerbError(err)) {
    io.err(`✗ ${err.reason}: ${err.message}${err.hint ? `\n  hint: ${err.hint}` : ''}`);
    return reasonInfo(err.reason).exit;
  }
  throw err;
}

/** Strict JSON (src/spec/strict-json.ts) from a flag or file; VerbError invalid_args otherwise. */
function strictJsonArg(text: string, what: string): unknown {
  try {
    return parseStrictJson(text, what);
  } catch (err) {
    const problem = err instanceof StrictJsonError ? err.problem : undefined;
    if (problem !== undefined)
      throw new VerbError('invalid_args', problem.message, { hint: problem.hint, details: problem.details });
    throw new VerbError('invalid_args', `${what} is not valid JSON: ${(err as Error).message}`);
  }
}

function readJsonFile(path: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new VerbError('invalid_args', `Cannot read ${what} ${path}: ${(err as Error).message}`);
  }
  return strictJsonArg(text, `${what} ${path}`);
}

async function runCall(io: Io, url: string, capability: string, flags: CallFlags): Promise<number> {
  const parsed = parseArgsJson(capability, flags.args);
  if (!parsed.ok) return printEnvelope(io, parsed.envelope, Boolean(flags.json));
  if (flags.keyFile === undefined)
    throw new VerbError(
      'invalid_args',
      '--key-file is required: the platform private key (a P-256 JWK with d).',
      { hint: 'Create one with `solid ucp keygen --out platform.jwk.json`.' },
    );
  const jwk = readJsonFile(flags.keyFile, 'the key file') as P256JwkInput & { kid?: string };
  const kid = flags.kid ?? jwk.kid;
  if (kid === undefined || kid === '')
    throw new VerbError('invalid_args', 'No key id: pass --kid or put "kid" in the key file.');
  const profileUrl = flags.profileUrl ?? process.env.SOLID_UCP_PROFILE_URL;
  if (profileUrl === undefined)
    throw new VerbError(
      'invalid_args',
      '--profile-url is required: your platform profile URL (sent in UCP-Agent).',
      { hint: 'Host the document `solid ucp keygen` prints and pass its URL.' },
    );
  let result;
  try {
    result = await callCapability({
      target: url,
      capability,
      args: parsed.args,
      profileUrl,
      keyid: kid,
      privateKey: jwk,
      ...(flags.idempotencyKey !== undefined ? { idempotencyKey: flags.idempotencyKey } : {}),
      ...(flags.nonce !== undefined ? { consentNonce: flags.nonce } : {}),
    });
  } catch (err) {
    if (err instanceof SignatureError)
      throw new VerbError('invalid_args', `Cannot sign with the key file: ${err.message}`);
    if (isVerbError(err)) throw err;
    throw new VerbError('upstream_unavailable', `The UCP call failed: ${(err as Error).message}`, {
      hint: 'Check the URL (…/.well-known/ucp or the base URL) and that the business is reachable.',
    });
  }
  const verified = !(result.signature instanceof SignatureError);
  if (flags.json) {
    io.out(
      JSON.stringify(
        {
          status: result.status,
          url: result.url,
          signature: verified
            ? { verified: true, keyid: (result.signature as { keyid: string }).keyid }
            : {
                verified: false,
                code: (result.signature as SignatureError).code,
                message: (result.signature as SignatureError).message,
              },
          body: result.body,
        },
        null,
        2,
      ),
    );
  } else {
    io.out(`HTTP ${result.status}  POST ${result.url}`);
    io.out(JSON.stringify(result.body, null, 2));
    if (verified)
      io.err(`✓ answer signed by the business (keyid ${(result.signature as { keyid: string }).keyid})`);
    else
      io.err(
        `✗ the answer's signature did not verify: ${(result.signature as SignatureError).code}: ${(result.signature as SignatureError).message}`,
      );
  }
  const code = exitOfStatus(result.status);
  return code === 0 && !verified ? 1 : code;
}

export function registerUcp(program: Command, io: Io, setExit: (code: number) => void): void {
  const ucp = program
    .command('ucp')
    .description(
      'UCP: call a business as a platform, make a platform key, show the profile, configure the trust list',
    );

  ucp
    .command('call <url> <capability>')
    .description('Call a capability of a UCP business with a signed request and verify the signed answer')
    .option('--args <json>', 'the capability input as a JSON object', '{}')
    .option('--key-file <file>', 'platform private key (P-256 JWK with d)')
    .option('--kid <kid>', 'key id (default: the JWK kid)')
    .option('--profile-url <url>', 'your platform profile URL (UCP-Agent); default SOLID_UCP_PROFILE_URL')
    .option('--idempotency-key <key>', 'Idempotency-Key (default: a new UUID)')
    .option('--nonce <nonce>', 'Solid-Consent-Nonce: confirm a typed-phrase call approved out of band')
    .option('--json', 'print JSON')
    .action(async (url: string, capability: string, flags: CallFlags) => {
      try {
        setExit(await runCall(io, url, capability, flags));
      } catch (err) {
        setExit(fail(io, err));
      }
    });

  ucp
    .command('keygen')
    .description('Create a platform key pair and print the platform profile to host')
    .requiredOption('--out <file>', 'where to write the private JWK (mode 0600)')
    .option('--kid <kid>', 'key id', `platform-${new Date().toISOString().slice(0, 10)}`)
    .option('--profile-url <url>', 'where you will host the profile (printed as a reminder)')
    .option('--force', 'replace an existing --out file (the old private key is lost)')
    .action((flags: { out: string; kid: string; profileUrl?: string; force?: boolean }) => {
      const jwk = generateP256Jwk().privateJwk;
      const text = JSON.stringify({ ...jwk, kid: flags.kid }, null, 2) + '\n';
      try {
        if (flags.force === true) {
          // A new 0600 file renamed over the old one: the key is never readable under the old mode.
          const tmp = join(dirname(flags.out), `.${basename(flags.out)}.${process.pid}.tmp`);
          writeFileSync(tmp, text, { mode: 0o600, flag: 'wx' });
          renameSync(tmp, flags.out);
        } else {
          writeFileSync(flags.out, text, { mode: 0o600, flag: 'wx' }); // never an existing file or a symlink
        }
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        io.err(
          code === 'EEXIST'
            ? `✗ ${flags.out} already exists; it may hold a private key in use. Choose another --out, or pass --force to replace it.`
            : `✗ cannot write ${flags.out}: ${(err as Error).message}`,
        );
        setExit(2);
        return;
      }
      const profile = {
        ucp: { version: UCP_VERSION, services: {}, capabilities: {}, payment_handlers: {} },
        keys: [{ kid: flags.kid, kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y, use: 'sig', alg: 'ES256' }],
      };
      io.out(JSON.stringify(profile, null, 2));
      io.err(
        `✓ private key written to ${flags.out} (kid ${flags.kid}); host the profile above${flags.profileUrl ? ` at ${flags.profileUrl}` : ''} (JSON, Cache-Control: public, max-age=300, no redirects)`,
      );
      setExit(0);
    });

  ucp
    .command('profile')
    .description('Print the UCP business profile this database serves')
    .option('--tenant <company_id>', 'tenant (default: SOLID_UCP_TENANT or the first non-sandbox tenant)')
    .option('--base-url <url>', 'public origin (default: SOLID_UCP_BASE_URL or http://127.0.0.1:4400)')
    .action(async (flags: { tenant?: string; baseUrl?: string }) => {
      try {
        const env = ucpConfigFromEnv();
        const base = checkBaseUrl(flags.baseUrl ?? env.baseUrl ?? 'http://127.0.0.1:4400', '--base-url');
        const local = await openLocal(localOptionsOf(program));
        try {
          const { rt } = local;
          const companyId = await tenantOfFlags(rt, flags.tenant);
          const tenant = (await rt.tenants.get(companyId))!;
          const config = resolveTenantConfig(tenant.settings.ucp, env.defaultNamespace);
          const catalog = buildCapabilityCatalog(rt.registry.all(), {
            namespace: config.namespace,
            subAgents: config.subAgents,
            extends: config.extends,
          });
          const keys = await rt.store.read((q) => rt.keys.publishable(q, companyId, rt.clock()));
          const prefixed = flags.tenant !== undefined;
          if (!authorityBinds(`${config.namespace}.ops.x`, `${base}/`)) {
            io.err(
              `! namespace ${config.namespace} does not match ${base}: platforms ignore capabilities whose schema host does not bind to their name (https, host labels reversed as a prefix of the name)`,
            );
          }
          io.out(
            JSON.stringify(
              buildBusinessProfile({
                catalog,
                capabilityVersion: config.capabilityVersion,
                urls: { base: prefixed ? `${base}/t/${companyId}` : base },
                keys,
              }),
              null,
              2,
            ),
          );
          setExit(0);
        } finally {
          await local.close();
        }
      } catch (err) {
        setExit(
          fail(
            io,
            err instanceof Error && !isVerbError(err) && /settings\.ucp|base-url|SOLID_UCP/.test(err.message)
              ? new VerbError('invalid_args', err.message)
              : err,
          ),
        );
      }
    });

  const config = ucp
    .command('config')
    .description("The tenant's UCP settings (namespace, sub-agents, trusted platforms)");
  config
    .command('show')
    .option('--tenant <company_id>', 'tenant')
    .action(async (flags: { tenant?: string }) => {
      try {
        const local = await openLocal(localOptionsOf(program));
        try {
          const companyId = await tenantOfFlags(local.rt, flags.tenant);
          const tenant = (await local.rt.tenants.get(companyId))!;
          io.out(JSON.stringify(tenant.settings.ucp ?? {}, null, 2));
          setExit(0);
        } finally {
          await local.close();
        }
      } catch (err) {
        setExit(fail(io, err));
      }
    });
  config
    .command('set')
    .description('Replace settings.ucp (validated, audited)')
    .option('--file <file>', 'JSON file with the new settings.ucp')
    .option('--json <json>', 'the new settings.ucp as JSON')
    .option('--tenant <company_id>', 'tenant')
    .action(async (flags: { file?: string; json?: string; tenant?: string }) => {
      try {
        if ((flags.file === undefined) === (flags.json === undefined))
          throw new VerbError('invalid_args', 'Pass exactly one of --file or --json.');
        let value: unknown;
        if (flags.file !== undefined) value = readJsonFile(flags.file, 'the settings file');
        else {
          value = strictJsonArg(flags.json!, '--json');
        }
        let settings;
        try {
          settings = parseUcpSettings(value);
        } catch (err) {
          throw new VerbError('invalid_args', (err as Error).message, {
            hint: 'See docs/ucp.md for the settings.ucp members.',
          });
        }
        const local = await openLocal(localOptionsOf(program));
        try {
          const { rt } = local;
          const companyId = await tenantOfFlags(rt, flags.tenant);
          const now = rt.clock();
          await rt.store.write(async (tx) => {
            const current = await setTenantSetting(tx, companyId, 'ucp', settings);
            const audit = await appendOperatorAudit(tx, {
              company_id: companyId,
              action: 'ucp.config_set',
              category: 'ucp',
              request_data: { previous: current.ucp ?? null, ucp: settings },
              entity_type: 'tenant',
              entity_id: String(companyId),
              now,
            });
            tx.afterCommit(() => rt.afterWrite(audit));
          });
          rt.tenants.invalidate();
          io.out(
            `✓ settings.ucp of tenant ${companyId} replaced (${(settings.platforms ?? []).length} trusted platforms); a running server applies it within 5 s`,
          );
          setExit(0);
        } finally {
          await local.close();
        }
      } catch (err) {
        setExit(fail(io, err));
      }
    });
}

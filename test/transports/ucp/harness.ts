/**
 * UCP test harness: a test runtime (createTestRuntime) with small verbs, the HTTP server with the
 * UCP plugin listening on loopback, and a platform whose profile is served by a tiny static
 * server on loopback (its keys, headers and failure modes are switchable per test). Cleans up
 * with t.after.
 *
 * Verbs (category → sub-agent): the notes test pack (test/support/notes-pack.ts: notes.count and
 * notes.enterprise_report (crm, READ), notes_add (crm, WRITE_REVERSIBLE, preview
 * notes.preview_add), notes.preview_add (crm, preview, READ), notes_charge (payments,
 * WRITE_FINANCIAL, phrase "CHARGE <n> CENTS")) plus notes.hidden (crm, not on ucp).
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { generateP256Jwk } from '../../../src/runtime/ledger/keys/keygen.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createTestRuntime, type TestRuntime } from '../../support/runtime.ts';
import { installNotesPack } from '../../support/notes-pack.ts';
import { createHttpServer, type HttpPlugin } from '../../../src/transports/http/server.ts';
import { defineVerb } from '../../../src/runtime/verb.ts';
import {
  createUcpPlugin,
  type UcpPluginOptions,
  type UcpTimings,
} from '../../../src/transports/ucp/ucp-plugin.ts';
import { exportPublicJwk, type PublicP256Jwk } from '../../../src/transports/ucp/jwk.ts';
import { signRequest, type SignRequestOptions } from '../../../src/transports/ucp/ucp-client.ts';
import { PlatformProfiles } from '../../../src/transports/ucp/platform-profiles.ts';
import type { UcpTenantSettings } from '../../../src/transports/ucp/ucp-config.ts';
import { loadSecrets } from '../../../src/runtime/secrets.ts';
import { runCli } from '../../../src/transports/cli/main.ts';

export interface PlatformKey {
  kid: string;
  privateKey: KeyObject;
  jwk: PublicP256Jwk;
}

export function newPlatformKey(kid: string): PlatformKey {
  const privateKey = createPrivateKey({ key: generateP256Jwk().privateJwk, format: 'jwk' });
  return { kid, privateKey, jwk: exportPublicJwk(privateKey, kid) };
}

/** A platform's profile served on loopback. */
export interface PlatformServer {
  url: string;
  origin: string;
  /** Keys listed in the profile (mutable). */
  keys: PlatformKey[];
  /** GET count of the profile. */
  hits: number;
  /** Override the answer: a function writing the response itself. */
  handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  cacheControl: string;
  version: string;
  close(): Promise<void>;
}

export async function startPlatform(t: TestContext, path = '/.well-known/ucp'): Promise<PlatformServer> {
  const platform: PlatformServer = {
    url: '',
    origin: '',
    keys: [newPlatformKey('platform-2026-09')],
    hits: 0,
    handler: undefined,
    cacheControl: 'public, max-age=300',
    version: '2026-08-25',
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    if (req.url !== path) {
      res.writeHead(404).end();
      return;
    }
    platform.hits++;
    if (platform.handler !== undefined) return platform.handler(req, res);
    const body = JSON.stringify({
      ucp: { version: platform.version, services: {}, capabilities: {}, payment_handlers: {} },
      keys: platform.keys.map((k) => k.jwk),
    });
    res
      .writeHead(200, { 'content-type': 'application/json', 'cache-control': platform.cacheControl })
      .end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  platform.origin = `http://127.0.0.1:${port}`;
  platform.url = `${platform.origin}${path}`;
  platform.close = () => new Promise((r) => server.close(() => r()));
  t.after(() => platform.close());
  return platform;
}

export interface UcpHarness {
  h: TestRuntime;
  app: FastifyInstance;
  /** http://127.0.0.1:<port> of the business. */
  base: string;
  platform: PlatformServer;
  profiles: PlatformProfiles;
  timings: UcpTimings[];
  /** Write settings.ucp of a tenant (default the main tenant). */
  configure(settings: UcpTenantSettings, companyId?: number): Promise<void>;
  /** Sign (with the platform's first key unless told) and POST a capability call. */
  call(capability: string, body?: unknown, options?: CallOptions): Promise<UcpResponse>;
  /** GET a path of the business. */
  get(path: string, headers?: Record<string, string>): Promise<UcpResponse>;
}

export interface CallOptions extends Partial<Omit<SignRequestOptions, 'url' | 'body'>> {
  /** Tenant prefix: `/t/<id>` (default: the root routes of the primary tenant). */
  tenant?: number;
  key?: PlatformKey;
  /** Change the signed request before sending (tampering tests). */
  tamper?: (signed: { headers: Record<string, string>; body: Buffer | undefined }) => void;
  query?: string;
  rawBody?: string;
}

export interface UcpResponse {
  status: number;
  headers: Record<string, string>;
  bytes: Uint8Array;
  text: string;
  json<T = Record<string, unknown>>(): T;
  url: string;
}

async function toResponse(res: Response, url: string): Promise<UcpResponse> {
  const bytes = new Uint8Array(await res.arrayBuffer());
  const headers: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    headers[k] = v;
  });
  const text = Buffer.from(bytes).toString('utf8');
  return { status: res.status, headers, bytes, text, json: <T>() => JSON.parse(text) as T, url };
}

export async function createUcpHarness(
  t: TestContext,
  options: UcpPluginOptions & {
    settings?: UcpTenantSettings;
    runtime?: Parameters<typeof createTestRuntime>[1];
    /** More transports mounted on the same server (the fuzz suite adds WebMCP). */
    extraPlugins?: readonly HttpPlugin[];
  } = {},
): Promise<UcpHarness> {
  const h = await createTestRuntime(t, options.runtime);
  await installNotesPack(h);
  h.rt.register(
    defineVerb({
      name: 'notes.hidden',
      description: 'Not on UCP.',
      shape: 'aggregate',
      category: 'crm',
      surfaces: ['http', 'cli'],
      input: { type: 'object', properties: {} },
      handler: async (ctx) => ({ entity_id: ctx.principal.company_id, data: {} }),
    }),
  );
  const platform = await startPlatform(t);
  const profiles =
    options.profiles ?? new PlatformProfiles({ dev: options.dev ?? true, ...options.profileFetch });
  const timings: UcpTimings[] = [];
  const plugin = createUcpPlugin({
    dev: true,
    primaryTenant: h.companyId,
    defaultNamespace: 'com.example',
    ...options,
    profiles,
    onTimings: (x) => timings.push(x),
  });
  const app = createHttpServer(h.rt, { logger: false, plugins: [plugin, ...(options.extraPlugins ?? [])] });
  t.after(() => app.close());
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const configure = async (settings: UcpTenantSettings, companyId = h.companyId) => {
    await h.rt.store.write(async (tx) => {
      const row = await tx.get<{ settings: string }>('SELECT settings FROM tenants WHERE company_id = ?', [
        companyId,
      ]);
      const current =
        typeof row!.settings === 'string'
          ? (JSON.parse(row!.settings) as Record<string, unknown>)
          : (row!.settings as Record<string, unknown>);
      await tx.run('UPDATE tenants SET settings = ? WHERE company_id = ?', [
        JSON.stringify({ ...current, ucp: settings }),
        companyId,
      ]);
    });
    h.rt.tenants.invalidate();
  };
  await configure(
    options.settings ?? {
      platforms: [{ profile: platform.url, role: 'employee', max_class: 'WRITE_REVERSIBLE' }],
    },
  );
  return {
    h,
    app,
    base,
    platform,
    profiles,
    timings,
    configure,
    async call(capability, body, o = {}) {
      const prefix = o.tenant === undefined ? '' : `/t/${o.tenant}`;
      const url = `${base}${prefix}/ucp/v1/capabilities/${capability}${o.query ?? ''}`;
      const key = o.key ?? platform.keys[0]!;
      const signed = signRequest({
        url,
        ...(o.rawBody !== undefined
          ? { body: o.rawBody }
          : body === undefined
            ? {}
            : { body: body as object }),
        profileUrl: o.profileUrl ?? platform.url,
        keyid: o.keyid ?? key.kid,
        privateKey: o.privateKey ?? key.privateKey,
        ...(o.idempotencyKey !== undefined ? { idempotencyKey: o.idempotencyKey } : {}),
        ...(o.created !== undefined ? { created: o.created } : {}),
        ...(o.expires !== undefined ? { expires: o.expires } : {}),
        ...(o.headers !== undefined ? { headers: o.headers } : {}),
        ...(o.extraComponents !== undefined ? { extraComponents: o.extraComponents } : {}),
        ...(o.label !== undefined ? { label: o.label } : {}),
      });
      o.tamper?.(signed);
      const res = await fetch(url, {
        method: 'POST',
        headers: signed.headers,
        body: signed.body === undefined ? undefined : new Uint8Array(signed.body),
      });
      return toResponse(res, url);
    },
    async get(path, headers = {}) {
      const url = `${base}${path}`;
      return toResponse(await fetch(url, { headers, redirect: 'manual' }), url);
    },
  };
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * A UCP harness on a database file with a keyfile, plus `cli(args)` running `solid --db <that
 * file> …` in-process: the CLI and the server share the database and its secrets (like
 * `solid keys` next to a running `solid serve`). The server re-reads its signing key on every
 * answer (TenantKeys.cacheTtlMs = 0; 30 s in production).
 */
export async function createSharedUcpHarness(
  t: TestContext,
  options: Parameters<typeof createUcpHarness>[1] = {},
): Promise<{ u: UcpHarness; cli: (args: string[]) => Promise<CliRun> }> {
  const dir = mkdtempSync(join(tmpdir(), 'solid-ucp-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const db = join(dir, 'solid.db');
  const { secrets } = loadSecrets({ keyfilePath: `${db}.keys.json`, create: true, env: {} });
  const u = await createUcpHarness(t, { ...options, runtime: { ...options.runtime, path: db, secrets } });
  u.h.rt.keys.cacheTtlMs = 0;
  const cli = async (args: string[]): Promise<CliRun> => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(['--db', db, ...args], {
      out: (s) => out.push(s),
      err: (s) => err.push(s),
      isTTY: false,
    });
    return { code, stdout: out.join('\n'), stderr: err.join('\n') };
  };
  return { u, cli };
}

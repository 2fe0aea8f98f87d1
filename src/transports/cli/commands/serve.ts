/**
 * `solid serve [--demo] [--conformance-pack] [--port 4400] [--host 127.0.0.1] [--db PATH]
 * [--durability full|normal] [--request-timeout-ms MS] [--shutdown-timeout-ms MS] [--body-limit BYTES] [--toolsets crm,payments] [--dynamic-toolsets] [--mcp-schema-profile NAME]
 * [--trust-proxy [value]] [--allowed-origin https://agents.example.com ...] [--metrics-port N]
 * [--rate-limit-key N] [--rate-limit-session N] [--rate-limit-address N] [--rate-limit-window S]`:
 * open the local runtime and serve every
 * HTTP-mounted transport (the agent API, OpenAPI, and whatever http-mounts.ts lists: WebMCP +
 * dashboard, MCP, UCP, the conformance declaration).
 *
 * `--conformance-pack` enables the conformance test pack on the database (remembered, like every
 * pack; spec/conformance.md §test-pack): the test-safe verbs `solid conformance --allow-writes`
 * writes with. `--demo` enables it too, so the demo passes every section of the kit.
 *
 * `--demo` creates the database when missing, enables the "demo" pack and, when the database has
 * no tenants, seeds it (the pack's seed, with progress on stderr) or — while no demo pack is
 * available — creates a sandbox tenant, a tenant and an owner key like `solid init`. Keys created
 * now are printed once. Prints the URLs, then the ready line `solid serve: ready on <url>`.
 * SIGINT/SIGTERM: close the server (in-flight requests finish; a request arriving on a kept-alive
 * connection gets a 503 `server_closing` envelope), flush the audit buffer, close the store; exit
 * 0. The shutdown is bounded: past `--shutdown-timeout-ms` (SOLID_SHUTDOWN_TIMEOUT_MS, default
 * 8000 ms) — a stalled database — it says so on stderr and exits 1. `solid agent dispatch` works on
 * the same database meanwhile (SQLite WAL).
 *
 * Time limits (docs/operations.md §time-limits): every request is answered within
 * `--request-timeout-ms` (SOLID_REQUEST_TIMEOUT_MS, default 10000; 0 = none), a 503
 * `store_unavailable` envelope at worst. Durability (SQLite) is `full` by default: a receipt
 * handed out survives a power cut; `--durability normal` is the faster, explicit choice.
 *
 * Operations (spec/transports.md §request-log §metrics §traces): one info log line per request
 * (SOLID_LOG_LEVEL, default info), `/metrics` with SOLID_METRICS_TOKEN or on `--metrics-port`,
 * OTLP traces when OTEL_EXPORTER_OTLP_ENDPOINT is set, and every audit row as an OTLP log record
 * when OTEL_EXPORTER_OTLP_LOGS_ENDPOINT (or OTEL_LOGS_EXPORTER=otlp) is set
 * (ledger/stream/otlp-logs.ts). Rate limits per API key, session and
 * client address are on by default (spec/transports.md §rate-limits; counters in the database,
 * shared by every node).
 *
 * Spec: spec/transports.md §cli-serve, §http.
 */
import type { Command } from 'commander';
import { VerbError } from '../../../runtime/errors.ts';
import type { AddressInfo } from 'node:net';
import { KNOWN_PACKS } from '../../../packs.ts';
import type { Runtime } from '../../../runtime/runtime.ts';
import type { Pack } from '../../../runtime/pack.ts';
import Fastify, { type FastifyInstance } from 'fastify';
import { createHttpServer, type HttpServerOptions } from '../../http/server.ts';
import { createMetrics, metricsRoute, type SolidMetrics } from '../../http/metrics.ts';
import { installEnvelopeErrors } from '../../http/error-handler.ts';
import { startTracing } from '../tracing.ts';
import { startOtlpAuditStream } from '../../../runtime/ledger/stream/otlp-logs.ts';
import type { TrustProxy } from '../../../identity/origin-policy.ts';
import { loadHttpMounts } from '../../server/http-mounts.ts';
import { DEFAULT_RATE_LIMITS, type RateLimits } from '../../http/rate-limit.ts';
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../../http/deadline.ts';
import { localOptionsOf, openLocal, keyfileOf, publicUrlOf } from '../local.ts';
import { enrolmentUrl } from '../../../identity/enrolment.ts';
import { ownerEnrolmentLink } from '../../../identity/invite.ts';
import { recordPublicUrl } from '../../../identity/public-url.ts';
import { tenantOfFlags } from './keys.ts';
import { resolveToolsets, ToolsetError } from '../../mcp/toolsets.ts';
import { schemaProfileFlag, toolsetFlags } from './mcp.ts';
import { isSchemaProfile, type SchemaProfile } from '../../mcp/schema-profiles.ts';
import { DECLARATION_PATH } from '../../../conformance/declaration.ts';
import type { Io } from '../output.ts';
import { countTenants } from '../../../runtime/tenants.ts';
import { AnchorPublisher, type AnchorSink } from '../../../runtime/ledger/keys/anchors.ts';
import {
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  anchorOptionsOf,
  proxyOptionsOf,
  rateLimitsOf,
  timeLimitsOf,
  externalIssuerOf,
  type ServeFlags,
} from './serve-options.ts';
import type { ExternalIssuerOptions } from '../../../oauth/external.ts';

export function registerServe(program: Command, io: Io, setExit: (code: number) => void): void {
  program
    .command('serve')
    .description(
      'Serve the HTTP API (and every mounted transport: WebMCP, dashboard, MCP, UCP) on this database',
    )
    .option('--demo', 'create and seed the demo business on first run (enables the conformance pack too)')
    .option(
      '--conformance-pack',
      'enable the test-safe verbs of `solid conformance --allow-writes` on this database (spec/conformance.md)',
    )
    .option('--port <port>', 'TCP port (0 = any free port)', process.env.PORT ?? '4400')
    .option('--host <host>', 'interface to bind', '127.0.0.1')
    .option(
      '--public-url <url>',
      "the server's public base URL, for the links it prints and pending answers' approval_url (env SOLID_PUBLIC_URL; default http://localhost:<port>)",
    )
    .option(
      '--oauth-issuer <url>',
      'trust this external OAuth authorization server (an enterprise IdP) for /mcp and the API: its JWT access tokens are accepted and the resource metadata names it (env SOLID_OAUTH_ISSUER; spec/oauth.md §external-issuer)',
    )
    .option(
      '--oauth-tenant <company_id>',
      'with --oauth-issuer: the tenant of a token without a solid_tenant claim (env SOLID_OAUTH_TENANT)',
    )
    .option(
      '--durability <mode>',
      'SQLite: full (default: synchronous=FULL, a receipt handed out survives a power cut) or normal (faster: the last commits may be lost on power loss)',
      'full',
    )
    .option(
      '--request-timeout-ms <ms>',
      `answer every request within this deadline, a 503 store_unavailable envelope at worst (0 = none; env SOLID_REQUEST_TIMEOUT_MS; default ${DEFAULT_REQUEST_TIMEOUT_MS})`,
    )
    .option(
      '--shutdown-timeout-ms <ms>',
      `on SIGTERM, exit within this bound even with a stalled database (env SOLID_SHUTDOWN_TIMEOUT_MS; default ${DEFAULT_SHUTDOWN_TIMEOUT_MS})`,
    )
    .option('--body-limit <bytes>', 'maximum request body in bytes (default 1048576)')
    .option(
      '--toolsets <names>',
      'MCP at /mcp: only these toolsets (verb categories, comma-separated; default all; env SOLID_TOOLSETS)',
    )
    .option(
      '--dynamic-toolsets',
      'MCP at /mcp: list the meta tools search_verbs, describe_verb, call_verb instead of every verb (env SOLID_DYNAMIC_TOOLSETS=1)',
    )
    .option(
      '--mcp-schema-profile <name>',
      "MCP at /mcp: input schemas in a model provider's dialect by default: default, openai-strict, gemini (a client may ask with /mcp?schema_profile=…; env SOLID_MCP_SCHEMA_PROFILE)",
    )
    .option(
      '--trust-proxy [value]',
      'behind a reverse proxy: trust X-Forwarded-* (bare = the proxy in front, or its addresses/CIDRs comma-separated; env SOLID_TRUST_PROXY)',
    )
    .option(
      '--allowed-origin <origin>',
      'allow this origin (e.g. https://agents.example.com) on the dashboard, WebMCP and MCP Origin/Host checks; repeatable (env SOLID_ALLOWED_ORIGINS, comma-separated)',
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .option(
      '--metrics-port <port>',
      'serve Prometheus /metrics on this port of --host (env SOLID_METRICS_PORT); else /metrics is on the main port only when SOLID_METRICS_TOKEN is set',
    )
    .option(
      '--rate-limit-key <n>',
      `calls per window for one API key (0 = unlimited; env SOLID_RATE_LIMIT_KEY; default ${DEFAULT_RATE_LIMITS.perKey})`,
    )
    .option(
      '--rate-limit-session <n>',
      `calls per window for one signed-in person, all their sessions (0 = unlimited; env SOLID_RATE_LIMIT_SESSION; default ${DEFAULT_RATE_LIMITS.perSession})`,
    )
    .option(
      '--rate-limit-address <n>',
      `calls per window for one client address without a valid key or session (0 = unlimited; env SOLID_RATE_LIMIT_ADDRESS; default ${DEFAULT_RATE_LIMITS.perAddress})`,
    )
    .option(
      '--rate-limit-window <seconds>',
      `rate-limit window in seconds (0 = no rate limits; env SOLID_RATE_LIMIT_WINDOW; default ${DEFAULT_RATE_LIMITS.windowMs / 1000})`,
    )
    .option(
      '--anchor-dir <dir>',
      'publish the signed checkpoint heads (anchors) into this directory, one the database owner does not control (env SOLID_ANCHOR_DIR)',
    )
    .option(
      '--anchor-url <url>',
      'POST the anchors to this HTTP endpoint (env SOLID_ANCHOR_URL; Bearer SOLID_ANCHOR_TOKEN when set)',
    )
    .option(
      '--anchor-s3 <s3://bucket/prefix>',
      'PUT the anchors as new objects into this S3(-compatible) bucket (env SOLID_ANCHOR_S3; SOLID_ANCHOR_S3_ENDPOINT, AWS_REGION and AWS credentials from the environment)',
    )
    .option('--anchor-interval <seconds>', 'seconds between anchor publications (default 300)')
    .action(async (flags: ServeFlags) => {
      setExit(await runServe(program, io, flags));
    });
}

/**
 * The HTTP server `solid serve` runs on `rt`: every transport of http-mounts.ts (MCP with the
 * given toolsets or dynamic mode), then createHttpServer with `http` (logger: rt.logger's child).
 * Not listening yet. bench/http.ts builds the same one. A mount that fails to load is reported
 * through `onMountError` and left out.
 * @throws VerbError invalid_request — from createHttpServer (a bad origin, a negative rate limit).
 */
export async function createServeApp(
  rt: Runtime,
  options: {
    onMountError: (name: string, err: unknown) => void;
    toolsets?: ReturnType<typeof resolveToolsets>;
    dynamic?: boolean;
    schemaProfile?: SchemaProfile;
    /** Keyless /mcp requests keep the sandbox instead of the OAuth 401 challenge (spec/oauth.md §resource-server). */
    keylessSandbox?: boolean;
    /** A trusted external authorization server (spec/oauth.md §external-issuer). */
    externalIssuer?: ExternalIssuerOptions;
    http: Omit<HttpServerOptions, 'plugins' | 'logger'>;
  },
): Promise<FastifyInstance> {
  const { toolsets, dynamic = false, schemaProfile } = options;
  const plugins = await loadHttpMounts(options.onMountError, {
    ...(toolsets !== undefined || dynamic || (schemaProfile !== undefined && schemaProfile !== 'default')
      ? {
          mcp: () =>
            import('../../mcp/http-plugin.ts').then((m) =>
              m.createMcpHttpPlugin({ toolsets, dynamic, schemaProfile }),
            ),
        }
      : {}),
    oauth: () =>
      import('../../../oauth/plugin.ts').then((m) =>
        m.createOAuthPlugin({
          keylessSandbox: options.keylessSandbox === true,
          ...(options.externalIssuer !== undefined ? { externalIssuer: options.externalIssuer } : {}),
          proxy: options.http.trustProxy !== undefined && options.http.trustProxy !== false,
        }),
      ),
  });
  return createHttpServer(rt, { ...options.http, plugins });
}

/** Run the server until SIGINT/SIGTERM; resolves to the exit code. */
export async function runServe(program: Command, io: Io, flags: ServeFlags): Promise<number> {
  const port = Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    return usage(io, '--port must be an integer 0..65535');
  if (flags.durability !== 'normal' && flags.durability !== 'full')
    return usage(io, '--durability must be normal or full');
  let limits: { requestTimeoutMs: number; shutdownTimeoutMs: number };
  try {
    limits = timeLimitsOf(flags, process.env);
  } catch (err) {
    if (!(err instanceof VerbError)) throw err;
    return usage(io, `${err.message} ${err.hint ?? ''}`.trim());
  }
  const bodyLimit = flags.bodyLimit === undefined ? undefined : Number(flags.bodyLimit);
  if (bodyLimit !== undefined && (!Number.isInteger(bodyLimit) || bodyLimit < 1))
    return usage(io, '--body-limit must be a positive integer (bytes)');

  let proxy: { trustProxy: TrustProxy; allowedOrigins: string[] };
  try {
    proxy = proxyOptionsOf(flags, process.env);
  } catch (err) {
    if (!(err instanceof VerbError)) throw err;
    return usage(io, `${err.message} ${err.hint ?? ''}`.trim());
  }

  let configuredPublicUrl: string | undefined;
  try {
    configuredPublicUrl = publicUrlOf(flags.publicUrl) ?? publicUrlOf(process.env.SOLID_PUBLIC_URL);
  } catch (err) {
    if (!(err instanceof VerbError)) throw err;
    return usage(io, `${err.message} ${err.hint ?? ''}`.trim());
  }

  // The public URL people are sent to is a configured origin of the browser routes (DNS
  // rebinding: only configured names, localhost and IP literals pass; spec/transports.md §webmcp-csrf).
  if (configuredPublicUrl !== undefined) {
    const publicOrigin = new URL(configuredPublicUrl).origin;
    if (!proxy.allowedOrigins.includes(publicOrigin)) proxy.allowedOrigins.push(publicOrigin);
  }

  let externalIssuer: ExternalIssuerOptions | undefined;
  try {
    externalIssuer = externalIssuerOf(flags, process.env);
  } catch (err) {
    if (!(err instanceof VerbError)) throw err;
    return usage(io, `${err.message} ${err.hint ?? ''}`.trim());
  }

  let rateLimits: RateLimits;
  try {
    rateLimits = rateLimitsOf(flags, process.env);
  } catch (err) {
    if (!(err instanceof VerbError)) throw err;
    return usage(io, `${err.message} ${err.hint ?? ''}`.trim());
  }

  const demo = flags.demo === true;
  const demoPack = demo && KNOWN_PACKS.demo !== undefined;
  const packs = demoPack ? ['demo'] : [];
  if (demo || flags.conformancePack === true) packs.push('conformance');
  if (demoPack) packs.push('integrations'); // the demo's integrations category (connectors/payments/demo.ts)
  let metricsPort: number | undefined;
  if (flags.metricsPort !== undefined || (process.env.SOLID_METRICS_PORT ?? '') !== '') {
    metricsPort = Number(flags.metricsPort ?? process.env.SOLID_METRICS_PORT);
    if (!Number.isInteger(metricsPort) || metricsPort < 0 || metricsPort > 65535)
      return usage(io, '--metrics-port (SOLID_METRICS_PORT) must be an integer 0..65535');
  }
  const metricsToken = process.env.SOLID_METRICS_TOKEN ?? '';
  if (metricsToken !== '' && metricsToken.length < 16)
    return usage(io, 'SOLID_METRICS_TOKEN must be at least 16 characters (a random secret).');

  let anchorSinks: AnchorSink[];
  let anchorIntervalMs: number;
  try {
    ({ sinks: anchorSinks, intervalMs: anchorIntervalMs } = anchorOptionsOf(flags, process.env));
  } catch (err) {
    if (!(err instanceof VerbError)) throw err;
    return usage(io, `${err.message} ${err.hint ?? ''}`.trim());
  }

  const local = await openLocal({
    ...localOptionsOf(program),
    // A server logs one line per request at info (spec/transports.md §request-log).
    logLevel: process.env.SOLID_LOG_LEVEL || 'info',
    create: demo,
    durability: flags.durability,
    packs,
  });
  const { rt } = local;
  let finished = false;
  let app: ReturnType<typeof createHttpServer> | undefined;
  let metricsApp: ReturnType<typeof createHttpServer> | undefined;
  const stopTracing = await startTracing(process.env, rt.logger);
  const auditStream = await startOtlpAuditStream(process.env, {
    store: rt.store,
    logger: rt.logger,
    clock: rt.clock,
  });
  const metrics = metricsToken !== '' || metricsPort !== undefined ? createMetrics(rt) : undefined;
  const anchors = new AnchorPublisher(rt.store, anchorSinks, {
    clock: rt.clock,
    logger: rt.logger,
    intervalMs: anchorIntervalMs,
  });
  try {
    if (demo) await seedIfEmpty(rt, local.packs, io, local.dbPath);
    if (demoPack) await seedDemoIntegrations(rt, io);
    // Seeding writes audit rows outside the dispatch path (the vault's sandbox key): sign every
    // chain this start moved now, so a crash in the next minute leaves none without a checkpoint.
    if (demo || demoPack) await rt.checkpoints.checkpointAll();
    const mcp = toolsetFlags(flags);
    const schemaProfile = schemaProfileFlag(flags.mcpSchemaProfile);
    if (!isSchemaProfile(schemaProfile)) return usage(io, schemaProfile);
    let toolsets;
    try {
      toolsets = resolveToolsets(rt, mcp.toolsets);
    } catch (err) {
      if (!(err instanceof ToolsetError)) throw err;
      return usage(io, err.message);
    }
    app = await createServeApp(rt, {
      onMountError: (name, err) => io.err(`! transport ${name} not mounted: ${(err as Error).message}`),
      toolsets,
      dynamic: mcp.dynamic,
      schemaProfile,
      // The demo keeps keyless sandbox reads on /mcp; otherwise a connector gets the OAuth challenge.
      keylessSandbox: demo || process.env.SOLID_KEYLESS_SANDBOX === '1',
      ...(externalIssuer !== undefined ? { externalIssuer } : {}),
      http: {
        trustProxy: proxy.trustProxy,
        allowedOrigins: proxy.allowedOrigins,
        rateLimits,
        requestTimeoutMs: limits.requestTimeoutMs,
        ...(bodyLimit !== undefined ? { bodyLimitBytes: bodyLimit } : {}),
        ...(metrics !== undefined && metricsToken !== ''
          ? { metrics: { metrics, token: metricsToken } }
          : {}),
      },
    });
    try {
      await app.listen({ port, host: flags.host });
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
        throw new VerbError(
          'invalid_request',
          `Cannot listen on ${flags.host}:${port}: ${code === 'EADDRINUSE' ? 'the port is already in use' : code === 'EACCES' ? 'permission denied' : 'the address is not available here'}.`,
          {
            hint:
              code === 'EADDRINUSE'
                ? 'Another solid serve (or program) uses it: pass --port <other>, or --port 0 for any free port.'
                : 'Pass --host 127.0.0.1 and a port above 1024.',
          },
        );
      }
      throw err;
    }
    if (metrics !== undefined && metricsPort !== undefined) {
      // Its own listener, same interface: scraped without a token unless one is set.
      metricsApp = await listenMetrics(metrics, flags.host, metricsPort, metricsToken);
    }
    const addr = app.server.address() as AddressInfo;
    const shownHost =
      addr.address === '0.0.0.0' || addr.address === '::'
        ? 'localhost'
        : addr.family === 'IPv6'
          ? `[${addr.address}]`
          : addr.address;
    const base = `http://${shownHost}:${addr.port}`;
    // Links a human opens use a host name: WebAuthn refuses an IP address as relying party, and
    // the session cookie belongs to the host the browser was given. spec/consent.md §approval-page
    // It is also the OAuth issuer and the MCP URL printed for connectors: one origin for the whole
    // OAuth flow (RFC 8414 §3.3 compares the issuer exactly; spec/oauth.md §authorization-server).
    const publicBase = configuredPublicUrl ?? `http://localhost:${addr.port}`;
    rt.options.publicUrl = publicBase;
    await recordPublicUrl(rt.store, publicBase);
    const lines = [
      `  API        ${base}/api/v1/agent/verbs  (POST ${base}/api/v1/agent/dispatch/{verb})`,
      `  OpenAPI    ${base}/openapi.json`,
    ];
    if (app.hasRoute({ method: 'GET', url: '/' }))
      lines.push(
        `  Dashboard  ${publicBase}/          (sign in with your passkey; approvals: ${publicBase}/approvals/<id>)`,
      );
    if (app.hasRoute({ method: 'GET', url: '/webmcp.js' })) lines.push(`  WebMCP     ${base}/webmcp.js`);
    if (app.hasRoute({ method: 'POST', url: '/mcp' }))
      lines.push(
        `  MCP        ${publicBase}/mcp       (Streamable HTTP; \`solid mcp\` serves stdio)${mcpMode(toolsets?.names, mcp.dynamic)}`,
      );
    if (app.hasRoute({ method: 'GET', url: '/.well-known/ucp' }))
      lines.push(`  UCP        ${base}/.well-known/ucp`);
    if (local.packs.some((p) => p.name === 'conformance'))
      lines.push(
        `  Conformance ${base}${DECLARATION_PATH}  (solid conformance ${base} --api-key <key> --allow-writes)`,
      );
    if (metricsApp !== undefined) {
      const m = metricsApp.server.address() as AddressInfo;
      lines.push(`  Metrics    http://${shownHost}:${m.port}/metrics`);
    } else if (metrics !== undefined)
      lines.push(`  Metrics    ${base}/metrics  (Bearer SOLID_METRICS_TOKEN)`);
    lines.push(`  database   ${local.dbPath}`, `  health     ${base}/healthz  ${base}/readyz`);
    if (app.hasRoute({ method: 'GET', url: '/enrol/:token' })) {
      const enrol = await ownerLinkLine(rt, publicBase);
      if (enrol !== undefined) lines.push(enrol);
    }
    io.out(lines.join('\n'));
    // The handlers go in before the ready line: a supervisor (or a test) that stops the server as
    // soon as it reads "ready" must find SIGTERM handled, not the default action (killed, no flush).
    const stopSignal = untilSignal(io);
    if (anchorSinks.length > 0) {
      void anchors.publishNow();
      anchors.start();
    }
    io.out(`solid serve: ready on ${base}`);
    const signal = await stopSignal;
    io.err(`solid serve: ${signal}, shutting down`);
    boundShutdown(io, limits.shutdownTimeoutMs, () => finished);
    local.rt.beginClose(); // open long polls answer now; then in-flight requests finish
    await app.close();
    app = undefined;
    if (anchorSinks.length > 0) {
      // The last heads, signed now, go out before the store closes.
      await rt.checkpoints.checkpointAll();
      await anchors.stop();
      await anchors.publishNow();
    }
    if (metricsApp !== undefined) await metricsApp.close();
    metricsApp = undefined;
    metrics?.close();
    await stopTracing?.();
    await auditStream?.close();
    await local.close();
    io.err('solid serve: stopped');
    finished = true;
    return 0;
  } finally {
    await anchors.stop();
    if (app !== undefined) await app.close().catch(() => {});
    if (metricsApp !== undefined) await metricsApp.close().catch(() => {});
    metrics?.close();
    await stopTracing?.();
    await auditStream?.close();
    await local.close().catch(() => {});
  }
}

/** `GET /metrics` alone on its own port (`--metrics-port`); the token is asked only when set. */
async function listenMetrics(
  metrics: SolidMetrics,
  host: string,
  port: number,
  token: string,
): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  installEnvelopeErrors(app);
  await app.register(metricsRoute, { metrics, ...(token !== '' ? { token } : {}) });
  try {
    await app.listen({ port, host });
  } catch (err) {
    await app.close().catch(() => {});
    throw new VerbError(
      'invalid_request',
      `Cannot listen for metrics on ${host}:${port}: ${(err as { code?: string }).code ?? (err as Error).message}.`,
      {
        hint: 'Pass another --metrics-port (0 = any free port).',
      },
    );
  }
  return app as unknown as FastifyInstance;
}

/** " toolsets: crm, payments; dynamic" for the MCP line, when not the defaults. */
function mcpMode(toolsets: readonly string[] | undefined, dynamic: boolean): string {
  const parts = [
    ...(toolsets !== undefined ? [`toolsets: ${toolsets.join(', ')}`] : []),
    ...(dynamic ? ['dynamic toolsets'] : []),
  ];
  return parts.length > 0 ? ` [${parts.join('; ')}]` : '';
}

function usage(io: Io, message: string): number {
  io.err(`✗ ${message}`);
  return 2;
}

/**
 * Bound the shutdown that starts now: `ms` later, if the process is still alive (a stalled
 * database holds a connection, a request or a socket), exit — 0 when the shutdown itself
 * `finished()` (only a dangling handle was left), else 1 with a line on stderr. The timer is
 * unref'd: it never delays a process that exits by itself.
 */
function boundShutdown(io: Io, ms: number, finished: () => boolean): void {
  const timer = setTimeout(() => {
    if (finished()) process.exit(0);
    io.err(`solid serve: shutdown not finished within ${ms} ms (a stalled database?); exiting now`);
    process.exit(1);
  }, ms);
  timer.unref();
}

/** Resolve on the first SIGINT/SIGTERM; a second one exits at once (stuck shutdown). */
function untilSignal(io: Io): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let got = false;
    const on = (sig: NodeJS.Signals) => {
      if (got) {
        io.err(`solid serve: second ${sig}, exiting now`);
        process.exit(1);
      }
      got = true;
      resolve(sig);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

/**
 * The owner's enrolment line while the first tenant's owner has no human credential (a fresh
 * one-time link each start, so the demo stays two commands); undefined once they enrolled, or
 * when the database has no tenant. spec/consent.md §human-sign-in
 */
async function ownerLinkLine(rt: Runtime, publicBase: string): Promise<string | undefined> {
  let companyId: number;
  try {
    companyId = await tenantOfFlags(rt, undefined);
  } catch {
    return undefined;
  }
  const made = await ownerEnrolmentLink(rt.store, companyId, rt.clock());
  if (made === undefined) return undefined;
  return [
    `  Enrol      ${enrolmentUrl(publicBase, made.link.token)}`,
    `             (the owner's one-time link, until ${made.link.expires_at}: open it and register a passkey,`,
    `              then approve agents' charges on the approval page; a fresh link each start until you enrol)`,
  ].join('\n');
}

/** The demo's integrations: a sandbox key in each tenant's vault lacking one, and where calls go. */
async function seedDemoIntegrations(rt: Runtime, io: Io): Promise<void> {
  const { seedSandboxCredential, demoUsesSandbox } = await import('../../../connectors/payments/demo.ts');
  const seeded = await seedSandboxCredential(rt);
  if (demoUsesSandbox())
    io.err(
      `  integrations: SANDBOX payments provider in this process (127.0.0.1, no money)${seeded.length > 0 ? `; sandbox key stored in the vault of tenant(s) ${seeded.join(', ')}` : ''}. Set SOLID_PAYMENTS_PROVIDER_URL for a real one.`,
    );
}

/**
 * First run of `--demo`: when the database has no tenants, run the demo pack's seed (progress on
 * stderr) and print the facts it returns, or create sandbox + tenant + owner key like `solid init`.
 */
async function seedIfEmpty(rt: Runtime, packs: readonly Pack[], io: Io, dbPath: string): Promise<void> {
  const count = await rt.store.read((q) => countTenants(q));
  const pack = packs.find((p) => p.name === 'demo' && p.seed !== undefined);
  if (pack !== undefined && count > 0) {
    // Not the first run — or a first run that was interrupted: the seed is idempotent and
    // finishes what is missing (data, or the keys), else says how to get a key.
    const facts = await pack.seed!(rt, {});
    if (facts.seeded === false && facts.owner_api_key === undefined) {
      if (typeof facts.hint === 'string') io.err(`  ${facts.hint}`);
      return;
    }
    io.out(`✓ completed the demo business in ${dbPath}`);
    for (const [k, v] of Object.entries(facts))
      io.out(`  ${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
    return;
  }
  if (count > 0) return;
  if (pack !== undefined) {
    io.err('Seeding the demo business (first run)…');
    let last = -1;
    const facts = await pack.seed!(rt, {
      onProgress(done, total) {
        const pct = total > 0 ? Math.floor((done * 100) / total) : 100;
        if (pct === last) return;
        last = pct;
        const width = 30;
        const bar = '█'.repeat(Math.round((pct * width) / 100)).padEnd(width, '░');
        if (process.stderr.isTTY) process.stderr.write(`\r  ${bar} ${String(pct).padStart(3)}%`);
        else if (pct % 25 === 0) io.err(`  seeded ${pct}%`);
      },
    });
    if (process.stderr.isTTY && last >= 0) process.stderr.write('\n');
    io.out(`✓ seeded the demo business in ${dbPath}`);
    for (const [k, v] of Object.entries(facts))
      io.out(`  ${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
    return;
  }
  await rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
  const t = await rt.createTenant({ name: 'Demo Company', tier: 'professional' });
  const key = await rt.createApiKey({
    company_id: t.company_id,
    user_id: 1,
    role: 'owner',
    agent_type: 'cli',
    name: 'owner (solid serve --demo)',
  });
  io.out(
    [
      `✓ created ${dbPath} (secrets: ${keyfileOf(dbPath)})`,
      `  tenant ${t.company_id} "${t.name}" (${t.tier}) and a sandbox tenant (1) for keyless reads`,
      `  owner API key (shown once, store it now):`,
      `  ${key}`,
      `  export SOLID_API_KEY=${key}`,
    ].join('\n'),
  );
}

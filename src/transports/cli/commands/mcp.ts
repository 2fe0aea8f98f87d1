/**
 * `solid mcp [--db PATH] [--refresh-seconds 300] [--toolsets crm,payments] [--dynamic-toolsets]
 * [--max-frame-bytes 1048576] [--schema-profile default|openai-strict|gemini]`
 * (also `npx solid-verbs mcp`): serve this database's verbs as MCP tools over stdio, for Claude
 * Desktop, Cursor and other MCP hosts. --toolsets / SOLID_TOOLSETS: only those verb categories
 * (an unknown name exits 2 listing the valid ones); --dynamic-toolsets / SOLID_DYNAMIC_TOOLSETS=1:
 * three meta tools instead of every verb (spec/transports.md §mcp-toolsets, §mcp-dynamic).
 * --schema-profile / SOLID_MCP_SCHEMA_PROFILE: input schemas in a model provider's dialect
 * (§mcp-schema-profiles).
 *
 * stdout carries only JSON-RPC; every log line goes to stderr. Credentials: SOLID_API_KEY (reads
 * without a key run on the sandbox tenant; writes need a key). The database path comes from
 * --db or SOLID_DB. SOLID_DASHBOARD_URL (optional) names the dashboard whose approvals page the
 * out-of-band approval hint points to. The process exits when the client closes stdin (or on SIGINT/SIGTERM).
 * Every refresh interval the packs the database serves are re-read, so a pack enabled meanwhile
 * (e.g. by `solid serve --demo`) reaches the client as notifications/tools/list_changed.
 *
 * With `--url` / SOLID_API_URL it is instead the thin bridge to a running `solid serve`
 * (../remote-mcp.ts, ../../../remote-client/mcp-bridge.ts; client configuration: docs/remote.md).
 *
 * Spec: spec/transports.md §mcp-stdio, §remote-mcp. Client configuration: docs/mcp.md.
 */
import { approvalDecidedIn } from '../../mcp/consent-elicitation.ts';
import type { Command } from 'commander';
import { KNOWN_PACKS } from '../../../packs.ts';
import { installPack, type Pack } from '../../../runtime/pack.ts';
import type { Runtime } from '../../../runtime/runtime.ts';
import { serveStdio, DEFAULT_REFRESH_MS } from '../../mcp/stdio.ts';
import { resolveToolsets, ToolsetError } from '../../mcp/toolsets.ts';
import { MAX_STDIO_FRAME_BYTES } from '../../mcp/stdio-frame-guard.ts';
import { isSchemaProfile, SCHEMA_PROFILES, type SchemaProfile } from '../../mcp/schema-profiles.ts';
import { localOptionsOf, openLocal, type Local } from '../local.ts';
import { remoteUrlOf } from '../target.ts';
import type { Io } from '../output.ts';
import { readServedPacks } from '../../../runtime/served-packs.ts';

export function registerMcp(program: Command, io: Io, setExit: (code: number) => void): void {
  program
    .command('mcp')
    .description(
      'Serve the verbs as MCP tools over stdio (Claude Desktop, Cursor…); SOLID_API_KEY for writes; logs on stderr',
    )
    .option(
      '--refresh-seconds <seconds>',
      'how often to re-read the verbs the database serves',
      String(DEFAULT_REFRESH_MS / 1000),
    )
    .option(
      '--toolsets <names>',
      'only these toolsets (verb categories, comma-separated, e.g. crm,payments; default all; env SOLID_TOOLSETS)',
    )
    .option(
      '--max-frame-bytes <bytes>',
      'largest JSON-RPC message on stdin, in bytes (default 1048576, the HTTP body limit; at most 10485760; env SOLID_MAX_FRAME_BYTES)',
    )
    .option(
      '--dynamic-toolsets',
      'list three meta tools (search_verbs, describe_verb, call_verb) instead of every verb (env SOLID_DYNAMIC_TOOLSETS=1)',
    )
    .option(
      '--schema-profile <name>',
      `input schemas in a model provider's dialect: ${SCHEMA_PROFILES.join(', ')} (default default; env SOLID_MCP_SCHEMA_PROFILE)`,
    )
    .action(async (flags: McpFlags) => {
      setExit(await runMcpStdio(program, io, flags));
    });
}

export interface McpFlags {
  refreshSeconds: string;
  toolsets?: string;
  dynamicToolsets?: boolean;
  maxFrameBytes?: string;
  schemaProfile?: string;
}

/**
 * The served schema profile of `solid mcp --schema-profile` / `solid serve --mcp-schema-profile`,
 * over SOLID_MCP_SCHEMA_PROFILE; a string (the usage error) for an unknown name.
 * Spec: spec/transports.md §mcp-schema-profiles.
 */
export function schemaProfileFlag(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): SchemaProfile | string {
  const name = (flag ?? env.SOLID_MCP_SCHEMA_PROFILE ?? '').trim() || 'default';
  return isSchemaProfile(name)
    ? name
    : `unknown schema profile "${name}": use one of ${SCHEMA_PROFILES.join(', ')}`;
}

/**
 * The toolset options of `solid mcp` / `solid serve`: --toolsets over SOLID_TOOLSETS, and
 * --dynamic-toolsets or SOLID_DYNAMIC_TOOLSETS (1/true/yes). Spec: spec/transports.md §mcp-toolsets.
 */
export function toolsetFlags(
  flags: { toolsets?: string; dynamicToolsets?: boolean },
  env: NodeJS.ProcessEnv = process.env,
): { toolsets: string | undefined; dynamic: boolean } {
  const envDynamic = (env.SOLID_DYNAMIC_TOOLSETS ?? '').trim().toLowerCase();
  return {
    toolsets: flags.toolsets ?? (env.SOLID_TOOLSETS?.trim() ? env.SOLID_TOOLSETS : undefined),
    dynamic: flags.dynamicToolsets === true || ['1', 'true', 'yes'].includes(envDynamic),
  };
}

/** Serve MCP on the process's stdin/stdout until stdin closes; resolves to the exit code. */
export async function runMcpStdio(program: Command, io: Io, flags: McpFlags): Promise<number> {
  const seconds = Number(flags.refreshSeconds);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    io.err('✗ --refresh-seconds must be a positive number');
    return 2;
  }
  const { toolsets, dynamic } = toolsetFlags(flags);
  const schemaProfile = schemaProfileFlag(flags.schemaProfile);
  if (!isSchemaProfile(schemaProfile)) {
    io.err(`✗ ${schemaProfile}`);
    return 2;
  }
  const frameFlag = flags.maxFrameBytes ?? process.env.SOLID_MAX_FRAME_BYTES;
  const maxFrameBytes = frameFlag === undefined || frameFlag.trim() === '' ? undefined : Number(frameFlag);
  if (
    maxFrameBytes !== undefined &&
    (!Number.isInteger(maxFrameBytes) || maxFrameBytes < 1 || maxFrameBytes > MAX_STDIO_FRAME_BYTES)
  ) {
    io.err(`✗ --max-frame-bytes must be an integer from 1 to ${MAX_STDIO_FRAME_BYTES}`);
    return 2;
  }
  const url = remoteUrlOf(program);
  if (url !== undefined) {
    if (toolsets !== undefined || dynamic) {
      io.err(
        '✗ --toolsets and --dynamic-toolsets apply to a local database; the bridge (--url) lists what the server serves. Start `solid serve --toolsets …` there instead.',
      );
      return 2;
    }
    return (await import('../remote-mcp.ts')).runRemoteMcp(
      url,
      io,
      Math.round(seconds * 1000),
      schemaProfile,
    );
  }
  const local = await openLocal(localOptionsOf(program));
  try {
    let selection;
    try {
      selection = resolveToolsets(local.rt, toolsets);
    } catch (err) {
      if (!(err instanceof ToolsetError)) throw err;
      io.err(`✗ ${err.message}`);
      return 2;
    }
    const served = await serveStdio(local.rt, {
      toolsets: selection,
      dynamic,
      schemaProfile,
      apiKey: process.env.SOLID_API_KEY ?? null,
      refresh: () => refreshPacks(local),
      refreshMs: Math.round(seconds * 1000),
      approvalUrl: dashboardApprovals(process.env.SOLID_DASHBOARD_URL),
      // URL-mode elicitation opens the approval page (SOLID_PUBLIC_URL) and completes the call
      // once a human decided there. spec/consent.md §approval-page
      approvalDecided: approvalDecidedIn(local.rt.store, local.rt.clock),
      ...(maxFrameBytes !== undefined ? { maxFrameBytes } : {}),
    });
    const onSignal = () => void served.close();
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    await served.closed;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  } finally {
    await local.close();
  }
  // Safety net against zombie servers (typescript-sdk#2002): if anything still holds the event
  // loop open after a clean shutdown, leave anyway. Unref'd: it never delays a normal exit.
  setTimeout(() => process.exit(process.exitCode ?? 0), 1000).unref();
  return 0;
}

/** `SOLID_DASHBOARD_URL` (e.g. http://127.0.0.1:4400, where `solid serve` runs) → its approvals page, for hints. */
function dashboardApprovals(base: string | undefined): ((approvalId: string) => string) | undefined {
  if (base === undefined || base.trim() === '') return undefined;
  const root = base.trim().replace(/\/+$/, '');
  return (approvalId) => `${root}/approvals/${encodeURIComponent(approvalId)}`;
}

/**
 * Re-read the packs the database serves (runtime_meta "packs") and register the verbs of packs
 * enabled since startup; unregister the verbs of packs no longer listed (never the packs this
 * process brought with --pack or its config file). The same steps as
 * openLocal (local.ts) for a pack: migrations, domain reasons, verbs, outbox handlers.
 */
export async function refreshPacks(local: Local): Promise<void> {
  const rt = local.rt;
  const wanted = new Set(await readPackNames(rt));
  for (const name of wanted) {
    if (local.packs.some((p) => p.name === name)) continue;
    const load = KNOWN_PACKS[name];
    if (load === undefined) continue;
    const pack = await load();
    await installPack(rt, pack);
    local.packs.push(pack);
    rt.logger.info({ pack: name }, 'mcp: pack enabled on the database; its verbs are now served');
  }
  for (const pack of [...local.packs]) {
    if (wanted.has(pack.name) || local.ownPacks.has(pack.name)) continue;
    for (const v of pack.verbs) rt.registry.unregister(v.name);
    local.packs.splice(local.packs.indexOf(pack as Pack), 1);
    rt.logger.info({ pack: pack.name }, 'mcp: pack no longer served by the database; its verbs were removed');
  }
}

function readPackNames(rt: Runtime): Promise<string[]> {
  return readServedPacks(rt.store);
}

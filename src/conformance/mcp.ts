/**
 * The kit's MCP client (@modelcontextprotocol/sdk): a Streamable HTTP URL (with the API key as a
 * Bearer token), a stdio command line, or a transport given by a program. A stdio command runs
 * with the user's environment (process.env), the run's `mcpEnv`, and SOLID_API_KEY set to the
 * run's key, so `--mcp "solid mcp"` reaches the same database as the server when SOLID_DB (or
 * SOLID_DATABASE_URL) is set as for the server. Its stderr is kept (last lines) for evidence, never
 * printed. Every call counts against the run's budget and has the per-request timeout.
 * Spec: spec/conformance.md §mcp.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Budget } from './http.ts';
import type { McpTarget } from './types.ts';

/** Split a command line like a POSIX shell would (quotes and backslashes; no expansion). */
export function splitCommand(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else cur += c;
      continue;
    }
    if (quote === '"') {
      if (c === '"') quote = undefined;
      else if (c === '\\' && i + 1 < line.length && '"\\$`'.includes(line[i + 1]!)) cur += line[++i];
      else cur += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < line.length) {
      cur += line[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) out.push(cur);
      cur = '';
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (quote !== undefined) throw new Error(`unterminated ${quote} quote in the --mcp command`);
  if (inWord) out.push(cur);
  return out;
}

/** A connected MCP client and how it was reached. */
export interface KitMcp {
  client: Client;
  /** `stdio: solid mcp`, `http: http://…/mcp`, or the program's label. */
  label: string;
  /** The last lines the stdio server wrote to stderr. */
  stderrTail(): string;
  listAllTools(): Promise<Tool[]>;
  callTool(
    name: string,
    args: Record<string, unknown>,
    meta?: Record<string, unknown>,
  ): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

/** Describe a target for reports (never the key). */
export function mcpLabel(target: McpTarget): string {
  if (typeof target !== 'string') return target.label ?? 'a program-supplied transport';
  return /^https?:\/\//i.test(target.trim()) ? `http: ${target.trim()}` : `stdio: ${target.trim()}`;
}

/** Connect (initialize) to the MCP server of a run. */
export async function connectMcp(
  target: McpTarget,
  options: { apiKey?: string; env?: Record<string, string>; budget: Budget },
): Promise<KitMcp> {
  const label = mcpLabel(target);
  const tail: string[] = [];
  let transport: Transport;
  if (typeof target !== 'string') {
    transport = await target.transport();
  } else if (/^https?:\/\//i.test(target.trim())) {
    transport = new StreamableHTTPClientTransport(new URL(target.trim()), {
      requestInit: options.apiKey ? { headers: { authorization: `Bearer ${options.apiKey}` } } : {},
    });
  } else {
    const [command, ...args] = splitCommand(target);
    if (command === undefined) throw new Error('the --mcp command is empty');
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
    Object.assign(env, options.env ?? {});
    if (options.apiKey !== undefined) env.SOLID_API_KEY = options.apiKey;
    const stdio = new StdioClientTransport({ command, args, env, stderr: 'pipe' });
    stdio.stderr?.on('data', (chunk: Buffer) => {
      tail.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l.trim() !== ''),
      );
      if (tail.length > 20) tail.splice(0, tail.length - 20);
    });
    transport = stdio;
  }
  const client = new Client({ name: 'solid-verbs-conformance', version: '1' }, { capabilities: {} });
  const connectMs = Math.max(options.budget.timeoutMs, 30_000);
  options.budget.take();
  try {
    await client.connect(transport, { timeout: connectMs });
  } catch (err) {
    await transport.close().catch(() => {});
    // Give the child's last stderr lines a moment to arrive (they usually say why it stopped).
    await new Promise((r) => setTimeout(r, 50));
    const e = err as NodeJS.ErrnoException & { cause?: { code?: string; message?: string } };
    let why = e.message;
    if (e.code === 'ENOENT' && typeof target === 'string')
      why = `the command ${JSON.stringify(splitCommand(target)[0])} was not found (${e.message})`;
    else if (e.cause?.code !== undefined) why = `${e.message} (${e.cause.code})`;
    const stderr = tail.slice(-5).join(' | ');
    throw new Error(`${why}${stderr !== '' ? `; its stderr: ${stderr}` : ''}`, { cause: err });
  }
  const requestOptions = () => ({ timeout: options.budget.take() });
  return {
    client,
    label,
    stderrTail: () => tail.join('\n'),
    async listAllTools() {
      const out: Tool[] = [];
      let cursor: string | undefined;
      const seen = new Set<string>();
      do {
        const page = await client.listTools(cursor === undefined ? {} : { cursor }, requestOptions());
        out.push(...page.tools);
        cursor = page.nextCursor;
        if (cursor !== undefined && seen.has(cursor))
          throw new Error(`tools/list repeated the cursor ${cursor}`);
        if (cursor !== undefined) seen.add(cursor);
      } while (cursor !== undefined);
      return out;
    },
    async callTool(name, args, meta) {
      return (await client.callTool(
        { name, arguments: args, ...(meta !== undefined ? { _meta: meta } : {}) },
        undefined,
        requestOptions(),
      )) as Record<string, unknown>;
    },
    async close() {
      await client.close().catch(() => {});
    },
  };
}

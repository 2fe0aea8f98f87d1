/**
 * MCP test helpers shared by the MCP transport and remote-mode suites: every tool across
 * tools/list pages, and the `mcpServers` entries of a document's JSON snippets (docs tests run
 * them as a user would paste them).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { jsonResultOf } from '../../src/transports/mcp/envelope-map.ts';

/** Every tool the server lists, following nextCursor. */
export async function listAllTools(client: Client): Promise<Tool[]> {
  const out: Tool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    out.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return out;
}

/** One `mcpServers` entry of a client configuration (stdio: command/args/env; HTTP: url/headers). */
export interface ServerEntry {
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  url?: string;
  headers?: Record<string, string>;
}

/** The `mcpServers` entries of every ```json block of `doc` that has them. */
export function mcpServerSnippets(doc: string): ServerEntry[] {
  const out: ServerEntry[] = [];
  for (const m of doc.matchAll(/```json\n([\s\S]*?)```/g)) {
    const parsed = JSON.parse(m[1]!) as { mcpServers?: Record<string, ServerEntry> };
    if (parsed.mcpServers) out.push(...Object.values(parsed.mcpServers));
  }
  return out;
}

/**
 * The verb result a successful tool result carries: its one text block, parsed (our answers have
 * no structuredContent, spec/transports.md §mcp-results); undefined for an isError result.
 */
export function resultOf(r: unknown): unknown {
  return jsonResultOf(r as { isError?: boolean; content?: unknown });
}

/**
 * Browser entry of the MCP-B client the bridge test runs in a page (bundled by esbuild in the
 * test, served from the page's own origin so the page's CSP allows it): @mcp-b/transports'
 * TabClientTransport, the transport MCP-B clients use to reach @mcp-b/global in a tab, with the
 * official MCP client. `window.mcpbClient.listTools()` / `.callTool(name, args)` answer what the
 * bridge's MCP server answers.
 */
import { TabClientTransport } from '@mcp-b/transports';
import { Client } from '@modelcontextprotocol/client';

let connected: Promise<Client> | undefined;

function client(): Promise<Client> {
  connected ??= (async () => {
    const c = new Client({ name: 'solid-verbs-bridge-test', version: '1.0.0' });
    await c.connect(new TabClientTransport({ targetOrigin: location.origin }));
    return c;
  })();
  return connected;
}

(window as unknown as { mcpbClient: unknown }).mcpbClient = {
  async listTools() {
    return (await (await client()).listTools()).tools;
  },
  async callTool(name: string, args: Record<string, unknown>) {
    return (await client()).callTool({ name, arguments: args });
  },
};

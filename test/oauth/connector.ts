/**
 * A connector's side of the OAuth dance, as hosted connectors (Claude.ai, ChatGPT) run it, with the
 * MCP SDK client's own OAuth support: an in-memory client provider, and the whole dance from the
 * 401 challenge to a connected client (the human's consent done by fixture.ts).
 */
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { humanConsents, type ConsentChoice, type OAuthFixture } from './fixture.ts';

/** An OAuth client provider as a connector keeps one: in memory; the redirect is captured. */
export class MemoryProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  readonly redirectUrl = 'http://127.0.0.1:9/callback';
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Test Connector',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(i: OAuthClientInformationMixed) {
    this.info = i;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(t: OAuthTokens) {
    this.saved = t;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** Run the whole dance; returns the connected client and the provider (holding the tokens). */
export async function connectWithOAuth(
  f: OAuthFixture,
  choice: ConsentChoice = {},
): Promise<{ client: Client; provider: MemoryProvider }> {
  const provider = new MemoryProvider();
  const url = new URL('/mcp', f.base);
  const first = new Client({ name: 'connector', version: '1.0.0' });
  await assert.rejects(
    first.connect(new StreamableHTTPClientTransport(url, { authProvider: provider })),
    UnauthorizedError,
  );
  assert.ok(provider.authorizationUrl, 'the client was sent to the authorization endpoint');
  const { redirect } = await humanConsents(f, provider.authorizationUrl, choice);
  const code = redirect.searchParams.get('code');
  assert.ok(code, `the client got a code: ${redirect.href}`);
  const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  await transport.finishAuth(code);
  const client = new Client({ name: 'connector', version: '1.0.0' });
  await client.connect(transport);
  return { client, provider };
}

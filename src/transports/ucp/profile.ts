/**
 * The documents the UCP transport publishes, all generated from the registry, the tenant's UCP
 * configuration and its keys:
 *
 *   business profile (2026-08-25)   `{ ucp: { version, services, capabilities, payment_handlers: {},
 *                                   supported_versions }, keys: [public JWKs] }`
 *   leaf profile (2026-04-08)       same content with `signing_keys[]` and the 2026-04-08 name rules
 *   capability schema               JSON Schema 2020-12: `$defs.request` (the verb's input),
 *                                   `$defs.response` (its output), `$defs["<parent>"]` per extended
 *                                   capability; the document itself validates a request
 *   service schema                  OpenAPI 3.1 of the REST binding (paths appended to `endpoint`)
 *   spec pages                      Markdown: what a capability does, its consent class and shape
 *
 * URLs (base = public origin + `/t/<company_id>` for tenant routes, none for the primary tenant):
 *   <base>/.well-known/ucp · <base>/ucp/v1 (endpoint) · <base>/ucp/v1/openapi.json ·
 *   <base>/ucp/v1/schemas/<capability>.json · <base>/ucp/v1/spec[/<capability>] ·
 *   <base>/ucp/v1/profiles/2026-04-08
 *
 * Services: one REST service per sub-agent that has capabilities (`<namespace>.<sub-agent>`), all
 * bound to the same endpoint. Capability entries carry `config: { verb, shape, consent_class }`.
 *
 * Spec: spec/transports.md §ucp-profile; the UCP business profile document.
 */
import { createHash } from 'node:crypto';
import { inlineSchema } from '../../runtime/registry.ts';
import type { PublicJwk } from '../../runtime/ledger/keys/tenant-keys.ts';
import { UCP_LEGACY_VERSION, UCP_VERSION, isUcpName, type CapabilityEntry } from './capability-names.ts';

/** Profile cache lifetime (seconds) sent as `Cache-Control: public, max-age=…` (UCP floor: 60). */
export const PROFILE_MAX_AGE_SECONDS = 300;
/** Path of the REST endpoint under a base. */
export const ENDPOINT_PATH = '/ucp/v1';

/** Where a tenant's documents live. */
export interface ProfileUrls {
  /** Public origin plus tenant prefix, no trailing slash, e.g. https://api.example.com/t/2. */
  base: string;
}

export function endpointUrl(u: ProfileUrls): string {
  return `${u.base}${ENDPOINT_PATH}`;
}
export function schemaUrl(u: ProfileUrls, capability: string): string {
  return `${u.base}${ENDPOINT_PATH}/schemas/${capability}.json`;
}
export function specUrl(u: ProfileUrls, capability?: string): string {
  return `${u.base}${ENDPOINT_PATH}/spec${capability === undefined ? '' : `/${capability}`}`;
}
export function openapiUrl(u: ProfileUrls): string {
  return `${u.base}${ENDPOINT_PATH}/openapi.json`;
}
export function legacyProfileUrl(u: ProfileUrls): string {
  return `${u.base}${ENDPOINT_PATH}/profiles/${UCP_LEGACY_VERSION}`;
}

/** The consent class a capability entry shows (`delegated` when decided per call). */
export function consentClassOf(entry: CapabilityEntry): string {
  return entry.verb.delegated ? 'delegated' : entry.verb.consentClass;
}

export interface ProfileInput {
  catalog: readonly CapabilityEntry[];
  capabilityVersion: string;
  urls: ProfileUrls;
  /** The tenant's publishable public keys (pending, active, rotating within grace). */
  keys: readonly PublicJwk[];
}

function servicesOf(input: ProfileInput, version: string): Record<string, unknown[]> {
  const services: Record<string, unknown[]> = {};
  for (const e of input.catalog) {
    if (services[e.service] !== undefined || !isUcpName(e.service, version)) continue;
    services[e.service] = [
      {
        version: input.capabilityVersion,
        transport: 'rest',
        spec: specUrl(input.urls),
        schema: openapiUrl(input.urls),
        endpoint: endpointUrl(input.urls),
      },
    ];
  }
  return sortKeys(services);
}

function capabilitiesOf(input: ProfileInput, version: string): Record<string, unknown[]> {
  const names = new Set(input.catalog.filter((e) => isUcpName(e.name, version)).map((e) => e.name));
  const out: Record<string, unknown[]> = {};
  for (const e of input.catalog) {
    if (!names.has(e.name)) continue;
    const parents = e.extends.filter((p) => names.has(p));
    const entry: Record<string, unknown> = {
      version: input.capabilityVersion,
      spec: specUrl(input.urls, e.name),
      schema: schemaUrl(input.urls, e.name),
    };
    if (parents.length === 1) entry.extends = parents[0];
    else if (parents.length > 1) entry.extends = parents;
    entry.config = { verb: e.verb.name, shape: e.verb.shape, consent_class: consentClassOf(e) };
    out[e.name] = [entry];
  }
  return out;
}

function publicKeys(keys: readonly PublicJwk[]): Record<string, unknown>[] {
  // Only public members, whatever the stored object holds.
  return keys.map((k) => ({ kid: k.kid, kty: k.kty, crv: k.crv, x: k.x, y: k.y, use: 'sig', alg: 'ES256' }));
}

/** The 2026-08-25 business profile (see the header). */
export function buildBusinessProfile(input: ProfileInput): Record<string, unknown> {
  return {
    ucp: {
      version: UCP_VERSION,
      services: servicesOf(input, UCP_VERSION),
      capabilities: capabilitiesOf(input, UCP_VERSION),
      payment_handlers: {},
      supported_versions: { [UCP_LEGACY_VERSION]: legacyProfileUrl(input.urls) },
    },
    keys: publicKeys(input.keys),
  };
}

/** The 2026-04-08 leaf profile: `signing_keys[]`, names valid under 2026-04-08 only, no supported_versions. */
export function buildLegacyProfile(input: ProfileInput): Record<string, unknown> {
  return {
    ucp: {
      version: UCP_LEGACY_VERSION,
      services: servicesOf(input, UCP_LEGACY_VERSION),
      capabilities: capabilitiesOf(input, UCP_LEGACY_VERSION),
      payment_handlers: {},
    },
    signing_keys: publicKeys(input.keys),
  };
}

/**
 * The JSON Schema document of one capability (its `schema` URL). It validates a request body
 * (`$ref: #/$defs/request`); `$defs.response` is the answer's `result`; each extended capability
 * appears as `$defs["<parent name>"] = { allOf: [{ $ref: <parent schema URL> }] }`.
 */
export function buildCapabilitySchema(
  entry: CapabilityEntry,
  capabilityVersion: string,
  urls: ProfileUrls,
): Record<string, unknown> {
  const defs: Record<string, unknown> = {
    request: inlineSchema(entry.verb.inputSchema),
    response: inlineSchema(entry.verb.outputSchema),
  };
  for (const parent of entry.extends) defs[parent] = { allOf: [{ $ref: schemaUrl(urls, parent) }] };
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: schemaUrl(urls, entry.name),
    name: entry.name,
    version: capabilityVersion,
    title: entry.verb.definition.title ?? entry.verb.name,
    description: entry.verb.definition.description,
    'x-solid-verb': {
      name: entry.verb.name,
      shape: entry.verb.shape,
      consent_class: consentClassOf(entry),
      side_effects: entry.verb.record.side_effects ?? (entry.verb.isWrite ? 'write' : 'read'),
      role_floor: entry.verb.roleFloor,
      tier_floor: entry.verb.tierFloor,
    },
    $ref: '#/$defs/request',
    $defs: defs,
  };
}

/** The OpenAPI 3.1 document of the REST binding (paths relative to the endpoint). */
export function buildServiceOpenApi(
  catalog: readonly CapabilityEntry[],
  urls: ProfileUrls,
): Record<string, unknown> {
  const header = (name: string, description: string, required = false) => ({
    name,
    in: 'header',
    required,
    schema: { type: 'string' },
    description,
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'UCP capabilities (solid-verbs)',
      version: UCP_VERSION,
      description:
        'Each capability runs one verb. Requests are RFC 9421 signed (ES256, raw r‖s, no alg parameter) with RFC 9530 Content-Digest; responses are signed with the business key listed in its profile.',
    },
    servers: [{ url: endpointUrl(urls) }],
    paths: {
      '/capabilities/{capability}': {
        post: {
          operationId: 'invokeCapability',
          summary: 'Run a capability with its input as the JSON body',
          parameters: [
            {
              name: 'capability',
              in: 'path',
              required: true,
              schema: { type: 'string', enum: catalog.map((e) => e.name) },
            },
            header('UCP-Agent', 'profile="<platform profile URL>" (RFC 8941 dictionary)', true),
            header(
              'Signature-Input',
              'RFC 9421; covers @method @authority @path [@query] ucp-agent [idempotency-key] [solid-consent-nonce] content-digest content-type; created and keyid required',
              true,
            ),
            header('Signature', 'RFC 9421 byte sequence, 64-byte raw r‖s', true),
            header('Content-Digest', 'RFC 9530 sha-256 of the raw body'),
            header(
              'Idempotency-Key',
              'replay-safe key for writes (same key and body: the stored answer; other body: 409)',
            ),
            header(
              'Solid-Consent-Nonce',
              'the nonce of a pending typed-phrase answer, after an out-of-band approval',
            ),
          ],
          requestBody: { required: false, content: { 'application/json': { schema: { type: 'object' } } } },
          responses: {
            '200': {
              description:
                'The verb ran: `ucp` envelope plus the solid-verbs envelope (ok, verb, result, audit_id…)',
            },
            '202': {
              description: 'dispatch_pending: a human must approve out of band (typed-phrase classes)',
            },
            '400': {
              description:
                'invalid input or request, digest_mismatch, algorithm_unsupported, components_missing',
            },
            '401': {
              description:
                'signature_missing, signature_invalid, key_not_found, signature_expired, signature_replayed',
            },
            '403': {
              description:
                'profile_not_trusted, capability_not_allowed, consent_not_implied, role/tier denials',
            },
            '409': { description: 'idempotency_key_reused (same key, other body), idempotency_key_in_use' },
            '424': { description: 'profile_unreachable' },
          },
        },
      },
    },
  };
}

/** Markdown page of one capability (its `spec` URL) or, without `entry`, the index of all. */
export function buildSpecPage(catalog: readonly CapabilityEntry[], entry?: CapabilityEntry): string {
  if (entry === undefined) {
    const lines = [
      '# UCP capabilities',
      '',
      'Each capability runs one solid-verbs verb. POST its input to `<endpoint>/capabilities/<name>`, signed (RFC 9421, ES256).',
      '',
    ];
    for (const e of catalog)
      lines.push(`- \`${e.name}\` — ${e.verb.name} (${e.verb.shape}, ${consentClassOf(e)})`);
    return lines.join('\n') + '\n';
  }
  const lines = [
    `# ${entry.name}`,
    '',
    entry.verb.definition.description,
    '',
    `- verb: \`${entry.verb.name}\``,
    `- shape: ${entry.verb.shape}`,
    `- consent class: ${consentClassOf(entry)} (a signature implies at most the class the operator allows the platform; typed-phrase classes need an out-of-band approval)`,
    `- role floor: ${entry.verb.roleFloor}; tier floor: ${entry.verb.tierFloor}`,
  ];
  if (entry.extends.length > 0) lines.push(`- extends: ${entry.extends.map((p) => `\`${p}\``).join(', ')}`);
  return lines.join('\n') + '\n';
}

/** A strong ETag of a document body. */
export function etagOf(body: string | Buffer): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"`;
}

/** Does an If-None-Match header match `etag` (weak comparison, lists, `*`)? */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const bare = etag.replace(/^W\//, '');
  return header.split(',').some((t) => {
    const tag = t.trim();
    return tag === '*' || tag.replace(/^W\//, '') === bare;
  });
}

function sortKeys<T>(obj: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(obj).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

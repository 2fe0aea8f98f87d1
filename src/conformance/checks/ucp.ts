/**
 * Section `ucp` (with --ucp): the business profile's shape and caching, and signed capability
 * calls (RFC 9421, ES256). Refusals that come before trust (no signature, an untrusted platform)
 * are checked on any server. The signed call, a body changed after signing and a replayed
 * signature need a platform the server lets in: the kit signs with `--ucp-key` (a private JWK
 * with its kid) as the platform at `--ucp-profile`, or else with a key it generates, serving that
 * platform's profile on 127.0.0.1 (a local server fetches it only in development mode,
 * SOLID_UCP_DEV=1, and only when its trust list admits the platform or any platform). When the
 * server does not let the platform in, those checks skip with what to change. Only capabilities
 * of read verbs are called.
 * Spec: spec/transports.md §ucp-profile, §ucp-verify, §ucp-errors, §ucp-dispatch; docs/ucp.md.
 */
import { createPrivateKey, randomUUID, type KeyObject } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateP256Jwk } from '../../runtime/ledger/keys/keygen.ts';
import { NAME_PATTERN_2026_08_25, UCP_VERSION } from '../../transports/ucp/capability-names.ts';
import { exportPublicJwk } from '../../transports/ucp/jwk.ts';
import {
  endpointFor,
  profileKeys,
  signRequest,
  verifyResponse,
  type SignedRequest,
} from '../../transports/ucp/ucp-client.ts';
import { isReadRecord, type KitContext } from '../context.ts';
import type { HttpAnswer } from '../http.ts';
import { Fail, Skip, fail, pass, skip } from '../outcome.ts';
import type { Check, Evidence } from '../types.ts';

const UCP = { ucp: true } as const;
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'];

interface Profile {
  answer: HttpAnswer;
  doc: {
    ucp?: {
      version?: unknown;
      services?: Record<string, unknown>;
      capabilities?: Record<string, Array<Record<string, unknown>>>;
    };
    keys?: unknown;
    signing_keys?: unknown;
  };
}

function profile(ctx: KitContext): Promise<Profile> {
  return ctx.once('ucp-profile', async () => {
    const answer = await ctx.http.get('/.well-known/ucp', { key: false });
    if (answer.status !== 200 || answer.json === null || typeof answer.json !== 'object')
      throw new Fail(`GET /.well-known/ucp answered HTTP ${answer.status}, not a JSON profile`, [
        ctx.ev(answer),
      ]);
    return { answer, doc: answer.json as Profile['doc'] };
  });
}

/** A capability of a read verb the kit can call with `{}` or the probe's arguments. */
async function readCapability(
  ctx: KitContext,
): Promise<{ name: string; url: string; args: Record<string, unknown> }> {
  const { doc } = await profile(ctx);
  const caps = doc.ucp?.capabilities ?? {};
  const all = await ctx.allRecords();
  const byVerb = new Map(all.map((r) => [r.name, r]));
  const candidates = Object.entries(caps)
    .map(([name, entries]) => ({ name, verb: (entries?.[0]?.config as { verb?: string } | undefined)?.verb }))
    .filter(
      (c) => c.verb !== undefined && byVerb.get(c.verb) !== undefined && isReadRecord(byVerb.get(c.verb)!),
    )
    .sort((a, b) => Number(b.verb === 'verbs.list') - Number(a.verb === 'verbs.list'))
    .filter(
      (c) =>
        !Array.isArray(byVerb.get(c.verb!)!.input_schema?.required) ||
        (byVerb.get(c.verb!)!.input_schema.required as unknown[]).length === 0,
    );
  const c = candidates[0];
  if (c === undefined)
    throw new Skip('the profile has no capability of a read verb without required arguments');
  const endpoint = endpointFor(doc, c.name);
  if (endpoint === undefined)
    throw new Fail(`no REST service endpoint serves ${c.name}`, [
      ctx.ev((await profile(ctx)).answer, doc.ucp?.services),
    ]);
  return { name: c.name, url: `${endpoint}/capabilities/${encodeURIComponent(c.name)}`, args: {} };
}

interface Platform {
  profileUrl: string;
  kid: string;
  privateKey: KeyObject | Record<string, unknown>;
  hosted: boolean;
}

/** The platform the kit signs as (given, or generated and served on loopback for the run). */
function platform(ctx: KitContext): Promise<Platform> {
  return ctx.once('ucp-platform', async () => {
    const given = ctx.options.ucpKey;
    if (given !== undefined) {
      if (ctx.options.ucpProfileUrl === undefined)
        throw new Fail('--ucp-key needs --ucp-profile <the platform profile URL>');
      const kid = given.kid;
      if (typeof kid !== 'string') throw new Fail('the --ucp-key JWK has no kid');
      return { profileUrl: ctx.options.ucpProfileUrl, kid, privateKey: given, hosted: false };
    }
    const kid = `conformance-${ctx.runId}`;
    const privateKey = createPrivateKey({ key: generateP256Jwk().privateJwk, format: 'jwk' });
    const body = JSON.stringify({
      ucp: { version: UCP_VERSION, services: {}, capabilities: {}, payment_handlers: {} },
      keys: [exportPublicJwk(privateKey, kid)],
    });
    const server = createServer((req, res) => {
      if (req.url !== '/.well-known/ucp') {
        res.writeHead(404).end();
        return;
      }
      res
        .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=60' })
        .end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    ctx.onClose(() => new Promise((r) => server.close(() => r())));
    const port = (server.address() as AddressInfo).port;
    return { profileUrl: `http://127.0.0.1:${port}/.well-known/ucp`, kid, privateKey, hosted: true };
  });
}

/** Send a signed request (or its tampered copy) through the budget. */
async function send(ctx: KitContext, signed: SignedRequest, body?: Buffer): Promise<HttpAnswer> {
  const url = new URL(signed.url);
  return ctx.http.request('POST', `${url.pathname}${url.search}`, {
    key: false,
    headers: signed.headers,
    ...((body ?? signed.body) ? { raw: new Uint8Array(body ?? signed.body!) } : {}),
  });
}

function codeOf(answer: HttpAnswer): unknown {
  const j = answer.json as { code?: unknown; error?: { reason?: unknown } } | undefined;
  return j?.code ?? j?.error?.reason;
}

/**
 * The trusted signed call of the run (once): Skip when the server does not let the platform in,
 * with what to change; otherwise the request and its answer.
 */
function trustedCall(ctx: KitContext): Promise<{ signed: SignedRequest; answer: HttpAnswer; cap: string }> {
  return ctx.once('ucp-trusted-call', async () => {
    const cap = await readCapability(ctx);
    const p = await platform(ctx);
    const signed = signRequest({
      url: cap.url,
      body: cap.args,
      profileUrl: p.profileUrl,
      keyid: p.kid,
      privateKey: p.privateKey as KeyObject,
      idempotencyKey: randomUUID(),
    });
    const answer = await send(ctx, signed);
    const code = codeOf(answer);
    const letIn = p.hosted
      ? `let the kit's platform in with settings.ucp.any_platform (or list ${p.profileUrl}'s origin in settings.ucp.platforms), or pass --ucp-key and --ucp-profile of a platform the server trusts`
      : `add ${p.profileUrl} (or its pinned key) to the tenant's settings.ucp.platforms`;
    if (code === 'profile_not_trusted')
      throw new Skip(`the server does not let the test platform in (profile_not_trusted): ${letIn}`, [
        ctx.ev(answer, answer.json),
      ]);
    if (code === 'invalid_profile_url' && p.hosted)
      throw new Skip(
        'the server refuses the profile the kit serves on 127.0.0.1 (invalid_profile_url): on a local server set SOLID_UCP_DEV=1 and settings.ucp.any_platform, or pass --ucp-key and --ucp-profile of a platform it trusts',
        [ctx.ev(answer, answer.json)],
      );
    if (code === 'profile_unreachable' && p.hosted)
      throw new Skip(
        `the server cannot fetch the profile the kit serves at ${p.profileUrl} (profile_unreachable): run the kit on the server's machine, or pass --ucp-key and --ucp-profile`,
        [ctx.ev(answer, answer.json)],
      );
    return { signed, answer, cap: cap.name };
  });
}

export const ucpChecks: Check[] = [
  {
    id: 'ucp.profile',
    section: 'ucp',
    requirement:
      'GET /.well-known/ucp is a 2026-08-25 business profile: REST services with endpoints, capabilities named <namespace>.<sub-agent>.<capability> with config.verb under a service, and public ES256 keys only.',
    spec: 'spec/transports.md §ucp-profile',
    needs: UCP,
    async run(ctx) {
      const { answer, doc } = await profile(ctx);
      const problems: string[] = [];
      const u = doc.ucp;
      if (u?.version !== UCP_VERSION)
        problems.push(`ucp.version is ${JSON.stringify(u?.version)}, not ${UCP_VERSION}`);
      const services = u?.services ?? {};
      for (const [name, bindings] of Object.entries(services)) {
        const rest = Array.isArray(bindings)
          ? (bindings as Array<Record<string, unknown>>).find((b) => b.transport === 'rest')
          : undefined;
        if (rest === undefined || typeof rest.endpoint !== 'string' || rest.endpoint.endsWith('/'))
          problems.push(`service ${name} has no REST endpoint without a trailing slash`);
      }
      const caps = u?.capabilities ?? {};
      for (const [name, entries] of Object.entries(caps)) {
        if (!NAME_PATTERN_2026_08_25.test(name))
          problems.push(`capability ${name} does not match the 2026-08-25 name pattern`);
        const e = Array.isArray(entries) ? entries[0] : undefined;
        const config = e?.config as Record<string, unknown> | undefined;
        if (
          e === undefined ||
          typeof e.version !== 'string' ||
          typeof e.schema !== 'string' ||
          typeof e.spec !== 'string'
        )
          problems.push(`capability ${name} lacks version, spec or schema`);
        if (
          typeof config?.verb !== 'string' ||
          typeof config.shape !== 'string' ||
          typeof config.consent_class !== 'string'
        )
          problems.push(`capability ${name} lacks config { verb, shape, consent_class }`);
        if (!Object.keys(services).some((s) => name.startsWith(`${s}.`)))
          problems.push(`capability ${name} is under no service`);
      }
      if (doc.signing_keys !== undefined && doc.keys !== undefined)
        problems.push('the profile has both keys and signing_keys');
      const keys = profileKeys(doc);
      if (keys.length === 0) problems.push('the profile publishes no key');
      for (const k of keys) {
        if (
          k.kty !== 'EC' ||
          k.crv !== 'P-256' ||
          typeof k.x !== 'string' ||
          typeof k.y !== 'string' ||
          typeof k.kid !== 'string'
        )
          problems.push(`key ${String(k.kid)} is not a P-256 JWK with a kid`);
        const priv = PRIVATE_MEMBERS.filter((m) => m in k);
        if (priv.length > 0)
          problems.push(`key ${String(k.kid)} publishes private members (${priv.join(', ')})`);
      }
      if (problems.length > 0) return fail(problems[0]!, ctx.ev(answer, problems.slice(0, 10)));
      return pass(
        `${Object.keys(caps).length} capabilities, ${Object.keys(services).length} services, ${keys.length} keys`,
      );
    },
  },
  {
    id: 'ucp.etag',
    section: 'ucp',
    requirement:
      'The profile carries a strong ETag and Cache-Control with a max-age; If-None-Match with it answers 304 without a body.',
    spec: 'spec/transports.md §ucp-profile',
    needs: UCP,
    async run(ctx) {
      const { answer } = await profile(ctx);
      const etag = answer.headers.get('etag');
      const cc = answer.headers.get('cache-control') ?? '';
      if (etag === null || etag.startsWith('W/'))
        return fail(`the ETag is ${etag ?? 'missing'}`, ctx.ev(answer, { etag }));
      if (!/max-age=\d+/.test(cc))
        return fail(
          `Cache-Control has no max-age: ${JSON.stringify(cc)}`,
          ctx.ev(answer, { 'cache-control': cc }),
        );
      const again = await ctx.http.get('/.well-known/ucp', {
        key: false,
        headers: { 'if-none-match': etag },
      });
      if (again.status !== 304 || again.bytes.length > 0)
        return fail(
          `If-None-Match answered HTTP ${again.status} with ${again.bytes.length} bytes`,
          ctx.ev(again, again.text.slice(0, 200)),
        );
      return pass(`304 for ${etag}`);
    },
  },
  {
    id: 'ucp.unsigned',
    section: 'ucp',
    requirement:
      "An unsigned capability call answers 401 signature_missing in UCP's { code, content } shape, and nothing is dispatched.",
    spec: 'spec/transports.md §ucp-errors',
    needs: UCP,
    async run(ctx) {
      const cap = await readCapability(ctx);
      const url = new URL(cap.url);
      const answer = await ctx.http.post(`${url.pathname}${url.search}`, { key: false, json: cap.args });
      const j = answer.json as { code?: unknown; content?: unknown } | undefined;
      if (answer.status !== 401 || j?.code !== 'signature_missing' || typeof j.content !== 'string')
        return fail(`answered HTTP ${answer.status} ${JSON.stringify(j?.code)}`, ctx.ev(answer, j));
      return pass('401 signature_missing', ctx.ev(answer, j));
    },
  },
  {
    id: 'ucp.untrusted',
    section: 'ucp',
    requirement:
      'A request signed by a platform the business does not trust answers 403 profile_not_trusted, before its profile is fetched.',
    spec: 'spec/transports.md §ucp-verify',
    needs: UCP,
    async run(ctx) {
      const cap = await readCapability(ctx);
      const key = createPrivateKey({ key: generateP256Jwk().privateJwk, format: 'jwk' });
      const signed = signRequest({
        url: cap.url,
        body: cap.args,
        profileUrl: `https://untrusted-${ctx.runId}.conformance.invalid/.well-known/ucp`,
        keyid: `untrusted-${ctx.runId}`,
        privateKey: key,
      });
      const answer = await send(ctx, signed);
      const code = codeOf(answer);
      if (code === 'profile_unreachable')
        return skip(
          'the server accepts any signing platform (any_platform), so it fetched the untrusted profile',
          ctx.ev(answer, answer.json),
        );
      if (answer.status !== 403 || code !== 'profile_not_trusted')
        return fail(`answered HTTP ${answer.status} ${JSON.stringify(code)}`, ctx.ev(answer, answer.json));
      return pass('403 profile_not_trusted', ctx.ev(answer, answer.json));
    },
  },
  {
    id: 'ucp.signed_call',
    section: 'ucp',
    requirement:
      'A signed call from a platform the business lets in answers 200 with the envelope and a ucp member, signed (@status, content-digest, content-type) by a key of the business profile.',
    spec: 'spec/transports.md §ucp-dispatch',
    needs: UCP,
    async run(ctx) {
      const { answer, cap, signed } = await trustedCall(ctx);
      const j = answer.json as { ok?: unknown; ucp?: { status?: unknown; version?: unknown } } | undefined;
      if (answer.status !== 200 || j?.ok !== true || j.ucp?.status !== 'success')
        return fail(`${cap} answered HTTP ${answer.status}`, ctx.ev(answer, j));
      const { doc } = await profile(ctx);
      try {
        await verifyResponse({
          status: answer.status,
          headers: Object.fromEntries(answer.headers),
          body: answer.bytes,
          url: signed.url,
          keys: profileKeys(doc),
        });
      } catch (err) {
        return fail(
          `the answer's signature does not verify: ${(err as Error).message}`,
          ctx.ev(answer, {
            signature: answer.headers.get('signature'),
            'signature-input': answer.headers.get('signature-input'),
          }),
        );
      }
      return pass(`${cap}: 200, signature verified`, ctx.ev(answer, { ok: true, ucp: j.ucp }));
    },
  },
  {
    id: 'ucp.digest_mismatch',
    section: 'ucp',
    requirement: 'A body changed after signing answers 400 digest_mismatch, and nothing is dispatched.',
    spec: 'spec/transports.md §ucp-verify',
    needs: UCP,
    async run(ctx) {
      await trustedCall(ctx);
      const cap = await readCapability(ctx);
      const p = await platform(ctx);
      const signed = signRequest({
        url: cap.url,
        body: { ...cap.args },
        profileUrl: p.profileUrl,
        keyid: p.kid,
        privateKey: p.privateKey as KeyObject,
      });
      const answer = await send(ctx, signed, Buffer.from(JSON.stringify({ ...cap.args, conformance: 1 })));
      if (answer.status !== 400 || codeOf(answer) !== 'digest_mismatch')
        return fail(
          `answered HTTP ${answer.status} ${JSON.stringify(codeOf(answer))}`,
          ctx.ev(answer, answer.json),
        );
      return pass('400 digest_mismatch', ctx.ev(answer, answer.json));
    },
  },
  {
    id: 'ucp.replay',
    section: 'ucp',
    requirement: 'The same signed request sent again answers 401 signature_replayed.',
    spec: 'spec/transports.md §ucp-verify',
    needs: UCP,
    async run(ctx) {
      const { signed } = await trustedCall(ctx);
      const answer = await send(ctx, signed);
      const evidence: Evidence = ctx.ev(answer, answer.json);
      if (answer.status !== 401 || codeOf(answer) !== 'signature_replayed')
        return fail(
          `the replayed request answered HTTP ${answer.status} ${JSON.stringify(codeOf(answer))}`,
          evidence,
        );
      return pass('401 signature_replayed', evidence);
    },
  },
];

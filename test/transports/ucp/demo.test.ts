/**
 * UCP on the demo business (test/support/demo.ts): the profile generated from its ~90 verbs keeps
 * UCP's name rules and the documented sub-agent map, every `extends` names a published
 * capability, and a platform whose profile is served on loopback calls a real verb
 * (customer.full_context) with a signed request through `solid serve`'s server.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { openDemoRuntime } from '../../support/demo.ts';
import { createHttpServer } from '../../../src/transports/http/server.ts';
import { createUcpPlugin } from '../../../src/transports/ucp/ucp-plugin.ts';
import { NAME_PATTERN_2026_08_25, subAgentOf } from '../../../src/transports/ucp/capability-names.ts';
import { profileKeys, signRequest, verifyResponse } from '../../../src/transports/ucp/ucp-client.ts';
import { startPlatform } from './harness.ts';

describe('UCP on the demo business', () => {
  it('publishes every ucp verb under the sub-agents and serves a signed customer.full_context', async (t) => {
    const demo = await openDemoRuntime(t);
    const platform = await startPlatform(t);
    await demo.rt.store.write((tx) =>
      tx.run('UPDATE tenants SET settings = ? WHERE company_id = ?', [
        JSON.stringify({ ucp: { namespace: 'com.summitplumbing', platforms: [{ profile: platform.url }] } }),
        demo.companyId,
      ]),
    );
    demo.rt.tenants.invalidate();
    const app = createHttpServer(demo.rt, { logger: false, plugins: [createUcpPlugin({ dev: true })] });
    t.after(() => app.close());
    await app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

    const res = await fetch(`${base}/.well-known/ucp`);
    assert.equal(res.status, 200);
    const profile = (await res.json()) as {
      ucp: {
        capabilities: Record<string, Array<{ extends?: string | string[]; config: { verb: string } }>>;
        services: Record<string, unknown>;
      };
      keys: unknown[];
    };
    const caps = profile.ucp.capabilities;
    const exposed = demo.rt.registry.all().filter((v) => v.surfaces.includes('ucp'));
    assert.ok(exposed.length >= 60);
    assert.equal(Object.keys(caps).length, exposed.length);
    for (const [name, [entry]] of Object.entries(caps)) {
      assert.match(name, NAME_PATTERN_2026_08_25);
      const verb = demo.rt.registry.get(entry!.config.verb)!;
      assert.equal(name.split('.')[2], subAgentOf(verb), `${verb.name} (${verb.category})`);
      for (const parent of [entry!.extends ?? []].flat())
        assert.ok(caps[parent], `${name} extends the published ${parent}`);
    }
    const subAgents = new Set(Object.keys(profile.ucp.services).map((s) => s.split('.')[2]));
    for (const s of ['sales', 'ar', 'ap', 'service', 'compliance', 'marketing', 'ops'])
      assert.ok(subAgents.has(s), s);
    assert.ok(
      Object.values(caps).some(([e]) => e!.extends !== undefined),
      'previews extend their writes',
    );

    const name = Object.entries(caps).find(([, [e]]) => e!.config.verb === 'customer.full_context')![0];
    assert.equal(name, 'com.summitplumbing.sales.customer_full_context');
    const url = `${base}/ucp/v1/capabilities/${name}`;
    const key = platform.keys[0]!;
    const signed = signRequest({
      url,
      body: { customer_id: demo.fixtures.customer_id },
      profileUrl: platform.url,
      keyid: key.kid,
      privateKey: key.privateKey,
      created: Math.floor(demo.rt.clock().getTime() / 1000),
    });
    const answer = await fetch(url, {
      method: 'POST',
      headers: signed.headers,
      body: new Uint8Array(signed.body!),
    });
    const bytes = new Uint8Array(await answer.arrayBuffer());
    const body = JSON.parse(Buffer.from(bytes).toString('utf8')) as {
      ok: boolean;
      verb: string;
      result: { entity_id: number };
      ucp: { status: string };
    };
    assert.equal(answer.status, 200, JSON.stringify(body));
    assert.equal(body.verb, 'customer.full_context');
    assert.equal(body.ucp.status, 'success');
    assert.equal(body.result.entity_id, demo.fixtures.customer_id);
    const headers: Record<string, string> = {};
    answer.headers.forEach((v, k) => (headers[k] = v));
    const verified = await verifyResponse({
      status: answer.status,
      headers,
      body: bytes,
      url,
      keys: profileKeys(profile),
      now: demo.rt.clock(),
    });
    assert.equal(verified.keyid, (await demo.rt.keys.signingKey(demo.companyId)).kid);
  });
});

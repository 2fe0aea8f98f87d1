/**
 * `solid ucp call | keygen | profile | config` in-process (runCli), against a UCP server on
 * loopback whose trust list holds the platform.
 */
import assert from 'node:assert/strict';
import { readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runCli } from '../../../src/transports/cli/main.ts';
import { createSharedUcpHarness, createUcpHarness } from './harness.ts';

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, { out: (s) => out.push(s), err: (s) => err.push(s), isTTY: false });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

describe('solid ucp', () => {
  it('call: signs a capability call as the platform and verifies the signed answer', async (t) => {
    const u = await createUcpHarness(t);
    const key = u.platform.keys[0]!;
    const keyFile = join(u.h.dir, 'platform.jwk.json');
    writeFileSync(keyFile, JSON.stringify({ ...key.privateKey.export({ format: 'jwk' }), kid: key.kid }));
    const ok = await cli([
      'ucp',
      'call',
      `${u.base}/.well-known/ucp`,
      'com.example.sales.notes_add',
      '--args',
      '{"text":"from the cli"}',
      '--key-file',
      keyFile,
      '--profile-url',
      u.platform.url,
      '--json',
    ]);
    assert.equal(ok.code, 0, ok.stderr + ok.stdout);
    const answer = JSON.parse(ok.stdout) as {
      status: number;
      signature: { verified: boolean; keyid: string };
      body: { ok: boolean; verb: string };
    };
    assert.equal(answer.status, 200);
    assert.equal(answer.signature.verified, true);
    assert.equal(answer.signature.keyid, (await u.h.rt.keys.signingKey(u.h.companyId)).kid);
    assert.equal(answer.body.verb, 'notes_add');
    const byBase = await cli([
      'ucp',
      'call',
      u.base,
      'com.example.sales.notes_count',
      '--key-file',
      keyFile,
      '--profile-url',
      u.platform.url,
    ]);
    assert.equal(byBase.code, 0, byBase.stderr);
    assert.match(byBase.stderr, /answer signed by the business/);
    await u.configure({
      platforms: [{ profile: u.platform.url, role: 'admin', max_class: 'WRITE_REVERSIBLE' }],
    });
    const pending = await cli([
      'ucp',
      'call',
      u.base,
      'com.example.ar.notes_charge',
      '--args',
      '{"amount_cents":100}',
      '--key-file',
      keyFile,
      '--profile-url',
      u.platform.url,
      '--json',
    ]);
    assert.equal(pending.code, 4, 'dispatch_pending');
    const untrusted = await cli([
      'ucp',
      'call',
      u.base,
      'com.example.sales.notes_count',
      '--key-file',
      keyFile,
      '--profile-url',
      `${u.platform.origin}/other`,
    ]);
    assert.equal(untrusted.code, 3);
    const missing = await cli([
      'ucp',
      'call',
      u.base,
      'com.example.sales.nope',
      '--key-file',
      keyFile,
      '--profile-url',
      u.platform.url,
    ]);
    assert.equal(missing.code, 8, 'not offered by the profile');
    const noKey = await cli([
      'ucp',
      'call',
      u.base,
      'com.example.sales.notes_count',
      '--profile-url',
      u.platform.url,
    ]);
    assert.equal(noKey.code, 2);
    assert.match(noKey.stderr, /keygen/);
  });

  it('keygen: a private JWK file (0600) and a platform profile with only the public key', async (t) => {
    const u = await createUcpHarness(t);
    const out = join(u.h.dir, 'k.json');
    const r = await cli(['ucp', 'keygen', '--out', out, '--kid', 'plat-1']);
    assert.equal(r.code, 0);
    assert.equal(statSync(out).mode & 0o777, 0o600);
    const priv = JSON.parse(readFileSync(out, 'utf8')) as Record<string, string>;
    assert.equal(priv.kid, 'plat-1');
    assert.ok(priv.d);
    const profile = JSON.parse(r.stdout) as { ucp: { version: string }; keys: Array<Record<string, string>> };
    assert.equal(profile.ucp.version, '2026-08-25');
    assert.deepEqual(Object.keys(profile.keys[0]!).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    assert.equal(profile.keys[0]!.x, priv.x);

    // An existing file is never replaced silently; --force replaces it with mode 0600.
    const again = await cli(['ucp', 'keygen', '--out', out]);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /already exists/);
    assert.equal(JSON.parse(readFileSync(out, 'utf8')).d, priv.d, 'the key is untouched');
    const shared = join(u.h.dir, 'shared.json');
    writeFileSync(shared, '{}', { mode: 0o644 });
    assert.equal((await cli(['ucp', 'keygen', '--out', shared, '--force'])).code, 0);
    assert.equal(statSync(shared).mode & 0o777, 0o600);
    assert.ok(JSON.parse(readFileSync(shared, 'utf8')).d);
    const dangling = join(u.h.dir, 'link.json');
    symlinkSync(join(u.h.dir, 'elsewhere.json'), dangling);
    assert.equal((await cli(['ucp', 'keygen', '--out', dangling])).code, 2, 'a symlink is not followed');
    const missing = await cli(['ucp', 'keygen', '--out', join(u.h.dir, 'no', 'such', 'dir', 'k.json')]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /cannot write/);
  });

  it('config set validates and audits settings.ucp; profile prints what the server serves', async (t) => {
    const { u, cli: local } = await createSharedUcpHarness(t);
    const bad = await local([
      'ucp',
      'config',
      'set',
      '--json',
      '{"namespace":"dev.ucp.mine"}',
      '--tenant',
      String(u.h.companyId),
    ]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /reserved/);
    const good = await local([
      'ucp',
      'config',
      'set',
      '--json',
      JSON.stringify({
        namespace: 'com.summit',
        platforms: [{ profile: u.platform.url, role: 'read_only' }],
      }),
      '--tenant',
      String(u.h.companyId),
    ]);
    assert.equal(good.code, 0, good.stderr);
    const shown = JSON.parse(
      (await local(['ucp', 'config', 'show', '--tenant', String(u.h.companyId)])).stdout,
    ) as { namespace: string };
    assert.equal(shown.namespace, 'com.summit');
    u.h.rt.tenants.invalidate();
    const served = (await u.get('/.well-known/ucp')).json<{
      ucp: { capabilities: Record<string, unknown> };
    }>();
    assert.ok(served.ucp.capabilities['com.summit.sales.notes_count'], 'the running server applies it');
    const printed = await local([
      'ucp',
      'profile',
      '--tenant',
      String(u.h.companyId),
      '--base-url',
      'https://api.summit.example',
    ]);
    assert.equal(printed.code, 0, printed.stderr);
    assert.match(
      printed.stderr,
      /namespace com\.summit does not match https:\/\/api\.summit\.example/,
      'com.summit does not bind to api.summit.example',
    );
    const bound = await local([
      'ucp',
      'profile',
      '--tenant',
      String(u.h.companyId),
      '--base-url',
      'https://summit.com',
    ]);
    assert.equal(bound.code, 0);
    assert.equal(bound.stderr, '', 'com.summit binds to summit.com');
    const doc = JSON.parse(printed.stdout) as {
      ucp: { capabilities: Record<string, Array<{ schema: string }>> };
    };
    // The CLI process registers the system verbs and the database's packs (not this test's verbs).
    assert.equal(
      doc.ucp.capabilities['com.summit.compliance.audit_trail']![0]!.schema,
      `https://api.summit.example/t/${u.h.companyId}/ucp/v1/schemas/com.summit.compliance.audit_trail.json`,
    );
    assert.deepEqual(
      doc.ucp.capabilities['com.summit.compliance.audit_trail'],
      served.ucp.capabilities['com.summit.compliance.audit_trail'] && [
        {
          ...(
            served.ucp.capabilities['com.summit.compliance.audit_trail'] as Array<Record<string, unknown>>
          )[0],
          spec: `https://api.summit.example/t/${u.h.companyId}/ucp/v1/spec/com.summit.compliance.audit_trail`,
          schema: `https://api.summit.example/t/${u.h.companyId}/ucp/v1/schemas/com.summit.compliance.audit_trail.json`,
        },
      ],
    );
    await u.h.rt.auditBuffer.flush();
    const rows = await u.h.rt.store.read((q) =>
      q.all<{ action_type: string }>("SELECT action_type FROM audit_log WHERE category = 'ucp'"),
    );
    assert.deepEqual(
      rows.map((r) => r.action_type),
      ['ucp.config_set'],
    );
  });
});

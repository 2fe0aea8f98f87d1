/**
 * Dispatch over UCP: the verified platform as principal (role, allow-list), consent implied by a
 * signature only up to the platform's allowance, typed-phrase classes through an out-of-band
 * approval, idempotency (409 on a reused key), answers in the `ucp` envelope, signed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createUcpHarness, type UcpHarness, type UcpResponse } from './harness.ts';
import { profileKeys, verifyResponse } from '../../../src/transports/ucp/ucp-client.ts';
import type { Envelope } from '../../../src/spec/types.ts';

const COUNT = 'com.example.sales.notes_count';
const ADD = 'com.example.sales.notes_add';
const CHARGE = 'com.example.ar.notes_charge';

type Answer = Envelope & {
  ucp: { version: string; status: string; capabilities: Record<string, unknown> };
  messages?: Array<{ type: string; code: string; content: string; severity: string }>;
};

async function notes(u: UcpHarness): Promise<number> {
  const r = await u.h.rt.store.read((q) => q.get<{ n: number }>('SELECT COUNT(*) AS n FROM notes'));
  return Number(r!.n);
}

async function auditRows(
  u: UcpHarness,
  verb: string,
): Promise<Array<{ status: string; reason: string | null; agent_type: string; user_id: number }>> {
  await u.h.rt.auditBuffer.flush();
  return u.h.rt.store.read((q) =>
    q.all(
      'SELECT status, reason, agent_type, user_id FROM audit_log WHERE action_type = ? ORDER BY audit_id',
      [verb],
    ),
  );
}

async function assertSigned(u: UcpHarness, res: UcpResponse): Promise<void> {
  const profile = (await u.get('/.well-known/ucp')).json();
  await verifyResponse({
    status: res.status,
    headers: res.headers,
    body: res.bytes,
    url: res.url,
    keys: profileKeys(profile),
  });
}

describe('UCP dispatch', () => {
  it('refuses a capability outside the platform allow-list (403 capability_not_allowed), signed, nothing run', async (t) => {
    const u = await createUcpHarness(t);
    await u.configure({
      platforms: [
        {
          profile: u.platform.url,
          role: 'employee',
          max_class: 'WRITE_REVERSIBLE',
          allow: ['com.example.sales.notes_count', 'com.example.ops.*'],
        },
      ],
    });
    assert.equal((await u.call(COUNT, {})).status, 200);
    assert.equal((await u.call('com.example.ops.verbs_list', {})).status, 200, 'prefix.* pattern');
    const res = await u.call(ADD, { text: 'x' });
    assert.equal(res.status, 403);
    const body = res.json<Answer>();
    assert.equal(body.error!.reason, 'capability_not_allowed');
    assert.equal(body.ucp.status, 'error');
    assert.deepEqual(body.messages![0]!.code, 'capability_not_allowed');
    await assertSigned(u, res);
    assert.equal(await notes(u), 0);
    // Nothing ran, but the refusal is an audited attempt of the platform (issue 30 row 8).
    const rows = await auditRows(u, 'notes_add');
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.reason, 'capability_not_allowed');
    assert.equal(rows[0]!.status, 'denied');
    assert.equal(typeof body.audit_id, 'number');
  });

  it('gives an unconfigured role read_only: writes answer role_denied from the pipeline (audited)', async (t) => {
    const u = await createUcpHarness(t);
    await u.configure({ platforms: [{ profile: u.platform.url, max_class: 'WRITE_REVERSIBLE' }] });
    const res = await u.call(ADD, { text: 'x' });
    assert.equal(res.status, 403);
    assert.equal(res.json<Answer>().error!.reason, 'role_denied');
    const rows = await auditRows(u, 'notes_add');
    assert.deepEqual(
      rows.map((r) => [r.status, r.reason]),
      [['denied', 'role_denied']],
    );
    assert.equal(rows[0]!.agent_type, `ucp:${new URL(u.platform.url).host}`);
  });

  it('a signature implies a confirmation within the allowance: preflight + confirm, a signed receipt', async (t) => {
    const u = await createUcpHarness(t);
    const res = await u.call(ADD, { text: 'hello' });
    assert.equal(res.status, 200, res.text);
    const body = res.json<Answer & { result: { note_id: number; attestation: { kid: string } } }>();
    assert.equal(body.ok, true);
    assert.equal(body.ucp.status, 'success');
    assert.equal(typeof body.audit_id, 'number');
    assert.equal(body.result.attestation.kid, (await u.h.rt.keys.signingKey(u.h.companyId)).kid);
    assert.equal(await notes(u), 1);
    const rows = await auditRows(u, 'notes_add');
    assert.deepEqual(
      rows.map((r) => r.status),
      ['pending', 'completed'],
    );
    await assertSigned(u, res);
  });

  it('a class above the allowance is consent_not_implied (403): the nonce is withheld, nothing written', async (t) => {
    const u = await createUcpHarness(t);
    await u.configure({ platforms: [{ profile: u.platform.url, role: 'employee' }] });
    const res = await u.call(ADD, { text: 'hello' });
    assert.equal(res.status, 403);
    const body = res.json<Answer>();
    assert.equal(body.error!.reason, 'consent_not_implied');
    assert.equal(body.consent, undefined);
    assert.doesNotMatch(res.text, /"nonce"/);
    assert.equal(await notes(u), 0);
    assert.deepEqual(
      (await auditRows(u, 'notes_add')).map((r) => r.status),
      ['pending'],
    );
    assert.equal((await u.call(COUNT, {})).status, 200, 'reads still run');
  });

  it('typed-phrase classes are never implied: 202 pending, approved out of band, then confirmed with Solid-Consent-Nonce', async (t) => {
    const u = await createUcpHarness(t);
    await u.configure({
      platforms: [{ profile: u.platform.url, role: 'admin', max_class: 'WRITE_REVERSIBLE' }],
    });
    const first = await u.call(CHARGE, { amount_cents: 500 });
    assert.equal(first.status, 202, first.text);
    const pending = first.json<Answer>();
    assert.equal(pending.error!.reason, 'dispatch_pending');
    assert.equal(pending.consent!.gate, 'typed_phrase');
    assert.equal(pending.messages![0]!.severity, 'requires_buyer_review');
    assert.match(pending.error!.hint!, /Solid-Consent-Nonce/);
    assert.match(pending.error!.hint!, new RegExp(pending.consent!.approval_id!));
    await assertSigned(u, first);
    const nonce = pending.consent!.nonce;
    const early = await u.call(CHARGE, { amount_cents: 500 }, { headers: { 'solid-consent-nonce': nonce } });
    assert.equal(early.status, 202, 'still waiting for the human');
    const approved = await u.h.rt.dispatch(
      { surface: 'cli', principal: u.h.human('owner') },
      'approvals.approve',
      { approval_id: pending.consent!.approval_id, typed_phrase: 'CHARGE 500 CENTS' },
    );
    assert.equal(approved.ok, true, JSON.stringify(approved.error));
    const done = await u.call(CHARGE, { amount_cents: 500 }, { headers: { 'solid-consent-nonce': nonce } });
    assert.equal(done.status, 200, done.text);
    assert.equal(done.json<Answer & { result: { charged_cents: number } }>().result!.charged_cents, 500);
    const again = await u.call(CHARGE, { amount_cents: 500 }, { headers: { 'solid-consent-nonce': nonce } });
    assert.equal(again.status, 403);
    assert.equal(again.json<Answer>().error!.reason, 'nonce_replayed');
    const changed = await u.call(
      CHARGE,
      { amount_cents: 9000 },
      { headers: { 'solid-consent-nonce': nonce } },
    );
    assert.equal(
      changed.json<Answer>().error!.reason,
      'nonce_invalid',
      'the nonce is bound to the arguments',
    );
  });

  it('the consent nonce header must be covered by the signature', async (t) => {
    const u = await createUcpHarness(t);
    const res = await u.call(
      CHARGE,
      { amount_cents: 5 },
      {
        tamper: (s) => {
          s.headers['solid-consent-nonce'] = 'injected';
        },
      },
    );
    assert.equal(res.status, 400);
    assert.equal(res.json<{ code: string }>().code, 'components_missing');
  });

  it('Idempotency-Key: same key and body replays the receipt; same key, other body is 409', async (t) => {
    const u = await createUcpHarness(t);
    const key = '7f1d3a52-5a2c-4c3e-9d0e-6b8f2a1c0d11';
    const a = await u.call(ADD, { text: 'once' }, { idempotencyKey: key });
    assert.equal(a.status, 200);
    const b = await u.call(ADD, { text: 'once' }, { idempotencyKey: key });
    assert.equal(b.status, 200);
    assert.equal(b.headers['idempotent-replayed'], 'true');
    assert.equal(b.json<Answer>().replayed, true);
    assert.equal(b.json<Answer>().audit_id, a.json<Answer>().audit_id);
    assert.equal(await notes(u), 1);
    const c = await u.call(ADD, { text: 'twice' }, { idempotencyKey: key });
    assert.equal(c.status, 409);
    assert.equal(c.json<Answer>().error!.reason, 'idempotency_key_reused');
    assert.equal(await notes(u), 1);
  });

  it('answers unknown capabilities, non-JSON and malformed bodies and invalid input in the ucp envelope', async (t) => {
    const u = await createUcpHarness(t);
    const unknown = await u.call('com.example.sales.nope', {});
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json<Answer>().error!.reason, 'not_found');
    assert.equal(
      (await u.call('com.example.sales.notes_hidden', {})).status,
      404,
      'a verb not on ucp is no capability',
    );
    const text = await u.call(ADD, undefined, {
      rawBody: 'text=1',
      headers: { 'content-type': 'text/plain' },
    });
    assert.equal(text.status, 415);
    assert.equal(text.json<Answer>().error!.reason, 'unsupported_media_type');
    const bad = await u.call(ADD, undefined, { rawBody: '{"text": ' });
    assert.equal(bad.status, 400);
    assert.equal(bad.json<Answer>().error!.reason, 'invalid_request');
    const invalid = await u.call(ADD, { text: '' });
    assert.equal(invalid.status, 400);
    const body = invalid.json<Answer>();
    assert.equal(body.error!.reason, 'invalid_input');
    assert.equal(body.error!.path, '/text');
    assert.equal(body.messages![0]!.severity, 'recoverable');
    await assertSigned(u, invalid);
    const identity = await u.call(COUNT, { company_id: 3 });
    assert.equal(identity.json<Answer>().error!.reason, 'identity_override');
  });

  it('runs a capability on another tenant through /t/{id} with that tenant’s trust list and key', async (t) => {
    const u = await createUcpHarness(t);
    const refused = await u.call(COUNT, {}, { tenant: u.h.otherCompanyId });
    assert.equal(refused.json<{ code: string }>().code, 'profile_not_trusted', 'tenant 3 trusts nobody yet');
    await u.configure({ platforms: [{ profile: u.platform.url }] }, u.h.otherCompanyId);
    const res = await u.call(COUNT, {}, { tenant: u.h.otherCompanyId });
    assert.equal(res.status, 200, res.text);
    const profile = (await u.get(`/t/${u.h.otherCompanyId}/.well-known/ucp`)).json();
    const verified = await verifyResponse({
      status: res.status,
      headers: res.headers,
      body: res.bytes,
      url: res.url,
      keys: profileKeys(profile),
    });
    assert.equal(verified.keyid, (await u.h.rt.keys.signingKey(u.h.otherCompanyId)).kid);
  });
});

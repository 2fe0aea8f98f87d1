/**
 * Which agent did it (issue 32 row 7): audit.trail names each entry's agent by the name the owner
 * gave its key (agent_name), and `key_id` narrows the trail to one agent — what it did and what
 * was refused — and to nothing of another agent's.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { counterRuntime, consented } from '../support/counter-verbs.ts';
import { dispatchAs } from '../support/keyed.ts';

interface Entry {
  action: string;
  status: string;
  reason: string | null;
  key_id: string | null;
  agent_name: string | null;
}

it("names the agent by its key's name and shows one agent's actions and refusals by key_id", async (t) => {
  const h = await counterRuntime(t);
  const bot = await h.rt.createApiKey({
    company_id: h.companyId,
    user_id: 3,
    role: 'employee',
    agent_type: 'claude-desktop',
    name: 'Front-desk bot',
  });
  const done = await consented(h, bot, 'counter.add', { name: 'till', by: 2 });
  assert.equal(done.ok, true, JSON.stringify(done.error));
  const refused = await dispatchAs(h.rt, { surface: 'http', apiKey: bot }, 'counter.charge', {
    name: 'till',
    cents: 5,
  });
  assert.equal(refused.error?.reason, 'role_denied');
  // Another agent's action on the same counter.
  assert.equal((await consented(h, h.keys.employee, 'counter.add', { name: 'till', by: 1 })).ok, true);
  const keyId = (await h.rt.store.read((q) =>
    q.get<{ key_id: string }>("SELECT key_id FROM api_keys WHERE name = 'Front-desk bot'"),
  ))!.key_id;
  const trail = await dispatchAs(h.rt, { surface: 'http', apiKey: h.keys.admin }, 'audit.trail', {
    key_id: keyId,
    scope: 'business',
  });
  assert.equal(trail.ok, true, JSON.stringify(trail.error));
  const entries = (trail.result as { entries: Entry[] }).entries;
  assert.ok(entries.length >= 2);
  for (const e of entries) {
    assert.equal(e.key_id, keyId, 'only this agent');
    assert.equal(e.agent_name, 'Front-desk bot');
  }
  assert.ok(entries.some((e) => e.action === 'counter.add' && e.status === 'completed'));
  assert.ok(entries.some((e) => e.action === 'counter.charge' && e.reason === 'role_denied'));
  const all = await dispatchAs(h.rt, { surface: 'http', apiKey: h.keys.admin }, 'audit.trail', {
    scope: 'business',
  });
  const others = (all.result as { entries: Entry[] }).entries.filter((e) => e.key_id !== keyId);
  assert.ok(others.length > 0);
  for (const e of others) assert.notEqual(e.agent_name, 'Front-desk bot');
});

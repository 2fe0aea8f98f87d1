/**
 * Two tenants never see each other's rows through any verb of the demo pack. Generated from the
 * registry: every pack verb is called with a working argument set (sample-calls.ts) in which
 * every identifier argument (any *_id, charge_ref, slug, invoice_number) is replaced by the OTHER
 * tenant's identifier. Reads must answer not_found or an answer that holds none of the other
 * tenant's data (an empty page); writes must answer not_found and change nothing of either
 * tenant. A new verb with a new kind of identifier fails here until the map below covers it.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { demoPack } from '../../src/business/pack.ts';
import { BUSINESS_TABLES } from '../../src/business/schema.ts';
import type { Envelope, JsonSchema } from '../../src/spec/types.ts';
import type { Queryable } from '../../src/store/store.ts';
import { openDemoRuntime, type DemoRuntime } from '../support/demo.ts';
import { NEVER_RUN, SAMPLES, type SampleState } from './verbs/sample-calls.ts';

const ID_LIKE = /(_id|^charge_ref|^slug|^invoice_number)$/;
/** Keys naming a thing inside the caller's own namespace: a write with one may create the caller's own row (never touch the other tenant's). */
const NAMESPACED = new Set(['slug']);

interface TenantIds {
  values: Record<string, unknown>;
  /** Strings only this tenant's rows contain (emails, charge refs, droplet name and IP…). */
  marks: string[];
}

const one = async (q: Queryable, sql: string, params: unknown[]): Promise<unknown> =>
  Object.values((await q.get<Record<string, unknown>>(sql, params)) ?? {})[0];

/** Identifiers of tenant `c` by argument name, and the strings that would betray its data. */
async function tenantIds(
  d: DemoRuntime,
  c: number,
  other: number,
  ownArticleSlug: string,
): Promise<TenantIds> {
  return d.rt.store.read(async (q) => {
    const contact = await one(
      q,
      'SELECT contact_id FROM deals WHERE company_id = ? GROUP BY contact_id ORDER BY COUNT(*) DESC, contact_id LIMIT 1',
      [c],
    );
    const tech = await one(
      q,
      `SELECT user_id FROM employees WHERE company_id = ? AND title = 'technician' ORDER BY user_id LIMIT 1`,
      [c],
    );
    const values: Record<string, unknown> = {
      customer_id: contact,
      contact_id: contact,
      deal_id: await one(q, 'SELECT id FROM deals WHERE company_id = ? ORDER BY id LIMIT 1', [c]),
      appointment_id: await one(
        q,
        `SELECT id FROM appointments WHERE company_id = ? AND status = 'scheduled' ORDER BY id LIMIT 1`,
        [c],
      ),
      invoice_id: await one(
        q,
        `SELECT id FROM invoices WHERE company_id = ? AND status = 'open' ORDER BY id LIMIT 1`,
        [c],
      ),
      invoice_number: await one(q, 'SELECT MAX(number) FROM invoices WHERE company_id = ?', [c]),
      payment_id: await one(
        q,
        `SELECT id FROM payments WHERE company_id = ? AND status = 'captured' ORDER BY id LIMIT 1`,
        [c],
      ),
      transaction_id: await one(
        q,
        `SELECT id FROM payments WHERE company_id = ? AND status = 'captured' ORDER BY id LIMIT 1`,
        [c],
      ),
      charge_ref: await one(
        q,
        `SELECT charge_ref FROM payments WHERE company_id = ? AND status = 'captured' ORDER BY id LIMIT 1`,
        [c],
      ),
      payment_method_id: await one(
        q,
        'SELECT id FROM payment_methods WHERE company_id = ? ORDER BY id LIMIT 1',
        [c],
      ),
      part_id: await one(q, 'SELECT id FROM parts WHERE company_id = ? ORDER BY id LIMIT 1', [c]),
      article_id: await one(q, 'SELECT id FROM kb_articles WHERE company_id = ? ORDER BY id LIMIT 1', [c]),
      slug: ownArticleSlug,
      droplet_id: await one(q, 'SELECT id FROM droplets WHERE company_id = ? ORDER BY id LIMIT 1', [c]),
      technician_user_id: tech,
      owner_user_id: tech,
      employee_user_id: tech,
      related_entity_id: contact,
      call_id: await one(q, 'SELECT id FROM calls WHERE company_id = ? ORDER BY id LIMIT 1', [c]),
      voicemail_id: await one(q, 'SELECT id FROM voicemails WHERE company_id = ? ORDER BY id LIMIT 1', [c]),
      review_id: await one(q, 'SELECT id FROM reviews WHERE company_id = ? ORDER BY id LIMIT 1', [c]),
      assigned_user_id: tech,
    };
    for (const [k, v] of Object.entries(values)) assert.notEqual(v, undefined, `tenant ${c} has a ${k}`);
    // Strings of tenant c that appear nowhere in the other tenant's rows.
    const candidates = [
      ...(
        await q.all<{ s: string }>(
          'SELECT email AS s FROM contacts WHERE company_id = ? AND email IS NOT NULL',
          [c],
        )
      ).map((r) => r.s),
      ...(
        await q.all<{ s: string }>(
          'SELECT email AS s FROM employees WHERE company_id = ? UNION SELECT name FROM employees WHERE company_id = ?',
          [c, c],
        )
      ).map((r) => r.s),
      ...(await q.all<{ s: string }>('SELECT name AS s FROM contacts WHERE company_id = ?', [c])).map(
        (r) => r.s,
      ),
      ...(await q.all<{ s: string }>('SELECT charge_ref AS s FROM payments WHERE company_id = ?', [c])).map(
        (r) => r.s,
      ),
      ...(
        await q.all<{ s: string }>(
          'SELECT name AS s FROM droplets WHERE company_id = ? UNION SELECT ip FROM droplets WHERE company_id = ?',
          [c, c],
        )
      ).map((r) => r.s),
      ownArticleSlug,
    ];
    const otherRows: unknown[] = [];
    for (const table of ['contacts', 'employees', 'payments', 'droplets', 'kb_articles'])
      otherRows.push(await q.all(`SELECT * FROM ${table} WHERE company_id = ?`, [other]));
    const otherText = JSON.stringify(otherRows);
    return { values, marks: candidates.filter((s) => !otherText.includes(s)) };
  });
}

/** A fingerprint of one tenant's business rows. */
async function tenantHash(d: DemoRuntime, c: number): Promise<string> {
  return d.rt.store.read(async (q) => {
    const h = createHash('sha256');
    for (const t of BUSINESS_TABLES)
      h.update(JSON.stringify(await q.all(`SELECT * FROM ${t} WHERE company_id = ? ORDER BY id`, [c])));
    return h.digest('hex');
  });
}

/** The sample args of every pack verb (running the samples that prepare later ones). */
async function sampleArgs(d: DemoRuntime): Promise<Map<string, Record<string, unknown>>> {
  const state: SampleState = {};
  const out = new Map<string, Record<string, unknown>>();
  for (const [name, sample] of Object.entries(SAMPLES)) {
    if (name === 'scheduling.preview_outcome' || name === 'scheduling.record_outcome') {
      out.set(name, { appointment_id: 1, outcome: 'completed' });
      continue;
    }
    out.set(name, await sample(d, state));
  }
  return out;
}

/**
 * Replace the identifier arguments of a working call by the other tenant's: those the call
 * passes; when it passes none, every optional identifier filter the verb accepts.
 */
function foreignArgs(
  name: string,
  schema: JsonSchema,
  base: Record<string, unknown>,
  foreign: TenantIds,
): { args: Record<string, unknown>; replaced: string[] } {
  const args = structuredClone(base);
  const idProps = Object.keys((schema.properties ?? {}) as object).filter((k) => ID_LIKE.test(k));
  for (const key of idProps)
    assert.ok(
      key in foreign.values,
      `${name}: identifier argument "${key}" has no cross-tenant value in isolation.test.ts; add one`,
    );
  const passed = idProps.filter((k) => k in base);
  const replaced =
    passed.length > 0 ? passed : idProps.filter((k) => !(k === 'article_id' && idProps.includes('slug')));
  for (const key of replaced) args[key] = foreign.values[key];
  return { args, replaced };
}

/** The other tenant's strings in an answer, apart from the identifiers the caller passed itself. */
function leaks(env: Envelope, marks: readonly string[], args: Record<string, unknown>): string[] {
  const text = JSON.stringify(env);
  const given = JSON.stringify(args);
  return marks.filter((m) => text.includes(m) && !given.includes(m));
}

async function assertIsolated(
  d: DemoRuntime,
  who: { apiKey: string | null },
  me: number,
  other: number,
  foreign: TenantIds,
  samples: Map<string, Record<string, unknown>>,
  writes: boolean,
): Promise<void> {
  const verbs = demoPack.verbs
    .map((v) => d.rt.registry.get(v.name)!)
    .filter((v) => !NEVER_RUN.has(v.name) && v.isWrite === writes);
  assert.ok(verbs.length > 0);
  for (const verb of verbs) {
    const { args, replaced } = foreignArgs(verb.name, verb.inputSchema, samples.get(verb.name)!, foreign);
    if (writes && replaced.length === 0) continue; // nothing of another tenant to name
    const before = writes ? [await tenantHash(d, me), await tenantHash(d, other)] : [];
    const env = writes ? await d.commit(who, verb.name, args) : await d.call(who, verb.name, args);
    assert.deepEqual(
      leaks(env, foreign.marks, args),
      [],
      `${verb.name} as tenant ${me} leaked tenant ${other}'s data`,
    );
    if (!env.ok) {
      assert.ok(
        ['not_found', 'tier_denied', 'role_denied', 'auth_required'].includes(env.error!.reason),
        `${verb.name}: ${JSON.stringify(env.error)}`,
      );
      if (env.error!.reason === 'not_found')
        assert.match(
          env.error!.message,
          /^[a-z][a-z ]+ \S+ not found$/,
          `${verb.name}: the message names the entity type`,
        );
    } else {
      const ownNamespace = replaced.every((k) => NAMESPACED.has(k));
      assert.ok(
        !writes || ownNamespace,
        `${verb.name} wrote with another tenant's ids: ${JSON.stringify(args)}`,
      );
      const data = (env.result as { data?: { items?: unknown[] } }) ?? {};
      if (replaced.length > 0 && !ownNamespace) {
        assert.ok(
          data.data?.items !== undefined,
          `${verb.name} answered ok for another tenant's ${replaced.join(', ')}: ${JSON.stringify(env.result).slice(0, 300)}`,
        );
        assert.equal(
          data.data.items.length,
          0,
          `${verb.name}: filtering by another tenant's ${replaced.join(', ')} finds nothing`,
        );
      }
    }
    if (writes) {
      assert.equal(
        await tenantHash(d, other),
        before[1],
        `${verb.name}: nothing changed in the other tenant`,
      );
      if (!env.ok)
        assert.equal(await tenantHash(d, me), before[0], `${verb.name}: a refused write changed nothing`);
    }
  }
}

async function setup(t: import('node:test').TestContext) {
  const d = await openDemoRuntime(t);
  // Invoice numbers are per-tenant namespaces (both start at 4001); move the second business's
  // out of the main one's range so a number names exactly one tenant's invoice.
  await d.rt.store.write((tx) =>
    tx.run('UPDATE invoices SET number = number + 10000 WHERE company_id = ?', [d.secondCompanyId]),
  );
  // An article only the second business has (KB articles of both come from the same catalogue).
  const own = await d.commit({ apiKey: d.secondOwnerKey }, 'kb.publish_article', {
    title: 'Boise valley frost lines',
    body: 'Bury lines 36 inches deep.',
    slug: 'boise-valley-frost-lines',
  });
  assert.equal(own.ok, true, JSON.stringify(own.error));
  const mainOwn = await d.commit('owner', 'kb.publish_article', {
    title: 'Summit snow melt systems',
    body: 'Glycol loops under the driveway.',
    slug: 'summit-snow-melt-systems',
  });
  assert.equal(mainOwn.ok, true, JSON.stringify(mainOwn.error));
  const samples = await sampleArgs(d);
  const second = await tenantIds(d, d.secondCompanyId, d.companyId, 'boise-valley-frost-lines');
  const main = await tenantIds(d, d.companyId, d.secondCompanyId, 'summit-snow-melt-systems');
  assert.ok(
    second.marks.length > 50 && main.marks.length > 50,
    'enough distinctive strings to detect a leak',
  );
  return { d, samples, second, main };
}

test('every read verb of the pack, called by the main business with the second business’s ids, answers not_found or nothing of theirs', async (t) => {
  const { d, samples, second } = await setup(t);
  await assertIsolated(d, { apiKey: d.keys.owner }, d.companyId, d.secondCompanyId, second, samples, false);
});

test('every read verb, called by the second business (and by a keyless sandbox caller) with the main business’s ids, sees nothing of it', async (t) => {
  const { d, samples, main } = await setup(t);
  await assertIsolated(d, { apiKey: d.secondOwnerKey }, d.secondCompanyId, d.companyId, main, samples, false);
  await assertIsolated(d, { apiKey: null }, d.sandboxId, d.companyId, main, samples, false);
});

test('every write verb of the pack with the other tenant’s ids answers not_found and changes nothing in either tenant', async (t) => {
  const { d, samples, second } = await setup(t);
  await assertIsolated(d, { apiKey: d.keys.owner }, d.companyId, d.secondCompanyId, second, samples, true);
  // A mixed call: the caller's own invoice paid with the other tenant's stored card.
  const before = await tenantHash(d, d.companyId);
  const env = await d.commit('owner', 'charge_invoice', {
    invoice_number: d.fixtures.open_invoice.number,
    amount_cents: 5000,
    payment_method_id: second.values.payment_method_id,
  });
  assert.equal(env.error?.reason, 'not_found');
  assert.match(env.error!.message, /^payment method \d+ not found$/);
  assert.equal(await tenantHash(d, d.companyId), before);
});

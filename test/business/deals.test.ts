import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  countStageTransitions,
  createDeal,
  deleteDeal,
  getDeal,
  listAllStageHistories,
  listContactDeals,
  listDealStageHistory,
  moveDealStage,
  searchDeals,
  updateDeal,
} from '../../src/business/data/deals.ts';
import { eraseContact } from '../../src/business/data/contacts.ts';
import { OPEN_DEAL_STAGES } from '../../src/business/schema.ts';
import { DEMO_FIXTURES as F } from '../../src/business/seed.ts';
import { MAIN, NOW, openSeededStore } from './seeded-store.ts';

const LATER = new Date(NOW.getTime() + 3_600_000);

test('createDeal writes the deal and its creation history row; deleteDeal undoes it', async (t) => {
  const { store } = await openSeededStore(t);
  const created = await store.write((tx) =>
    createDeal(
      tx,
      MAIN,
      { contact_id: F.customer_id, title: 'Boiler replacement', amount_cents: 1_250_000 },
      F.admin_user_id,
      LATER,
    ),
  );
  assert.deepEqual(
    [created.deal.stage, created.deal.owner_user_id, created.deal.amount_cents, created.deal.closed_at],
    ['new', F.admin_user_id, 1_250_000, null],
  );
  assert.deepEqual(
    [
      created.history.from_stage,
      created.history.to_stage,
      created.history.changed_by_user_id,
      created.history.changed_at,
    ],
    [null, 'new', F.admin_user_id, LATER.toISOString()],
  );
  await store.read(async (q) => {
    assert.ok((await listContactDeals(q, MAIN, F.customer_id)).some((d) => d.id === created.deal.id));
    assert.deepEqual(await listDealStageHistory(q, MAIN, created.deal.id), [created.history]);
  });
  const deleted = await store.write((tx) => deleteDeal(tx, MAIN, created.deal.id));
  assert.deepEqual(deleted, created.deal);
  await store.read(async (q) => {
    assert.equal(await getDeal(q, MAIN, created.deal.id), undefined);
    assert.deepEqual(await listDealStageHistory(q, MAIN, created.deal.id), []);
  });
});

test('createDeal refuses bad input, unknown contacts or owners, and erased contacts', async (t) => {
  const { store } = await openSeededStore(t);
  const base = { contact_id: F.customer_id, title: 'X', amount_cents: 100 };
  await assert.rejects(
    store.write((tx) => createDeal(tx, MAIN, { ...base, title: '' }, 1, LATER)),
    { code: 'invalid_input', message: /^title/ },
  );
  await assert.rejects(
    store.write((tx) => createDeal(tx, MAIN, { ...base, amount_cents: 10.5 }, 1, LATER)),
    { code: 'invalid_input', message: /^amount_cents/ },
  );
  await assert.rejects(
    store.write((tx) => createDeal(tx, MAIN, { ...base, amount_cents: -1 }, 1, LATER)),
    { code: 'invalid_input' },
  );
  await assert.rejects(
    store.write((tx) => createDeal(tx, MAIN, { ...base, stage: 'closed' as never }, 1, LATER)),
    { code: 'invalid_input', message: /^stage/ },
  );
  await assert.rejects(
    store.write((tx) => createDeal(tx, MAIN, { ...base, contact_id: 999_999 }, 1, LATER)),
    { code: 'not_found', message: 'contact 999999 not found' },
  );
  await assert.rejects(
    store.write((tx) => createDeal(tx, MAIN, base, 777, LATER)),
    { code: 'not_found', message: 'employee 777 not found' },
  );
  await store.write((tx) => eraseContact(tx, MAIN, F.customer_id, LATER));
  await assert.rejects(
    store.write((tx) => createDeal(tx, MAIN, base, 1, LATER)),
    { code: 'contact_erased' },
  );
});

test('moveDealStage records the change, closes and reopens deals, and refuses the same stage', async (t) => {
  const { store } = await openSeededStore(t);
  const historyBefore = await store.read((q) => listDealStageHistory(q, MAIN, F.proposal_deal_id));
  const won = await store.write((tx) =>
    moveDealStage(tx, MAIN, F.proposal_deal_id, 'won', F.admin_user_id, LATER),
  );
  assert.equal(won.previous.stage, 'proposal_sent');
  assert.equal(won.previous.closed_at, null);
  assert.deepEqual([won.deal.stage, won.deal.closed_at], ['won', LATER.toISOString()]);
  assert.deepEqual(
    [won.history.from_stage, won.history.to_stage, won.history.changed_by_user_id],
    ['proposal_sent', 'won', F.admin_user_id],
  );
  const back = await store.write((tx) =>
    moveDealStage(tx, MAIN, F.proposal_deal_id, won.previous.stage, F.admin_user_id, LATER),
  );
  assert.deepEqual([back.deal.stage, back.deal.closed_at], ['proposal_sent', null]);
  const chain = await store.read((q) => listDealStageHistory(q, MAIN, F.proposal_deal_id));
  assert.deepEqual(
    chain.map((h) => [h.from_stage, h.to_stage]),
    [
      ...historyBefore.map((h) => [h.from_stage, h.to_stage]),
      ['proposal_sent', 'won'],
      ['won', 'proposal_sent'],
    ],
  );
  await assert.rejects(
    store.write((tx) => moveDealStage(tx, MAIN, F.proposal_deal_id, 'proposal_sent', 1, LATER)),
    { code: 'same_stage' },
  );
  await assert.rejects(
    store.write((tx) => moveDealStage(tx, MAIN, F.proposal_deal_id, 'archived' as never, 1, LATER)),
    { code: 'invalid_input' },
  );
  await assert.rejects(
    store.write((tx) => moveDealStage(tx, MAIN, 999_999, 'won', 1, LATER)),
    { code: 'not_found', message: 'deal 999999 not found' },
  );
});

test('updateDeal returns the previous values of the changed fields', async (t) => {
  const { store } = await openSeededStore(t);
  const r = await store.write((tx) =>
    updateDeal(tx, MAIN, F.proposal_deal_id, { amount_cents: 90_000, owner_user_id: F.owner_user_id }, LATER),
  );
  assert.deepEqual(r.previous, { amount_cents: 85_000, owner_user_id: F.admin_user_id });
  assert.deepEqual([r.deal.amount_cents, r.deal.owner_user_id], [90_000, F.owner_user_id]);
  await assert.rejects(
    store.write((tx) => updateDeal(tx, MAIN, F.proposal_deal_id, { amount_cents: 90_000 }, LATER)),
    { code: 'no_change' },
  );
  await assert.rejects(
    store.write((tx) => updateDeal(tx, MAIN, F.proposal_deal_id, { stage: 'won' } as never, LATER)),
    { code: 'invalid_input' },
  );
  await assert.rejects(
    store.write((tx) => updateDeal(tx, MAIN, F.proposal_deal_id, { owner_user_id: 777 }, LATER)),
    { code: 'not_found', message: 'employee 777 not found' },
  );
});

test('searchDeals and the transition statistics agree with the stage histories', async (t) => {
  const { store } = await openSeededStore(t);
  await store.read(async (q) => {
    const open = await searchDeals(q, MAIN, { open: true, limit: 200 });
    assert.ok(
      open.total > 0 && open.items.every((d) => (OPEN_DEAL_STAGES as readonly string[]).includes(d.stage)),
    );
    const closed = await searchDeals(q, MAIN, { open: false, limit: 200 });
    assert.equal(open.total + closed.total, 80);
    const won = await searchDeals(q, MAIN, { stage: 'won', limit: 200 });
    assert.ok(won.items.every((d) => d.stage === 'won' && d.closed_at !== null));
    const mine = await searchDeals(q, MAIN, { contact_id: F.customer_id, open: true });
    assert.deepEqual(
      mine.items.map((d) => d.id).sort((a, b) => a - b),
      F.open_deal_ids,
    );
    const titled = await searchDeals(q, MAIN, { query: 'KITCHEN', limit: 200 });
    assert.ok(
      titled.items.length > 0 && titled.items.every((d) => d.title.toLowerCase().includes('kitchen')),
    );

    const histories = await listAllStageHistories(q, MAIN);
    const counted = new Map<string, number>();
    for (const h of histories)
      counted.set(`${h.from_stage}>${h.to_stage}`, (counted.get(`${h.from_stage}>${h.to_stage}`) ?? 0) + 1);
    const stats = await countStageTransitions(q, MAIN);
    assert.deepEqual(new Map(stats.map((s) => [`${s.from_stage}>${s.to_stage}`, s.count])), counted);
    for (let i = 1; i < stats.length; i++)
      assert.ok(stats[i - 1]!.count >= stats[i]!.count, 'most frequent first');
    const fromProposal = stats.filter((s) => s.from_stage === 'proposal_sent').map((s) => s.to_stage);
    assert.ok(fromProposal.includes('won') && fromProposal.includes('lost'), 'proposals both win and lose');
  });
});

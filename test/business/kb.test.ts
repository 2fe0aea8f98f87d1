import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  deleteKbArticle,
  getKbArticleBySlug,
  searchKbArticles,
  slugify,
  upsertKbArticle,
} from '../../src/business/data/kb.ts';
import { MAIN, NOW, openSeededStore } from './seeded-store.ts';

const LATER = new Date(NOW.getTime() + 60_000);

test('upsertKbArticle creates by slug, replaces an existing slug and returns the previous version', async (t) => {
  const { store } = await openSeededStore(t);
  const created = await store.write((tx) =>
    upsertKbArticle(
      tx,
      MAIN,
      { title: 'Winterizing outdoor spigots', body: 'Shut the valve, drain the line.', tags: ['plumbing'] },
      LATER,
    ),
  );
  assert.deepEqual(
    [created.created, created.previous, created.article.slug],
    [true, undefined, 'winterizing-outdoor-spigots'],
  );
  const original = (await store.read((q) => getKbArticleBySlug(q, MAIN, 'refund-policy')))!;
  const replaced = await store.write((tx) =>
    upsertKbArticle(
      tx,
      MAIN,
      { slug: 'refund-policy', title: 'Refund policy', body: 'Refunds within 60 days.', tags: ['billing'] },
      LATER,
    ),
  );
  assert.equal(replaced.created, false);
  assert.deepEqual(replaced.previous, original);
  assert.deepEqual(
    [replaced.article.id, replaced.article.body, replaced.article.created_at, replaced.article.updated_at],
    [original.id, 'Refunds within 60 days.', original.created_at, LATER.toISOString()],
  );
  const restored = await store.write((tx) =>
    upsertKbArticle(
      tx,
      MAIN,
      { slug: original.slug, title: original.title, body: original.body, tags: original.tags },
      LATER,
    ),
  );
  assert.deepEqual({ ...restored.article, updated_at: original.updated_at }, original);
  const removed = await store.write((tx) => deleteKbArticle(tx, MAIN, created.article.id));
  assert.deepEqual(removed, created.article);
  assert.equal(
    await store.read((q) => getKbArticleBySlug(q, MAIN, 'winterizing-outdoor-spigots')),
    undefined,
  );
  await assert.rejects(
    store.write((tx) => deleteKbArticle(tx, MAIN, created.article.id)),
    { code: 'not_found', message: /^kb article \d+ not found$/ },
  );
  await assert.rejects(
    store.write((tx) => upsertKbArticle(tx, MAIN, { slug: 'Bad Slug', title: 'x', body: 'y' }, LATER)),
    { code: 'invalid_input', message: /^slug/ },
  );
  await assert.rejects(
    store.write((tx) => upsertKbArticle(tx, MAIN, { title: '', body: 'y' }, LATER)),
    { code: 'invalid_input', message: /^title/ },
  );
  assert.equal(slugify('Heat pump vs furnace: talking points!'), 'heat-pump-vs-furnace-talking-points');
});

test('searchKbArticles ranks title matches first and filters by tag', async (t) => {
  const { store } = await openSeededStore(t);
  await store.read(async (q) => {
    const estimate = await searchKbArticles(q, MAIN, { query: 'ESTIMATE' });
    assert.ok(estimate.total >= 3);
    assert.equal(estimate.items[0]!.title, 'Estimate visits: how to write a proposal');
    assert.ok(estimate.items.slice(1).every((a) => !a.title.toLowerCase().includes('estimate')));
    assert.ok(estimate.items.every((a) => `${a.title} ${a.body}`.toLowerCase().includes('estimate')));
    const hvac = await searchKbArticles(q, MAIN, { tag: 'hvac', limit: 100 });
    assert.ok(hvac.total > 0 && hvac.items.every((a) => a.tags.includes('hvac')));
  });
});

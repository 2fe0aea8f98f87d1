/**
 * The social category of the demo business (src/business/verbs/social.ts): the reviews overview,
 * a public reply previewed, confirmed by a human and reverted (deleted), a post scheduled by an
 * admin and unscheduled, and another tenant's reviews out of reach. Runs on SQLite, and on
 * PostgreSQL with SOLID_TEST_ENGINE=postgres.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openDemoRuntime } from '../support/demo.ts';
import { unrepliedReview } from './verbs/sample-calls.ts';

const DAY = 86_400_000;

test('social.overview: review stats, unreplied reviews and scheduled posts', async (t) => {
  const d = await openDemoRuntime(t);
  const env = await d.call('read_only', 'social.overview', { unreplied: true, limit: 100 });
  assert.equal(env.ok, true, JSON.stringify(env.error));
  const data = env.result!.data as {
    reviews: { total: number; average_rating: number; by_rating: Record<string, number>; unreplied: number };
    latest_reviews: Array<{ rating: number; reply: unknown }>;
    scheduled_posts: Array<{ status: string }>;
  };
  assert.ok(data.reviews.total > 0);
  assert.equal(
    Object.values(data.reviews.by_rating).reduce((s, n) => s + n, 0),
    data.reviews.total,
  );
  assert.ok(data.reviews.average_rating >= 1 && data.reviews.average_rating <= 5);
  assert.equal(data.latest_reviews.length, data.reviews.unreplied);
  assert.ok(data.latest_reviews.every((r) => r.reply === null));
  assert.ok(data.scheduled_posts.length > 0 && data.scheduled_posts.every((p) => p.status === 'scheduled'));
});

test('a public reply: preview writes nothing, a human confirms it, revert deletes it', async (t) => {
  const d = await openDemoRuntime(t);
  const reviewId = await unrepliedReview(d);
  const args = { review_id: reviewId, body: 'Thank you, we are glad it went well!' };
  const replies = () =>
    d.rt.store.read((q) =>
      q.all<{ body: string }>('SELECT body FROM review_replies WHERE company_id = ? AND review_id = ?', [
        d.companyId,
        reviewId,
      ]),
    );
  const preview = await d.call('employee', 'social.preview_reply', args);
  assert.equal(preview.ok, true, JSON.stringify(preview.error));
  assert.equal(preview.result!.reversible, true);
  assert.deepEqual(await replies(), []);

  const pending = await d.call('employee', 'social.reply_to_review', args);
  assert.equal(pending.consent?.class, 'WRITE_REVERSIBLE', 'a public reply waits for a human');
  assert.deepEqual(await replies(), []);
  const done = await d.commit('employee', 'social.reply_to_review', args);
  assert.equal(done.ok, true, JSON.stringify(done.error));
  assert.deepEqual(await replies(), [{ body: args.body }]);
  assert.equal((await d.call('employee', 'social.preview_reply', args)).error?.reason, 'already_replied');

  const revert = await d.commit('employee', 'audit.revert', { audit_id: done.audit_id });
  assert.equal(revert.ok, true, JSON.stringify(revert.error));
  assert.deepEqual(await replies(), [], 'the reply is deleted');
});

test('a scheduled post: admin only, confirmed, then unscheduled by revert', async (t) => {
  const d = await openDemoRuntime(t);
  const args = {
    channel: 'instagram',
    body: 'Spring AC tune-ups: book now.',
    publish_at: new Date(d.rt.clock().getTime() + 2 * DAY).toISOString(),
  };
  assert.equal((await d.call('employee', 'social.schedule_post', args)).error?.reason, 'role_denied');
  const preview = await d.call('admin', 'social.preview_post', args);
  assert.equal(preview.ok, true, JSON.stringify(preview.error));
  const past = { ...args, publish_at: new Date(d.rt.clock().getTime() - DAY).toISOString() };
  assert.equal((await d.call('admin', 'social.preview_post', past)).error?.reason, 'time_in_past');
  const done = await d.commit('admin', 'social.schedule_post', args);
  assert.equal(done.ok, true, JSON.stringify(done.error));
  const id = Number(done.result!.post_id);
  const status = async () =>
    (
      await d.rt.store.read((q) =>
        q.get<{ status: string }>('SELECT status FROM scheduled_posts WHERE company_id = ? AND id = ?', [
          d.companyId,
          id,
        ]),
      )
    )?.status;
  assert.equal(await status(), 'scheduled');
  const revert = await d.commit('admin', 'audit.revert', { audit_id: done.audit_id });
  assert.equal(revert.ok, true, JSON.stringify(revert.error));
  assert.equal(await status(), 'cancelled');
});

test("another tenant's reviews are out of reach", async (t) => {
  const d = await openDemoRuntime(t);
  const theirs = await d.rt.store.read((q) =>
    q.get<{ id: unknown }>('SELECT MIN(id) AS id FROM reviews WHERE company_id = ?', [d.secondCompanyId]),
  );
  const args = { review_id: Number(theirs!.id), body: 'Hello' };
  const replies = async () =>
    Number(
      (await d.rt.store.read((q) =>
        q.get<{ n: unknown }>('SELECT COUNT(*) AS n FROM review_replies WHERE review_id = ?', [
          args.review_id,
        ]),
      ))!.n,
    );
  const before = await replies();
  assert.equal((await d.call('owner', 'social.preview_reply', args)).error?.reason, 'not_found');
  assert.equal((await d.commit('owner', 'social.reply_to_review', args)).error?.reason, 'not_found');
  assert.equal(await replies(), before, 'no reply was written on their review');
  const mine = await d.call('owner', 'social.overview', { limit: 100 });
  const ids = (mine.result!.data as { latest_reviews: Array<{ id: number }> }).latest_reviews.map(
    (r) => r.id,
  );
  assert.ok(!ids.includes(args.review_id), "the other company's review is not listed");
});

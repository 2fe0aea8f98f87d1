/**
 * Social: the company's public reviews (Google, Yelp, Facebook), its replies to them (one per
 * review), and posts scheduled on its social channels. Tenant-scoped reads and the reply / post
 * writes. Times are ISO-8601 UTC TEXT (data/iso-time.ts).
 */
import type { Queryable } from '../../store/store.ts';
import type { PostChannel, PostStatus, ReviewPlatform } from '../schema.ts';
import { DomainError, notFound } from './domain-error.ts';
import { isoTime } from './iso-time.ts';
import { num, numOrNull } from './row-values.ts';

export interface Review {
  id: number;
  contact_id: number | null;
  platform: ReviewPlatform;
  rating: number;
  author: string;
  body: string;
  posted_at: string;
  reply: { id: number; body: string; created_at: string } | null;
}

export interface ScheduledPost {
  id: number;
  channel: PostChannel;
  body: string;
  publish_at: string;
  status: PostStatus;
  author_user_id: number | null;
  created_at: string;
  updated_at: string;
}

const REVIEW_SELECT = `SELECT r.id, r.contact_id, r.platform, r.rating, r.author, r.body, r.posted_at,
  p.id AS reply_id, p.body AS reply_body, p.created_at AS reply_at
  FROM reviews r LEFT JOIN review_replies p ON p.company_id = r.company_id AND p.review_id = r.id`;
const POST_COLUMNS = 'id, channel, body, publish_at, status, author_user_id, created_at, updated_at';

function toReview(r: Record<string, unknown>): Review {
  return {
    id: num(r.id),
    contact_id: numOrNull(r.contact_id),
    platform: r.platform as ReviewPlatform,
    rating: num(r.rating),
    author: String(r.author),
    body: String(r.body),
    posted_at: String(r.posted_at),
    reply:
      r.reply_id === null || r.reply_id === undefined
        ? null
        : { id: num(r.reply_id), body: String(r.reply_body), created_at: String(r.reply_at) },
  };
}

function toPost(r: Record<string, unknown>): ScheduledPost {
  return {
    id: num(r.id),
    channel: r.channel as PostChannel,
    body: String(r.body),
    publish_at: String(r.publish_at),
    status: r.status as PostStatus,
    author_user_id: numOrNull(r.author_user_id),
    created_at: String(r.created_at),
    updated_at: String(r.updated_at),
  };
}

/** Reviews newest first, optionally only those without a reply, at most `limit`. */
export async function listReviews(
  q: Queryable,
  companyId: number,
  filter: { unreplied?: boolean; limit: number },
): Promise<Review[]> {
  const rows = await q.all(
    `${REVIEW_SELECT} WHERE r.company_id = ?${filter.unreplied === true ? ' AND p.id IS NULL' : ''} ORDER BY r.posted_at DESC, r.id DESC LIMIT ?`,
    [companyId, filter.limit],
  );
  return rows.map(toReview);
}

/** Count, average rating, count per star and unreplied count of all the company's reviews. */
export async function reviewStats(
  q: Queryable,
  companyId: number,
): Promise<{
  total: number;
  average_rating: number | null;
  by_rating: Record<string, number>;
  unreplied: number;
}> {
  const rows = await q.all<{ rating: unknown; n: unknown; unreplied: unknown }>(
    `SELECT r.rating, COUNT(*) AS n, SUM(CASE WHEN p.id IS NULL THEN 1 ELSE 0 END) AS unreplied
       FROM reviews r LEFT JOIN review_replies p ON p.company_id = r.company_id AND p.review_id = r.id
      WHERE r.company_id = ? GROUP BY r.rating ORDER BY r.rating`,
    [companyId],
  );
  const by_rating: Record<string, number> = {};
  let total = 0;
  let stars = 0;
  let unreplied = 0;
  for (const r of rows) {
    by_rating[String(num(r.rating))] = num(r.n);
    total += num(r.n);
    stars += num(r.rating) * num(r.n);
    unreplied += num(r.unreplied);
  }
  return {
    total,
    average_rating: total === 0 ? null : Math.round((stars / total) * 100) / 100,
    by_rating,
    unreplied,
  };
}

/** The review (with its reply) or DomainError `not_found`. */
export async function requireReview(q: Queryable, companyId: number, id: number): Promise<Review> {
  const row = await q.get(`${REVIEW_SELECT} WHERE r.company_id = ? AND r.id = ?`, [companyId, id]);
  if (row === undefined) throw notFound('review', id);
  return toReview(row);
}

/** The review, refusing `already_replied` when it has a reply. */
export async function checkReply(q: Queryable, companyId: number, reviewId: number): Promise<Review> {
  const review = await requireReview(q, companyId, reviewId);
  if (review.reply !== null)
    throw new DomainError(
      'already_replied',
      `review ${reviewId} already has reply ${review.reply.id}`,
      'Revert the earlier reply (audit.revert with its audit_id) before posting another.',
    );
  return review;
}

/** Post a reply to a review; returns the reply id. Throws `not_found`, `already_replied`. */
export async function replyToReview(
  tx: Queryable,
  companyId: number,
  reviewId: number,
  body: string,
  userId: number | null,
  now: Date,
): Promise<number> {
  await checkReply(tx, companyId, reviewId);
  const row = await tx.get<{ id: unknown }>(
    'INSERT INTO review_replies (company_id, review_id, body, author_user_id, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id',
    [companyId, reviewId, body, userId, isoTime(now)],
  );
  return num(row!.id);
}

/** Delete a reply (the revert of a reply); `not_found` when it is already gone. */
export async function deleteReply(tx: Queryable, companyId: number, replyId: number): Promise<void> {
  const row = await tx.get('DELETE FROM review_replies WHERE company_id = ? AND id = ? RETURNING id', [
    companyId,
    replyId,
  ]);
  if (row === undefined) throw notFound('review reply', replyId);
}

/** Posts still scheduled, soonest first. */
export async function scheduledPosts(q: Queryable, companyId: number): Promise<ScheduledPost[]> {
  const rows = await q.all(
    `SELECT ${POST_COLUMNS} FROM scheduled_posts WHERE company_id = ? AND status = 'scheduled' ORDER BY publish_at, id`,
    [companyId],
  );
  return rows.map(toPost);
}

/** Check a post's time: `time_in_past` when `publishAt` (normalised ISO) is before `now`. */
export function checkPublishAt(publishAt: string, now: Date): void {
  if (Date.parse(publishAt) < now.getTime())
    throw new DomainError('time_in_past', `publish_at ${publishAt} is in the past`, 'Give a time after now.');
}

/** Schedule a post (`publishAt` normalised ISO). Throws `time_in_past`. */
export async function schedulePost(
  tx: Queryable,
  companyId: number,
  input: { channel: PostChannel; body: string; publish_at: string },
  userId: number | null,
  now: Date,
): Promise<ScheduledPost> {
  checkPublishAt(input.publish_at, now);
  const at = isoTime(now);
  const row = await tx.get(
    `INSERT INTO scheduled_posts (company_id, channel, body, publish_at, status, author_user_id, created_at, updated_at) VALUES (?, ?, ?, ?, 'scheduled', ?, ?, ?) RETURNING ${POST_COLUMNS}`,
    [companyId, input.channel, input.body, input.publish_at, userId, at, at],
  );
  return toPost(row!);
}

/**
 * Unschedule a post (the revert of scheduling it). Throws `not_found`, `post_not_scheduled`
 * (already cancelled, or its time has come: it is out).
 */
export async function unschedulePost(tx: Queryable, companyId: number, id: number, now: Date): Promise<void> {
  const post = await tx.get(`SELECT ${POST_COLUMNS} FROM scheduled_posts WHERE company_id = ? AND id = ?`, [
    companyId,
    id,
  ]);
  if (post === undefined) throw notFound('post', id);
  const p = toPost(post);
  if (p.status !== 'scheduled' || Date.parse(p.publish_at) <= now.getTime())
    throw new DomainError(
      'post_not_scheduled',
      `post ${id} is ${p.status === 'scheduled' ? 'published' : p.status}`,
      'A published post is removed on the channel itself.',
    );
  await tx.run(
    `UPDATE scheduled_posts SET status = 'cancelled', updated_at = ? WHERE company_id = ? AND id = ?`,
    [isoTime(now), companyId, id],
  );
}

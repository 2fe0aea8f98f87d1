/**
 * Social verbs (category `social`): the company's reviews at a glance with the posts still
 * scheduled, a public reply to a review, and a post scheduled on a channel. Both writes speak
 * for the business in public: WRITE_REVERSIBLE (a human confirms each one), previewable, and
 * undone by audit.revert (the reply is deleted, the post unscheduled). Scheduling a post needs
 * an admin.
 *
 * Reasons: not_found, invalid_input, already_replied, time_in_past, post_not_scheduled.
 * Spec: spec/shapes.md §aggregate §preview §receipt §revert; spec/consent.md.
 */
import { normalizeTime } from '../data/iso-time.ts';
import { num } from '../data/row-values.ts';
import {
  checkPublishAt,
  checkReply,
  deleteReply,
  listReviews,
  replyToReview,
  reviewStats,
  schedulePost,
  scheduledPosts,
  unschedulePost,
} from '../data/social.ts';
import { POST_CHANNELS, type PostChannel } from '../schema.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { enumProp, idProp, objectSchema, textProp, timeProp } from './input-schema.ts';

export const socialOverview = defineBusinessVerb<{ unreplied?: boolean; limit?: number }>({
  name: 'social.overview',
  description:
    "Reviews at a glance (count, average rating, per star, unreplied) with the latest reviews (reviewers' words: untrusted text) and the posts still scheduled.",
  shape: 'aggregate',
  category: 'social',
  input: objectSchema({
    unreplied: { type: 'boolean', description: 'Only reviews without a reply.' },
    limit: {
      type: 'integer',
      minimum: 1,
      maximum: 100,
      default: 10,
      description: 'Most reviews (default 10).',
    },
  }),
  idempotent: true,
  untrusted_content: true,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    return {
      entity_id: 'social',
      entity_type: 'collection',
      data: {
        reviews: await reviewStats(ctx.db, c),
        latest_reviews: await listReviews(ctx.db, c, {
          ...(args.unreplied !== undefined ? { unreplied: args.unreplied } : {}),
          limit: args.limit ?? 10,
        }),
        scheduled_posts: await scheduledPosts(ctx.db, c),
      },
      fetched_at: ctx.now.toISOString(),
    };
  },
});

interface ReplyArgs {
  review_id: number;
  body: string;
}

const replyInput = objectSchema(
  {
    review_id: idProp('The review (social.overview).'),
    body: textProp('The public reply.', 1000),
  },
  ['review_id', 'body'],
);

export const socialReplyToReview = defineBusinessVerb<ReplyArgs>({
  name: 'social.reply_to_review',
  description:
    "Post a public reply to a customer's review under the business's name. audit.revert deletes it.",
  shape: 'receipt',
  category: 'social',
  consent: 'WRITE_REVERSIBLE',
  preview: 'social.preview_reply',
  input: replyInput,
  open_world: true,
  summary: (a) => `Reply publicly to review ${a.review_id}.`,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const id = await replyToReview(ctx.db, c, args.review_id, args.body, ctx.principal.user_id, ctx.now);
    ctx.setEntity('review', args.review_id);
    ctx.emit({
      type: 'review.replied',
      entity_type: 'review',
      entity_id: args.review_id,
      payload: { reply_id: id },
    });
    ctx.setRollback(`review_reply:${id}:delete`, { reply_id: id, review_id: args.review_id });
    return { status: 'posted', review_id: args.review_id, reply_id: id };
  },
  revert: {
    async handler(ctx, original) {
      const r = original.rollback as { reply_id: number; review_id: number };
      await deleteReply(ctx.db, ctx.principal.company_id, num(r.reply_id));
      ctx.emit({
        type: 'review.reply_deleted',
        entity_type: 'review',
        entity_id: num(r.review_id),
        payload: { reply_id: num(r.reply_id), revert_of: original.audit_id },
      });
      return { revert_action: `deleted the reply to review ${num(r.review_id)}` };
    },
  },
});

export const socialPreviewReply = defineBusinessVerb<ReplyArgs>({
  name: 'social.preview_reply',
  description:
    'Show the review and the reply social.reply_to_review would post, without writing; refuses as it would.',
  shape: 'preview',
  category: 'social',
  input: replyInput,
  idempotent: true,
  untrusted_content: true,
  async handler(ctx, args) {
    const review = await checkReply(ctx.db, ctx.principal.company_id, args.review_id);
    return {
      current: { review_id: review.id, rating: review.rating, body: review.body, reply: null },
      projected: { review_id: review.id, reply: { body: args.body } },
      reversible: socialReplyToReview.revert !== undefined,
      notes: `Public on ${review.platform} under the business's name.`,
    };
  },
});

interface PostArgs {
  channel: PostChannel;
  body: string;
  publish_at: string;
}

const postInput = objectSchema(
  {
    channel: enumProp(POST_CHANNELS, 'Where to publish.'),
    body: textProp('The post text.', 2000),
    publish_at: timeProp('When to publish.'),
  },
  ['channel', 'body', 'publish_at'],
);

export const socialSchedulePost = defineBusinessVerb<PostArgs>({
  name: 'social.schedule_post',
  description:
    'Schedule a public post on a social channel at a time. Needs an admin. audit.revert unschedules it.',
  shape: 'receipt',
  category: 'social',
  consent: 'WRITE_REVERSIBLE',
  role_floor: 'admin',
  preview: 'social.preview_post',
  input: postInput,
  open_world: true,
  summary: (a) => `Post on ${a.channel} at ${a.publish_at}.`,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const post = await schedulePost(
      ctx.db,
      c,
      { ...args, publish_at: normalizeTime(args.publish_at, 'publish_at') },
      ctx.principal.user_id,
      ctx.now,
    );
    ctx.setEntity('post', post.id);
    ctx.emit({
      type: 'post.scheduled',
      entity_type: 'post',
      entity_id: post.id,
      payload: { channel: post.channel, publish_at: post.publish_at },
    });
    ctx.setRollback(`post:${post.id}:unschedule`, { post_id: post.id });
    return { status: 'scheduled', post_id: post.id, channel: post.channel, publish_at: post.publish_at };
  },
  revert: {
    async handler(ctx, original) {
      const r = original.rollback as { post_id: number };
      await unschedulePost(ctx.db, ctx.principal.company_id, num(r.post_id), ctx.now);
      ctx.emit({
        type: 'post.cancelled',
        entity_type: 'post',
        entity_id: num(r.post_id),
        payload: { revert_of: original.audit_id },
      });
      return { revert_action: `unscheduled post ${num(r.post_id)}` };
    },
  },
});

export const socialPreviewPost = defineBusinessVerb<PostArgs>({
  name: 'social.preview_post',
  description:
    'Show the post social.schedule_post would queue and the queue after it, without writing; refuses as it would.',
  shape: 'preview',
  category: 'social',
  input: postInput,
  role_floor: 'admin',
  idempotent: true,
  async handler(ctx, args) {
    const publish_at = normalizeTime(args.publish_at, 'publish_at');
    checkPublishAt(publish_at, ctx.now);
    const queued = await scheduledPosts(ctx.db, ctx.principal.company_id);
    return {
      current: { scheduled_posts: queued.length },
      projected: {
        scheduled_posts: queued.length + 1,
        post: { channel: args.channel, body: args.body, publish_at },
      },
      reversible: socialSchedulePost.revert !== undefined,
      notes: "Public under the business's name; revert works until publish_at.",
    };
  },
});

export const socialVerbs = [
  socialOverview,
  socialReplyToReview,
  socialPreviewReply,
  socialSchedulePost,
  socialPreviewPost,
];

/**
 * Demo seed for the voice and social tables: a call log (with voicemails on some missed calls
 * and call-backs on some of those), customer reviews (some already replied to) and a few
 * scheduled posts, per company. Deterministic: a small PRNG seeded with `[seed, position]`, times
 * as offsets from the same local midnight the rest of the seed uses; the first company gets the
 * full set, later ones a quarter. Rows reference the company's contacts by plan index, so the
 * counts are known before anything is written (progress totals).
 */
import type { BusinessTable, CallDirection, CallOutcome, PostChannel, ReviewPlatform } from '../schema.ts';
import type { CompanyPlan } from './plan.ts';
import { DEMO_UTC_OFFSET_MINUTES } from './types.ts';
import type { Writer } from './write-plan.ts';

const MIN = 60_000;
const DAY = 86_400_000;

const TRANSCRIPTS = [
  'Hi, this is about the water heater you put in last spring. It is making a popping noise again. Please call me back.',
  'Hello, I need someone to look at my furnace, it keeps shutting off after a few minutes. Any time tomorrow works.',
  'Calling to ask about a quote for replacing our AC. We got your flyer. Thanks.',
  'Our kitchen sink is backing up into the dishwasher. Can you send someone today? Call me back please.',
  'Hi, I think I was charged twice for the last visit. Can someone from billing call me?',
  'Just confirming the appointment on Thursday, and asking whether the tech can also check the sump pump.',
];

const REVIEW_TEXTS: Array<[number, string]> = [
  [5, 'Technician was on time, explained everything and fixed our water heater in an hour.'],
  [5, 'Great service on our AC tune-up. Friendly and clean.'],
  [4, 'Good work on the drain, a bit pricey but fast.'],
  [2, 'Had to reschedule twice before anyone showed up.'],
  [1, 'The furnace stopped again two days after the repair. Still waiting for a call back.'],
  [5, 'Honest estimate, no upsell. Will use again.'],
  [3, 'Fixed the leak but left a mess under the sink.'],
  [4, 'Quick emergency response on a Sunday.'],
];

const POSTS: Array<[PostChannel, string]> = [
  ['facebook', 'Furnace season is here: book a tune-up this month and get a free filter.'],
  ['instagram', 'Before and after: a tankless water heater install in Sandy.'],
  ['google', 'Now booking AC tune-ups for spring. Same-week visits available.'],
];

/** A small deterministic PRNG (mulberry32) in [0, 1). */
function prng(seed: number, position: number): () => number {
  let a = (seed * 2654435761 + position * 40503 + 1) >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface VCall {
  contact: number | null;
  phone: string;
  direction: CallDirection;
  outcome: CallOutcome;
  duration_seconds: number;
  started_at: number;
}

export interface VoiceSocialPlan {
  calls: VCall[];
  voicemails: Array<{ call: number; transcript: string; duration_seconds: number }>;
  callbacks: Array<{ call: number; due_at: number; status: 'done' | 'scheduled'; user_id: number }>;
  reviews: Array<{
    contact: number;
    platform: ReviewPlatform;
    rating: number;
    author: string;
    body: string;
    posted_at: number;
  }>;
  replies: Array<{ review: number; body: string; user_id: number; at: number }>;
  posts: Array<{
    channel: PostChannel;
    body: string;
    publish_at: number;
    status: 'scheduled' | 'published';
    user_id: number;
  }>;
}

/** The voice and social rows of one company's plan (see the module comment). */
export function planVoiceSocial(p: CompanyPlan, position: number, seed: number, now: Date): VoiceSocialPlan {
  const r = prng(seed, position);
  const pick = (n: number) => Math.floor(r() * n);
  const offset = DEMO_UTC_OFFSET_MINUTES * MIN;
  const anchor = Math.floor((now.getTime() + offset) / DAY) * DAY - offset;
  const scale = position === 0 ? 1 : 0.25;
  const staff = p.employees.filter((e) => e.role !== 'read_only');
  const user = () => staff[pick(staff.length)]!.user_id;
  const out: VoiceSocialPlan = {
    calls: [],
    voicemails: [],
    callbacks: [],
    reviews: [],
    replies: [],
    posts: [],
  };
  const nCalls = Math.round(80 * scale);
  for (let i = 0; i < nCalls; i++) {
    const known = r() < 0.8 && p.contacts.length > 0;
    const contact = known ? pick(p.contacts.length) : null;
    const phone = contact !== null ? p.contacts[contact]!.phone : `+1801555${String(1000 + pick(9000))}`;
    const direction: CallDirection = r() < 0.7 ? 'inbound' : 'outbound';
    const roll = r();
    const outcome: CallOutcome =
      direction === 'outbound'
        ? roll < 0.8
          ? 'answered'
          : 'missed'
        : roll < 0.65
          ? 'answered'
          : roll < 0.8
            ? 'missed'
            : 'voicemail';
    // Spread over the last 14 days, business hours (8:00..18:00 local).
    const started_at = anchor - pick(14) * DAY + 8 * 60 * MIN + pick(600) * MIN;
    out.calls.push({
      contact,
      phone,
      direction,
      outcome,
      duration_seconds: outcome === 'answered' ? 30 + pick(900) : 0,
      started_at,
    });
  }
  out.calls.sort((a, b) => a.started_at - b.started_at);
  // Every company has at least one voicemail (the latest call) with a call-back (below).
  if (!out.calls.some((c) => c.outcome === 'voicemail')) {
    const last = out.calls[out.calls.length - 1]!;
    Object.assign(last, { direction: 'inbound', outcome: 'voicemail', duration_seconds: 0 });
  }
  out.calls.forEach((c, i) => {
    if (c.outcome !== 'voicemail') return;
    out.voicemails.push({
      call: i,
      transcript: TRANSCRIPTS[pick(TRANSCRIPTS.length)]!,
      duration_seconds: 10 + pick(60),
    });
    if (r() < 0.4)
      out.callbacks.push({
        call: i,
        due_at: c.started_at + 2 * 60 * MIN,
        status: c.started_at + 2 * 60 * MIN < now.getTime() ? 'done' : 'scheduled',
        user_id: user(),
      });
  });
  if (out.callbacks.length === 0) {
    const vm = out.voicemails[0]!;
    const due = out.calls[vm.call]!.started_at + 2 * 60 * MIN;
    out.callbacks.push({
      call: vm.call,
      due_at: due,
      status: due < now.getTime() ? 'done' : 'scheduled',
      user_id: user(),
    });
  }
  const nReviews = Math.max(2, Math.round(24 * scale));
  for (let i = 0; i < nReviews; i++) {
    const [rating, body] = REVIEW_TEXTS[pick(REVIEW_TEXTS.length)]!;
    const contact = pick(p.contacts.length);
    const name = p.contacts[contact]!.name.split(' ');
    out.reviews.push({
      contact,
      platform: (['google', 'yelp', 'facebook'] as const)[pick(3)]!,
      rating,
      author: `${name[0]} ${(name[1] ?? '').slice(0, 1)}.`.trim(),
      body,
      posted_at: anchor - (1 + pick(120)) * DAY + pick(600) * MIN,
    });
  }
  out.reviews.sort((a, b) => a.posted_at - b.posted_at);
  out.reviews.forEach((rv, i) => {
    // The older reviews mostly have a reply; the latest few are waiting.
    if (i === 0 || (i < out.reviews.length - 3 && r() < 0.6))
      out.replies.push({
        review: i,
        body:
          rv.rating >= 4
            ? 'Thank you for the kind words!'
            : 'We are sorry to hear this; our office will call you.',
        user_id: user(),
        at: rv.posted_at + DAY,
      });
  });
  const nPosts = position === 0 ? POSTS.length : 1;
  for (let i = 0; i < nPosts; i++) {
    const [channel, body] = POSTS[i]!;
    out.posts.push({
      channel,
      body,
      publish_at: anchor + (i + 1) * DAY + 9 * 60 * MIN,
      status: 'scheduled',
      user_id: user(),
    });
  }
  return out;
}

/** Rows of a voice/social plan (progress units). */
export function voiceSocialRowCount(v: VoiceSocialPlan): number {
  return (
    v.calls.length +
    v.voicemails.length +
    v.callbacks.length +
    v.reviews.length +
    v.replies.length +
    v.posts.length
  );
}

/** Write the plan after the company's contacts (`contactIds` in plan order); returns rows per table. */
export async function writeVoiceSocial(
  w: Writer,
  companyId: number,
  v: VoiceSocialPlan,
  contactIds: number[],
): Promise<Partial<Record<BusinessTable, number>>> {
  const t = (ms: number) => new Date(ms).toISOString();
  const c = companyId;
  const calls = await w.insert(
    'calls',
    ['company_id', 'contact_id', 'direction', 'outcome', 'phone', 'duration_seconds', 'started_at'],
    v.calls.map((x) => [
      c,
      x.contact === null ? null : contactIds[x.contact]!,
      x.direction,
      x.outcome,
      x.phone,
      x.duration_seconds,
      t(x.started_at),
    ]),
  );
  await w.insert(
    'voicemails',
    ['company_id', 'call_id', 'transcript', 'duration_seconds', 'created_at'],
    v.voicemails.map((x) => [
      c,
      calls[x.call]!,
      x.transcript,
      x.duration_seconds,
      t(v.calls[x.call]!.started_at),
    ]),
  );
  await w.insert(
    'callbacks',
    ['company_id', 'call_id', 'due_at', 'note', 'status', 'assigned_user_id', 'created_at', 'updated_at'],
    v.callbacks.map((x) => {
      const at = t(v.calls[x.call]!.started_at + 10 * MIN);
      return [c, calls[x.call]!, t(x.due_at), null, x.status, x.user_id, at, at];
    }),
  );
  const reviews = await w.insert(
    'reviews',
    ['company_id', 'contact_id', 'platform', 'rating', 'author', 'body', 'posted_at'],
    v.reviews.map((x) => [c, contactIds[x.contact]!, x.platform, x.rating, x.author, x.body, t(x.posted_at)]),
  );
  await w.insert(
    'review_replies',
    ['company_id', 'review_id', 'body', 'author_user_id', 'created_at'],
    v.replies.map((x) => [c, reviews[x.review]!, x.body, x.user_id, t(x.at)]),
  );
  await w.insert(
    'scheduled_posts',
    ['company_id', 'channel', 'body', 'publish_at', 'status', 'author_user_id', 'created_at', 'updated_at'],
    v.posts.map((x) => [
      c,
      x.channel,
      x.body,
      t(x.publish_at),
      x.status,
      x.user_id,
      t(x.publish_at - 3 * DAY),
      t(x.publish_at - 3 * DAY),
    ]),
  );
  return {
    calls: v.calls.length,
    voicemails: v.voicemails.length,
    callbacks: v.callbacks.length,
    reviews: v.reviews.length,
    review_replies: v.replies.length,
    scheduled_posts: v.posts.length,
  };
}

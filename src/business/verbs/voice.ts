/**
 * Voice verbs (category `voice`): the call log at a glance (counts, talk time, unreturned missed
 * calls), a voicemail explained (its transcript, the caller and the calls before it), and a
 * call-back scheduled on a call (previewable; audit.revert cancels it).
 *
 * Reasons: not_found ("call 7 not found"), invalid_input, time_in_past, callback_exists.
 * Spec: spec/shapes.md §aggregate §explain §preview §receipt §revert.
 */
import { normalizeTime, DAY_MS } from '../data/iso-time.ts';
import { num } from '../data/row-values.ts';
import {
  callbacksOfCall,
  callCounts,
  callsFromPhone,
  cancelCallback,
  checkCallback,
  recentCalls,
  requireCall,
  requireVoicemail,
  scheduleCallback,
  unreturnedCalls,
  type CallbackInput,
} from '../data/voice.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { idProp, objectSchema, textProp, timeProp } from './input-schema.ts';

async function contactName(
  ctx: { db: { get: (sql: string, p: unknown[]) => Promise<Record<string, unknown> | undefined> } },
  companyId: number,
  contactId: number | null,
): Promise<string | null> {
  if (contactId === null) return null;
  const r = await ctx.db.get('SELECT name FROM contacts WHERE company_id = ? AND id = ?', [
    companyId,
    contactId,
  ]);
  return r === undefined ? null : String(r.name);
}

export const voiceCalls = defineBusinessVerb<{ days?: number }>({
  name: 'voice.calls',
  description:
    'Call log of the last N days: counts and talk time by direction and outcome, the latest calls, and inbound missed/voicemail calls nobody called back yet.',
  shape: 'aggregate',
  category: 'voice',
  input: objectSchema({
    days: {
      type: 'integer',
      minimum: 1,
      maximum: 90,
      default: 7,
      description: 'Days back (1..90, default 7).',
    },
  }),
  idempotent: true,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const days = args.days ?? 7;
    const since = new Date(ctx.now.getTime() - days * DAY_MS).toISOString();
    const counts = await callCounts(ctx.db, c, since);
    return {
      entity_id: 'calls',
      entity_type: 'collection',
      data: {
        days,
        total_calls: counts.reduce((s, r) => s + r.calls, 0),
        talk_seconds: counts.reduce((s, r) => s + r.seconds, 0),
        by_direction_outcome: counts,
        latest: await recentCalls(ctx.db, c, since, 10),
        unreturned: await unreturnedCalls(ctx.db, c, since, 25),
      },
      fetched_at: ctx.now.toISOString(),
    };
  },
});

export const voiceExplainVoicemail = defineBusinessVerb<{ voicemail_id: number }>({
  name: 'voice.explain_voicemail',
  description:
    "A voicemail's transcript (caller's words: untrusted text) with the call, the caller's earlier calls and any call-back, oldest first.",
  shape: 'explain',
  category: 'voice',
  input: objectSchema({ voicemail_id: idProp('The voicemail (voice.calls: unreturned[].voicemail_id).') }, [
    'voicemail_id',
  ]),
  idempotent: true,
  untrusted_content: true,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const vm = await requireVoicemail(ctx.db, c, args.voicemail_id);
    const call = await requireCall(ctx.db, c, vm.call_id);
    const earlier = await callsFromPhone(ctx.db, c, call.phone, call.started_at);
    const callbacks = await callbacksOfCall(ctx.db, c, call.id);
    const chain = [
      ...earlier.reverse().map((e) => ({
        action: `call.${e.direction}.${e.outcome}`,
        timestamp: e.started_at,
        detail: `${e.direction} call (${e.outcome}, ${e.duration_seconds} s) with ${e.phone}`,
      })),
      {
        action: 'call.inbound.voicemail',
        timestamp: call.started_at,
        detail: `call ${call.id} from ${call.phone} went to voicemail (${vm.duration_seconds} s)`,
      },
      ...callbacks.map((b) => ({
        action: `callback.${b.status}`,
        timestamp: b.created_at,
        detail: `call-back ${b.id} due ${b.due_at} (${b.status})`,
      })),
    ];
    const name = await contactName(ctx, c, call.contact_id);
    const open = callbacks.find((b) => b.status === 'scheduled');
    return {
      entity_id: vm.id,
      entity_type: 'voicemail',
      current_state: {
        transcript: vm.transcript,
        call_id: call.id,
        phone: call.phone,
        contact_id: call.contact_id,
        contact_name: name,
        callback_id: open?.id ?? null,
      },
      causal_chain: chain,
      reasoning: `${name ?? call.phone} left a ${vm.duration_seconds}-second voicemail after ${earlier.length} earlier call(s); ${
        open
          ? `call-back ${open.id} is due ${open.due_at}.`
          : 'no call-back is scheduled (voice.schedule_callback).'
      }`,
    };
  },
});

const callbackInput = objectSchema(
  {
    call_id: idProp('The call to return (voice.calls).'),
    due_at: timeProp('When to call back.'),
    note: textProp('What to say or ask.', 500),
    assigned_user_id: idProp('Employee who calls back (team.list_employees).'),
  },
  ['call_id', 'due_at'],
);

function normalized(args: CallbackInput): CallbackInput {
  return { ...args, due_at: normalizeTime(args.due_at, 'due_at') };
}

export const voiceScheduleCallback = defineBusinessVerb<CallbackInput>({
  name: 'voice.schedule_callback',
  description:
    'Schedule a call-back on a missed or voicemail call for an employee at a time. audit.revert cancels it.',
  shape: 'receipt',
  category: 'voice',
  consent: 'WRITE_REVERSIBLE',
  preview: 'voice.preview_callback',
  input: callbackInput,
  summary: (a) => `Call back call ${a.call_id} at ${a.due_at}.`,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const cb = await scheduleCallback(ctx.db, c, normalized(args), ctx.now);
    ctx.setEntity('callback', cb.id);
    ctx.emit({
      type: 'callback.scheduled',
      entity_type: 'callback',
      entity_id: cb.id,
      payload: { call_id: cb.call_id, due_at: cb.due_at },
    });
    ctx.setRollback(`callback:${cb.id}:cancel`, { callback_id: cb.id });
    return { status: 'scheduled', callback_id: cb.id, call_id: cb.call_id, due_at: cb.due_at };
  },
  revert: {
    async handler(ctx, original) {
      const r = original.rollback as { callback_id: number };
      const cb = await cancelCallback(ctx.db, ctx.principal.company_id, num(r.callback_id), ctx.now);
      ctx.emit({
        type: 'callback.cancelled',
        entity_type: 'callback',
        entity_id: cb.id,
        payload: { revert_of: original.audit_id },
      });
      return { revert_action: `cancelled call-back ${cb.id}` };
    },
  },
});

export const voicePreviewCallback = defineBusinessVerb<CallbackInput>({
  name: 'voice.preview_callback',
  description:
    'Show the call and the call-back voice.schedule_callback would add, without writing; refuses as it would.',
  shape: 'preview',
  category: 'voice',
  input: callbackInput,
  idempotent: true,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const input = normalized(args);
    const call = await checkCallback(ctx.db, c, input, ctx.now);
    return {
      current: { call_id: call.id, phone: call.phone, outcome: call.outcome, scheduled_callback: null },
      projected: {
        call_id: call.id,
        phone: call.phone,
        scheduled_callback: {
          due_at: input.due_at,
          note: input.note ?? null,
          assigned_user_id: input.assigned_user_id ?? null,
        },
      },
      reversible: voiceScheduleCallback.revert !== undefined,
      contact_name: await contactName(ctx, c, call.contact_id),
    };
  },
});

export const voiceVerbs = [voiceCalls, voiceExplainVoicemail, voiceScheduleCallback, voicePreviewCallback];

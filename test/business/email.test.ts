import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  cancelQueuedEmail,
  getEmail,
  listQueuedEmails,
  markEmailFailed,
  markEmailSent,
  queueEmail,
  searchOutbox,
} from '../../src/business/data/email.ts';
import { DEMO_FIXTURES as F } from '../../src/business/seed.ts';
import { MAIN, NOW, openSeededStore } from './seeded-store.ts';

const LATER = new Date(NOW.getTime() + 60_000);

test('queueEmail puts a message in the outbox; it leaves it once, as sent, failed or cancelled', async (t) => {
  const { store } = await openSeededStore(t);
  const message = {
    to_address: 'facilities@example.com',
    subject: 'Your estimate',
    body: 'Attached.',
    related_entity_type: 'deal',
    related_entity_id: F.proposal_deal_id,
  };
  const queued = await store.write((tx) => queueEmail(tx, MAIN, message, LATER));
  assert.deepEqual([queued.status, queued.sent_at, queued.created_at], ['queued', null, LATER.toISOString()]);
  assert.ok((await store.read((q) => listQueuedEmails(q, MAIN, 500))).some((e) => e.id === queued.id));
  assert.deepEqual(
    (
      await store.read((q) =>
        searchOutbox(q, MAIN, { related_entity_type: 'deal', related_entity_id: F.proposal_deal_id }),
      )
    ).items,
    [queued],
  );
  const sent = await store.write((tx) => markEmailSent(tx, MAIN, queued.id, LATER));
  assert.deepEqual([sent.status, sent.sent_at], ['sent', LATER.toISOString()]);
  await assert.rejects(
    store.write((tx) => markEmailFailed(tx, MAIN, queued.id, 'bounce', LATER)),
    { code: 'email_not_queued', message: /already sent/ },
  );
  await assert.rejects(
    store.write((tx) => cancelQueuedEmail(tx, MAIN, queued.id, LATER)),
    { code: 'email_not_queued' },
  );

  const second = await store.write((tx) => queueEmail(tx, MAIN, message, LATER));
  const cancelled = await store.write((tx) => cancelQueuedEmail(tx, MAIN, second.id, LATER));
  assert.deepEqual([cancelled.status, cancelled.error], ['failed', 'cancelled']);
  assert.deepEqual(await store.read((q) => getEmail(q, MAIN, second.id)), cancelled);
  await assert.rejects(
    store.write((tx) => markEmailSent(tx, MAIN, 999_999, LATER)),
    { code: 'not_found', message: 'email 999999 not found' },
  );
  await assert.rejects(
    store.write((tx) => queueEmail(tx, MAIN, { ...message, to_address: 'nobody' }, LATER)),
    { code: 'invalid_input', message: /^to_address/ },
  );
  await assert.rejects(
    store.write((tx) => queueEmail(tx, MAIN, { ...message, subject: '' }, LATER)),
    { code: 'invalid_input', message: /^subject/ },
  );
});

test('the seeded outbox has queued reminders, oldest first for the worker', async (t) => {
  const { store } = await openSeededStore(t);
  const queued = await store.read((q) => listQueuedEmails(q, MAIN));
  assert.ok(
    queued.length > 0 &&
      queued.every((e) => e.status === 'queued' && e.related_entity_type === 'appointment'),
  );
  for (let i = 1; i < queued.length; i++) assert.ok(queued[i - 1]!.created_at <= queued[i]!.created_at);
});

/**
 * Demo seed: the historical domain events of one company, in chronological order, carrying the real ids.
 */
import type { DomainEvent, DomainEventType, EventActor } from '../domain-event.ts';
import { DROPLET_SIZES } from '../schema.ts';
import { MIN, iso, type CompanyPlan } from './plan.ts';
import { type PlanIds } from './write-plan.ts';

export function buildEvents(p: CompanyPlan, ids: PlanIds): DomainEvent[] {
  const list: Array<DomainEvent & { seq: number }> = [];
  const add = (
    type: DomainEventType,
    entity_type: string,
    entity_id: number,
    at: number,
    actor: EventActor,
    payload: Record<string, unknown>,
  ) => list.push({ type, entity_type, entity_id, payload, occurred_at: iso(at), actor, seq: list.length });
  /** Actors generated as `customer:<plan index>` name the contact's id once it exists. */
  const actor = (a: EventActor): EventActor =>
    a.startsWith('customer:') ? `customer:${ids.contacts[Number(a.slice(9))]}` : a;
  const owner = p.employees[0]!.user_id;

  for (const e of p.employees) {
    add(
      'employee.hired',
      'employee',
      e.user_id,
      e.hired_at,
      e.user_id === owner ? 'system:onboarding' : `user:${owner}`,
      { name: e.name, role: e.role, title: e.title },
    );
  }
  p.contacts.forEach((x, i) => {
    const id = ids.contacts[i]!;
    add('contact.created', 'contact', id, x.created_at, actor(x.created_by), {
      name: x.name,
      kind: x.kind,
      source: x.source,
    });
    for (const s of x.status_changes)
      add('contact.status_changed', 'contact', id, s.at, 'system:lifecycle', {
        from: s.from,
        to: s.to,
        reason: s.reason,
      });
  });
  p.notes.forEach((n, i) =>
    add('note.added', 'note', ids.notes[i]!, n.created_at, `user:${n.author}`, {
      contact_id: ids.contacts[n.contact],
    }),
  );
  p.deals.forEach((d, i) => {
    const id = ids.deals[i]!;
    const contactId = ids.contacts[d.contact];
    d.history.forEach((h, j) => {
      if (h.from === null) {
        add('deal.created', 'deal', id, h.at, `user:${h.by}`, {
          contact_id: contactId,
          title: d.title,
          amount_cents: d.amount_cents,
          stage: h.to,
          history_id: ids.history[i]![j],
        });
      } else {
        add('deal.stage_changed', 'deal', id, h.at, `user:${h.by}`, {
          contact_id: contactId,
          from_stage: h.from,
          to_stage: h.to,
          amount_cents: d.amount_cents,
          history_id: ids.history[i]![j],
        });
      }
    });
  });
  p.appointments.forEach((a, i) => {
    const id = ids.appointments[i]!;
    const contactId = ids.contacts[a.contact];
    add('appointment.scheduled', 'appointment', id, a.created_at, actor(a.booked_by), {
      contact_id: contactId,
      technician_user_id: a.tech,
      service: a.service.service,
      starts_at: iso(a.starts_at),
      ends_at: iso(a.ends_at),
      deal_id: a.deal === null ? null : ids.deals[a.deal],
    });
    if (a.status === 'completed')
      add('appointment.completed', 'appointment', id, a.ends_at, `user:${a.tech}`, {
        contact_id: contactId,
        service: a.service.service,
      });
    if (a.status === 'no_show')
      add('appointment.no_show', 'appointment', id, a.starts_at + 30 * MIN, `user:${a.tech}`, {
        contact_id: contactId,
      });
    if (a.cancel !== null)
      add('appointment.cancelled', 'appointment', id, a.cancel.at, actor(a.cancel.by), {
        contact_id: contactId,
        reason: a.cancel.reason,
      });
  });
  p.usage.forEach((u, i) => {
    const part = p.parts[u.part]!;
    add('part.used', 'part', ids.parts[u.part]!, u.used_at, `user:${p.appointments[u.appointment]!.tech}`, {
      usage_id: ids.usage[i],
      appointment_id: ids.appointments[u.appointment],
      sku: part.sku,
      quantity: u.quantity,
    });
  });
  p.invoices.forEach((inv, i) => {
    if (inv.issued_at === null) return;
    const id = ids.invoices[i]!;
    const contactId = ids.contacts[inv.contact];
    add('invoice.issued', 'invoice', id, inv.issued_at, 'system:billing', {
      contact_id: contactId,
      number: inv.number,
      amount_cents: inv.amount_cents,
      due_at: inv.due_at === null ? null : iso(inv.due_at),
      appointment_id: inv.appointment === null ? null : ids.appointments[inv.appointment],
    });
    if (inv.paid_at !== null)
      add('invoice.paid', 'invoice', id, inv.paid_at, 'system:billing', {
        contact_id: contactId,
        number: inv.number,
        amount_cents: inv.amount_cents,
      });
    if (inv.voided !== null)
      add('invoice.voided', 'invoice', id, inv.voided.at, `user:${inv.voided.by}`, {
        contact_id: contactId,
        number: inv.number,
      });
  });
  p.payments.forEach((x, i) => {
    const inv = p.invoices[x.invoice]!;
    const payload = {
      invoice_id: ids.invoices[x.invoice],
      invoice_number: inv.number,
      contact_id: ids.contacts[inv.contact],
      charge_ref: x.charge_ref,
      amount_cents: x.amount_cents,
      method: x.method,
    };
    if (x.status === 'failed')
      add('payment.failed', 'payment', ids.payments[i]!, x.created_at, actor(x.actor), {
        ...payload,
        failure_reason: x.failure_reason,
      });
    else add('payment.captured', 'payment', ids.payments[i]!, x.created_at, actor(x.actor), payload);
  });
  p.refunds.forEach((r, i) => {
    const pay = p.payments[r.payment]!;
    add('refund.issued', 'refund', ids.refunds[i]!, r.created_at, `user:${r.by}`, {
      payment_id: ids.payments[r.payment],
      charge_ref: pay.charge_ref,
      amount_cents: r.amount_cents,
      fee_refunded_cents: r.fee_refunded_cents,
      reason: r.reason,
    });
  });
  p.emails.forEach((e, i) => {
    const related = {
      related_entity_type: e.related.type,
      related_entity_id: (e.related.type === 'invoice'
        ? ids.invoices
        : e.related.type === 'payment'
          ? ids.payments
          : ids.appointments)[e.related.index],
    };
    if (e.status === 'queued')
      add('email.queued', 'email', ids.emails[i]!, e.created_at, 'system:mailer', {
        subject: e.subject,
        ...related,
      });
    else if (e.status === 'sent')
      add('email.sent', 'email', ids.emails[i]!, e.sent_at!, 'system:mailer', {
        subject: e.subject,
        ...related,
      });
    else
      add('email.failed', 'email', ids.emails[i]!, e.created_at + 2 * MIN, 'system:mailer', {
        subject: e.subject,
        error: e.error,
        ...related,
      });
  });
  p.kb.forEach((a, i) =>
    add('kb_article.published', 'kb_article', ids.kb[i]!, a.created_at, `user:${owner}`, {
      slug: a.slug,
      title: a.title,
    }),
  );
  const d = p.droplet;
  add('droplet.provisioned', 'droplet', ids.droplet, d.created_at, 'system:provisioning', {
    size: d.size,
    size_slug: DROPLET_SIZES[d.size].slug,
    region: d.region,
    workers: 1,
  });
  add('droplet.workers_scaled', 'droplet', ids.droplet, d.scaled_at, `user:${owner}`, {
    previous_workers: 1,
    workers: d.workers,
    delta: d.workers - 1,
  });
  add('subscription.started', 'subscription', ids.subscription, p.subscription.started_at, `user:${owner}`, {
    tier: p.subscription.tier,
    seats: p.subscription.seats,
  });

  list.sort((a, b) =>
    a.occurred_at < b.occurred_at ? -1 : a.occurred_at > b.occurred_at ? 1 : a.seq - b.seq,
  );
  return list.map(({ seq: _seq, ...event }) => event);
}

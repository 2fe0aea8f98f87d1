/**
 * Demo seed: deals with their stage histories (see ../seed.ts for the determinism rules).
 */
import type { CompanyGenerator } from './generator.ts';
import { DEAL_TYPES, type DealType } from '../demo-catalog.ts';
import { type ContactKind, type DealStage } from '../schema.ts';
import {
  MIN,
  HOUR,
  DAY,
  type PStageChange,
  type PDeal,
  FIXTURE_CONTACT_INDEX,
  DEAL_DWELL_DAYS,
  DEAL_TRANSITIONS,
} from './plan.ts';

export function dealType(g: CompanyGenerator, kind: ContactKind): DealType {
  const commercial = kind === 'commercial' && g.chance(0.7);
  return g.pick(DEAL_TYPES.filter((d) => d.commercial === commercial));
}

export function deals(g: CompanyGenerator): void {
  const total = g.count(80);
  const scripted = g.position === 0 ? 2 : 0;
  const cutoff = g.anchor;
  const deals: PDeal[] = [];
  for (let i = 0; i < total - scripted; i++) {
    const contactIdx = g.weighted(
      g.plan.contacts.map((c, idx) => ({
        weight: c.kind === 'commercial' ? 3 : c.weight === 0 ? 1.5 : 1,
        value: idx,
      })),
    );
    const contact = g.plan.contacts[contactIdx]!;
    const type = dealType(g, contact.kind);
    const owner = g.pick(g.salesUsers);
    // Almost half the deals are recent, so the pipeline has open deals in every stage.
    const recent = g.chance(0.45);
    let t = g.timeBetween(
      recent ? Math.max(contact.created_at, cutoff - 60 * DAY) + HOUR : contact.created_at + HOUR,
      cutoff - HOUR,
    );
    const history: PStageChange[] = [{ from: null, to: 'new', at: t, by: owner }];
    let stage: DealStage = 'new';
    for (let step = 0; step < 10 && stage !== 'won' && stage !== 'lost'; step++) {
      if (g.chance(0.05)) break; // a stalled deal
      const next = t + Math.max(2 * HOUR, Math.round((g.exp(DEAL_DWELL_DAYS[stage]!) * DAY) / MIN) * MIN);
      if (next >= cutoff) break;
      const to: DealStage = g.weighted(DEAL_TRANSITIONS[stage]!);
      history.push({
        from: stage,
        to,
        at: next,
        by: g.chance(0.85) ? owner : g.pick(g.salesUsers),
      });
      stage = to;
      t = next;
    }
    deals.push({
      contact: contactIdx,
      title: type.title,
      amount_cents: Math.round(g.between(type.min_dollars, type.max_dollars) / 25) * 25 * 100,
      owner,
      history,
      scripted: false,
    });
  }
  if (scripted > 0) {
    const c = FIXTURE_CONTACT_INDEX;
    const at = (day: number, hour: number) => g.anchor + day * DAY + hour * HOUR;
    const owner = g.salesUsers[1] ?? g.salesUsers[0]!;
    deals.push({
      contact: c,
      title: 'Kitchen remodel plumbing',
      amount_cents: 85000,
      owner,
      scripted: true,
      history: [
        { from: null, to: 'new', at: at(-30, 9), by: owner },
        { from: 'new', to: 'qualified', at: at(-27, 10), by: owner },
        { from: 'qualified', to: 'estimate_scheduled', at: at(-24, 11), by: owner },
        { from: 'estimate_scheduled', to: 'proposal_sent', at: at(-18, 15), by: owner },
      ],
    });
    deals.push({
      contact: c,
      title: 'Bathroom rough-in',
      amount_cents: 42000,
      owner,
      scripted: true,
      history: [{ from: null, to: 'new', at: at(-3, 14), by: owner }],
    });
  }
  deals.sort((a, b) => a.history[0]!.at - b.history[0]!.at);
  g.plan.deals = deals;
  if (scripted > 0) {
    g.plan.fixture = {
      contact: FIXTURE_CONTACT_INDEX,
      proposalDeal: deals.findIndex((d) => d.scripted && d.title === 'Kitchen remodel plumbing'),
      newDeal: deals.findIndex((d) => d.scripted && d.title === 'Bathroom rough-in'),
    };
  }
}

/**
 * approvals.list carries each pending approval's projected impact: the preview of its verb
 * computed now (current → projected), so an approver sees before and after; a decided approval,
 * or a verb without a preview, has none. Spec: src/verbs/approvals.ts (approvalItem.preview).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { webmcpFixture } from '../transports/webmcp/fixture.ts';
import { humanPrincipal } from '../../src/identity/principal.ts';

interface Item {
  approval_id: string;
  verb: string;
  status: string;
  preview?: { current: Record<string, unknown>; projected: Record<string, unknown>; reversible: boolean };
}

describe('approval preview', () => {
  it('a pending charge shows the balance before and after; a rejected one does not', async (t) => {
    const f = await webmcpFixture(t);
    const admin = { principal: f.principal('admin'), surface: 'http' as const };
    const pending = await f.rt.dispatch(admin, 'webtest.charge', { invoice_id: 314, amount_cents: 15900 });
    assert.equal(pending.error?.reason, 'dispatch_pending');
    const other = await f.rt.dispatch(admin, 'webtest.charge', { invoice_id: 7, amount_cents: 500 });
    // The owner signed in on the dashboard: a human (src/identity).
    const owner = {
      principal: humanPrincipal(f.principal('owner'), { user_name: 'The owner' }),
      surface: 'http' as const,
    };
    const rejected = await f.rt.dispatch(owner, 'approvals.reject', {
      approval_id: other.consent!.approval_id!,
    });
    assert.equal(rejected.ok, true, JSON.stringify(rejected.error));
    const list = await f.rt.dispatch(owner, 'approvals.list', { status: 'all' });
    assert.equal(list.ok, true, JSON.stringify(list.error));
    const items = (list.result as { approvals: Item[] }).approvals;
    const open = items.find((a) => a.approval_id === pending.consent!.approval_id)!;
    assert.deepEqual(open.preview, {
      current: { customer: 'Acme Ltd', invoice_id: 314, balance_due_cents: 20000 },
      projected: { customer: 'Acme Ltd', invoice_id: 314, balance_due_cents: 4100 },
      delta: { charged_cents: 15900 },
      reversible: false,
    });
    const closed = items.find((a) => a.approval_id === other.consent!.approval_id)!;
    assert.equal(closed.status, 'rejected');
    assert.equal(closed.preview, undefined, 'only pending approvals are previewed');
  });
});

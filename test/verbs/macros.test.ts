/**
 * macros.save / record / list / run (shape macro): saved chains replayed through the full
 * pipeline, with $from references, consent pauses and resumes, failing steps.
 * Spec: spec/shapes.md §macro.
 *
 * Run: node --import tsx --test test/verbs/macros.test.ts
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { call, createObserveRuntime, okResult, refused } from '../support/observe-verbs.ts';
import type { TestRuntime } from '../support/runtime.ts';
import { defineVerb } from '../../src/runtime/verb.ts';
import { validateShapeOutput } from '../../src/spec/validators.ts';
import type { Envelope, Surface, WebmcpSurface } from '../../src/spec/types.ts';

interface Step {
  index: number;
  verb: string;
  ok: boolean;
  status?: string;
  audit_id?: number;
  result?: Record<string, unknown>;
  error?: { reason: string; message: string };
  consent?: { nonce: string; typed_phrase?: string; gate: string };
}

/** A no-argument read exposed only where `where` says (surface tests). */
function exposedRead(name: string, where: { surfaces: Surface[]; webmcp_surfaces?: WebmcpSurface[] }) {
  return defineVerb({
    name,
    description: `A read exposed on ${where.surfaces.join(', ')} only.`,
    shape: 'aggregate',
    category: 'test',
    ...where,
    input: { type: 'object', additionalProperties: false },
    handler: async () => ({ entity_id: 1, data: {} }),
  });
}

async function counter(h: TestRuntime, name: string): Promise<number> {
  const r = await h.rt.store.read((q) =>
    q.get<{ value: number }>('SELECT value FROM counters WHERE company_id = ? AND name = ?', [
      h.companyId,
      name,
    ]),
  );
  return r === undefined ? 0 : Number(r.value);
}

async function macroCount(h: TestRuntime): Promise<number> {
  return Number((await h.rt.store.read((q) => q.get<{ n: number }>('SELECT COUNT(*) AS n FROM macros')))!.n);
}

async function save(
  h: TestRuntime,
  name: string,
  steps: unknown[],
  who: 'owner' | 'employee' = 'owner',
): Promise<string> {
  const r = okResult(await call(h, who, 'macros.save', { name, steps }), 'macro');
  assert.equal(r.status, 'saved');
  return r.macro_id as string;
}

/** The macro output a failed run carries in error.details, checked against the shape. */
function failedRun(env: Envelope): Record<string, unknown> {
  refused(env, 'macro_step_failed');
  const d = env.error!.details!;
  assert.deepEqual(validateShapeOutput('macro', d).errors, []);
  assert.equal(d.status, 'failed');
  return d;
}

describe('macros', () => {
  it('runs a saved chain, feeding later steps from earlier outputs by JSON Pointer', async (t) => {
    const h = await createObserveRuntime(t);
    const id = await save(h, 'bump-and-copy', [
      { verb: 'counter.bump', args: { name: 'm', by: 2 } },
      { verb: 'counter.get', args: { name: { $from: '/0/result/name' } } },
      { verb: 'counter.bump', args: { name: 'copy', by: { $from: '/1/result/data/value' } } },
    ]);
    const r = okResult(await call(h, 'employee', 'macros.run', { macro_id: id }), 'macro');
    assert.equal(r.status, 'completed');
    const steps = r.steps as Step[];
    assert.deepEqual(
      steps.map((s) => [s.index, s.verb, s.ok]),
      [
        [0, 'counter.bump', true],
        [1, 'counter.get', true],
        [2, 'counter.bump', true],
      ],
    );
    assert.equal(steps[0]!.status, 'completed');
    assert.ok(
      steps[0]!.audit_id! > 0 && typeof steps[0]!.result!.attestation === 'object',
      'a write step carries its receipt',
    );
    assert.equal(await counter(h, 'copy'), 2);
    // Each step left its own audit row, by the caller.
    const rows = await h.rt.store.read((q) =>
      q.all<{ action_type: string; user_id: number }>(
        'SELECT action_type, user_id FROM audit_log WHERE audit_id IN (?, ?)',
        [steps[0]!.audit_id, steps[2]!.audit_id],
      ),
    );
    assert.deepEqual(
      rows.map((x) => [x.action_type, Number(x.user_id)]),
      [
        ['counter.bump', 3],
        ['counter.bump', 3],
      ],
    );
    const again = okResult(
      await call(h, 'employee', 'macros.run', {
        macro_id: id,
        override_args: { '0': { name: 'other', by: 5 } },
      }),
      'macro',
    );
    assert.equal(
      ((again.steps as Step[])[1]!.result!.data as { value: number }).value,
      5,
      'override_args replace step 0 args',
    );
    assert.equal(await counter(h, 'copy'), 7);
  });

  it('stops at a typed-phrase step with its pending consent and resumes from that step', async (t) => {
    const h = await createObserveRuntime(t);
    const id = await save(h, 'bump-charge-bump', [
      { verb: 'counter.bump', args: { name: 'p' } },
      { verb: 'counter.charge', args: { name: 'p', amount: 40 } },
      { verb: 'counter.bump', args: { name: 'after', by: { $from: '/1/result/charged' } } },
    ]);
    const first = okResult(await call(h, 'owner', 'macros.run', { macro_id: id }), 'macro');
    assert.equal(first.status, 'pending');
    const steps = first.steps as Step[];
    assert.deepEqual(
      steps.map((s) => [s.verb, s.ok, s.error?.reason ?? null]),
      [
        ['counter.bump', true, null],
        ['counter.charge', false, 'dispatch_pending'],
      ],
    );
    const resume = first.resume as {
      token: string;
      step: number;
      consent: { nonce: string; typed_phrase: string; gate: string };
    };
    assert.equal(resume.step, 1);
    assert.equal(resume.consent.gate, 'typed_phrase');
    assert.equal(resume.consent.typed_phrase, 'CHARGE 40 to p');
    assert.equal(await counter(h, 'p'), 1, 'the gated step did not run');
    assert.equal(await counter(h, 'after'), 0, 'nor did anything after it');

    // Another user cannot use the token; a forged one is refused.
    refused(
      await call(
        h,
        'admin',
        'macros.run',
        { macro_id: id, resume: resume.token },
        { confirm: true, nonce: resume.consent.nonce, typed_phrase: 'CHARGE 40 to p' },
      ),
      'macro_invalid',
    );
    refused(
      await call(h, 'owner', 'macros.run', { macro_id: id, resume: `${resume.token.slice(0, -3)}abc` }),
      'macro_invalid',
    );

    const done = okResult(
      await call(
        h,
        'owner',
        'macros.run',
        { macro_id: id, resume: resume.token },
        { confirm: true, nonce: resume.consent.nonce, typed_phrase: 'CHARGE 40 to p' },
      ),
      'macro',
    );
    assert.equal(done.status, 'completed');
    assert.deepEqual(
      (done.steps as Step[]).map((s) => [s.index, s.ok]),
      [
        [0, true],
        [1, true],
        [2, true],
      ],
    );
    assert.equal((done.steps as Step[])[0]!.audit_id, steps[0]!.audit_id, 'step 0 is not run again');
    assert.equal(await counter(h, 'p'), 41);
    assert.equal(await counter(h, 'after'), 40);
    // The token worked once.
    refused(
      await call(
        h,
        'owner',
        'macros.run',
        { macro_id: id, resume: resume.token },
        { confirm: true, nonce: resume.consent.nonce, typed_phrase: 'CHARGE 40 to p' },
      ),
      'macro_invalid',
    );
  });

  it('a typed phrase inside macros.run arguments is refused: a paused step takes the phrase only from the transport (the human) or an approval', async (t) => {
    const h = await createObserveRuntime(t);
    const id = await save(h, 'just-charge', [{ verb: 'counter.charge', args: { name: 'm', amount: 7 } }]);
    const first = okResult(await call(h, 'owner', 'macros.run', { macro_id: id }), 'macro');
    const resume = first.resume as { token: string; consent: { nonce: string; approval_id: string } };
    // What a model would try over MCP: the phrase in the tool arguments.
    const smuggled = await call(h, 'owner', 'macros.run', {
      macro_id: id,
      resume: resume.token,
      confirm: true,
      nonce: resume.consent.nonce,
      typed_phrase: 'CHARGE 7 to m',
    });
    assert.equal(smuggled.error?.reason, 'invalid_input');
    assert.equal(await counter(h, 'm'), 0);
    // Confirm and nonce without a phrase (what an MCP client sends in _meta) keep the step pending…
    const again = okResult(
      await call(
        h,
        'owner',
        'macros.run',
        { macro_id: id, resume: resume.token },
        { confirm: true, nonce: resume.consent.nonce },
      ),
      'macro',
    );
    assert.equal(again.status, 'pending');
    assert.equal(await counter(h, 'm'), 0);
    // …until a human approves out of band with the phrase; then the nonce alone completes it.
    const approved = await h.rt.dispatch(
      { surface: 'http', principal: h.human('owner') },
      'approvals.approve',
      {
        approval_id: resume.consent.approval_id,
        typed_phrase: 'CHARGE 7 to m',
      },
    );
    assert.equal(approved.ok, true, JSON.stringify(approved));
    const r2 = again.resume as { token: string };
    const done = okResult(
      await call(
        h,
        'owner',
        'macros.run',
        { macro_id: id, resume: r2.token },
        { confirm: true, nonce: resume.consent.nonce },
      ),
      'macro',
    );
    assert.equal(done.status, 'completed');
    assert.equal(await counter(h, 'm'), 7);
  });

  it('a wrong phrase fails the run at that step; the run can be retried from there', async (t) => {
    const h = await createObserveRuntime(t);
    const id = await save(h, 'charge-then-bump', [
      { verb: 'counter.charge', args: { name: 'q', amount: 3 } },
      { verb: 'counter.bump', args: { name: 'q' } },
    ]);
    const p = okResult(await call(h, 'owner', 'macros.run', { macro_id: id }), 'macro');
    const r1 = p.resume as { token: string; consent: { nonce: string } };
    const failed = failedRun(
      await call(
        h,
        'owner',
        'macros.run',
        { macro_id: id, resume: r1.token },
        { confirm: true, nonce: r1.consent.nonce, typed_phrase: 'CHARGE 3 to Q' },
      ),
    );
    assert.equal(failed.failed_step, 0);
    assert.equal((failed.steps as Step[])[0]!.error!.reason, 'phrase_mismatch');
    assert.equal(await counter(h, 'q'), 0);
    const retry = okResult(
      await call(h, 'owner', 'macros.run', {
        macro_id: id,
        resume: (failed.resume as { token: string }).token,
      }),
      'macro',
    );
    assert.equal(retry.status, 'pending', 'the retried step asks for consent again');
    const r2 = retry.resume as { token: string; consent: { nonce: string } };
    const done = okResult(
      await call(
        h,
        'owner',
        'macros.run',
        { macro_id: id, resume: r2.token },
        { confirm: true, nonce: r2.consent.nonce, typed_phrase: 'CHARGE 3 to q' },
      ),
      'macro',
    );
    assert.equal(done.status, 'completed');
    assert.equal(await counter(h, 'q'), 4);
  });

  it('never bypasses a gate: role floors and surfaces apply to every step', async (t) => {
    const h = await createObserveRuntime(t);
    h.rt.register(exposedRead('counter.cli_only', { surfaces: ['cli'] }));
    const id = await save(h, 'charge', [
      { verb: 'counter.bump', args: { name: 'r' } },
      { verb: 'counter.charge', args: { name: 'r', amount: 1 } },
    ]);
    const denied = failedRun(await call(h, 'employee', 'macros.run', { macro_id: id }));
    assert.equal(denied.failed_step, 1);
    assert.equal((denied.steps as Step[])[1]!.error!.reason, 'role_denied');
    assert.equal(await counter(h, 'r'), 1, 'steps before the failure stay done (each is its own write)');
    const cli = await save(h, 'cli', [{ verb: 'counter.cli_only', args: {} }]);
    const viaHttp = failedRun(await call(h, 'owner', 'macros.run', { macro_id: cli }));
    assert.equal((viaHttp.steps as Step[])[0]!.error!.reason, 'surface_denied');
    okResult(
      await h.rt.dispatch({ principal: h.principal('owner'), surface: 'cli' }, 'macros.run', {
        macro_id: cli,
      }),
      'macro',
    );
    refused(await h.rt.dispatch({ surface: 'http' }, 'macros.run', { macro_id: cli }), 'auth_required');
  });

  it('on WebMCP, every step must be exposed on the page surface the run came from', async (t) => {
    const h = await createObserveRuntime(t);
    h.rt.register(
      exposedRead('counter.dashboard_only', {
        surfaces: ['cli', 'http', 'webmcp'],
        webmcp_surfaces: ['dashboard'],
      }),
    );
    const id = await save(h, 'dash', [{ verb: 'counter.dashboard_only', args: {} }]);
    const owner = h.principal('owner');
    const fromDeveloper = failedRun(
      await h.rt.dispatch({ principal: owner, surface: 'webmcp', webmcpSurface: 'developer' }, 'macros.run', {
        macro_id: id,
      }),
    );
    assert.equal((fromDeveloper.steps as Step[])[0]!.error!.reason, 'surface_denied');
    // the same verb called directly from that page is refused the same way
    refused(
      await h.rt.dispatch(
        { principal: owner, surface: 'webmcp', webmcpSurface: 'developer' },
        'counter.dashboard_only',
        {},
      ),
      'surface_denied',
    );
    okResult(
      await h.rt.dispatch({ principal: owner, surface: 'webmcp', webmcpSurface: 'dashboard' }, 'macros.run', {
        macro_id: id,
      }),
      'macro',
    );
  });

  it('fails the run at a step whose reference does not resolve at run time', async (t) => {
    const h = await createObserveRuntime(t);
    const id = await save(h, 'bad-path', [
      { verb: 'counter.bump', args: { name: 's' } },
      { verb: 'counter.bump', args: { name: { $from: '/0/result/no_such_field' } } },
    ]);
    const failed = failedRun(await call(h, 'employee', 'macros.run', { macro_id: id }));
    assert.equal(failed.failed_step, 1);
    assert.equal((failed.steps as Step[])[1]!.error!.reason, 'macro_invalid');
  });

  it('refuses invalid chains at save with macro_invalid and stores nothing', async (t) => {
    const h = await createObserveRuntime(t);
    const cases: Array<[unknown[], string]> = [
      [[{ verb: 'customer_delete', args: {} }], '/steps/0/verb'],
      [[{ verb: 'counter.bump', args: { name: 'a' } }, { verb: 'Customer-Delete' }], '/steps/1/verb'],
      [[{ verb: 'no.such_verb' }], '/steps/0/verb'],
      [[{ verb: 'macros.run', args: { macro_id: 'x' } }], '/steps/0/verb'],
      [[{ verb: 'counter.bump', args: { name: { $from: '/0/result/name' } } }], '/steps/0/args/name'],
      [
        [
          { verb: 'counter.bump', args: { name: 'a' } },
          { verb: 'counter.bump', args: { name: { $from: '/5/result/name' } } },
        ],
        '/steps/1/args/name',
      ],
      [
        [
          { verb: 'counter.bump', args: { name: 'a' } },
          { verb: 'counter.get', args: { name: { $from: '/0/bogus' } } },
        ],
        '/steps/1/args/name',
      ],
      [
        [
          { verb: 'counter.bump', args: { name: 'a' } },
          { verb: 'counter.get', args: { name: { $from: 'result/name' } } },
        ],
        '/steps/1/args/name',
      ],
    ];
    for (const [steps, path] of cases) {
      const e = refused(await call(h, 'owner', 'macros.save', { name: 'bad', steps }), 'macro_invalid');
      assert.equal(e.path, path, e.message);
      assert.ok(e.hint);
    }
    assert.equal(await macroCount(h), 0);
    refused(
      await call(h, 'read_only', 'macros.save', {
        name: 'x',
        steps: [{ verb: 'counter.get', args: { name: 'a' } }],
      }),
      'role_denied',
    );
    refused(await call(h, 'owner', 'macros.run', { macro_id: 'mac_missing' }), 'macro_not_found');
    const id = await save(h, 'one', [{ verb: 'counter.get', args: { name: 'a' } }]);
    refused(
      await call(h, 'owner', 'macros.run', { macro_id: id, override_args: { '3': { name: 'b' } } }),
      'macro_invalid',
    );
    refused(await call(h, 'owner', 'macros.run', { macro_id: id, nonce: 'n' }), 'invalid_input');
    refused(
      await call(h, h.principal('owner', h.otherCompanyId), 'macros.run', { macro_id: id }),
      'macro_not_found',
    );
  });

  it("records a macro from the caller's own completed calls and replays it", async (t) => {
    const h = await createObserveRuntime(t);
    const first = await call(h, 'employee', 'counter.bump', { name: 'rec', by: 3 });
    await call(h, 'employee', 'verbs.list', {});
    await call(h, 'employee', 'counter.bump', { name: 'rec', fail: true });
    await call(h, 'admin', 'counter.bump', { name: 'someone-else' });
    await call(h, 'employee', 'counter.get', { name: 'rec' });
    // A read's audit row takes its audit_id when the read buffer flushes (up to 100 ms later), so
    // without this flush a write made meanwhile could take a lower id than the read and the range
    // below would depend on the timer (spec/audit.md §read-rows).
    await h.rt.auditBuffer.flush();
    await call(h, 'employee', 'counter.charge', { name: 'rec', amount: 1 });
    const last = await call(h, 'employee', 'counter.bump', { name: 'rec2' });
    await h.rt.auditBuffer.flush();
    const r = okResult(
      await call(h, 'employee', 'macros.record', {
        name: 'recorded',
        from_audit_id: first.audit_id,
        to_audit_id: last.audit_id,
      }),
      'macro',
    );
    assert.deepEqual(
      (r.chain as Array<{ verb: string; args: Record<string, unknown> }>).map((s) => [s.verb, s.args]),
      [
        ['counter.bump', { name: 'rec', by: 3 }],
        ['counter.get', { name: 'rec' }],
        ['counter.bump', { name: 'rec2' }],
      ],
    );
    const run = okResult(await call(h, 'employee', 'macros.run', { macro_id: r.macro_id }), 'macro');
    assert.equal(run.status, 'completed');
    assert.equal(await counter(h, 'rec'), 6);
    const list = await call(h, 'read_only', 'macros.list', {});
    assert.equal(list.ok, true);
    // A listing is an aggregate of the tenant (spec/shapes.md §macro), valid against that shape.
    assert.deepEqual(validateShapeOutput('aggregate', list.result).errors, []);
    const data = list.result!.data as { macros: Array<{ updated_at: string }> };
    assert.deepEqual(list.result, {
      entity_type: 'tenant',
      entity_id: list.result!.entity_id,
      fetched_at: list.result!.fetched_at,
      data: {
        macros: [
          {
            macro_id: r.macro_id,
            name: 'recorded',
            description: r.description,
            version: 1,
            verbs: ['counter.bump', 'counter.get', 'counter.bump'],
            created_by: 3,
            updated_at: data.macros[0]!.updated_at,
          },
        ],
        total: 1,
      },
    });
    const v2 = okResult(
      await call(h, 'employee', 'macros.save', {
        name: 'recorded',
        steps: [{ verb: 'counter.get', args: { name: 'rec' } }],
      }),
      'macro',
    );
    assert.deepEqual(
      [v2.macro_id, v2.version],
      [r.macro_id, 2],
      'saving under the same name replaces the macro',
    );
  });

  it("refuses to record redacted arguments, or a range without the caller's completed calls", async (t) => {
    const h = await createObserveRuntime(t);
    h.rt.register(
      defineVerb<{ name: string; token: string }>({
        name: 'counter.secret_bump',
        description: 'Bump with a secret token.',
        shape: 'receipt',
        category: 'test',
        secret_fields: ['token'],
        input: {
          type: 'object',
          properties: { name: { type: 'string' }, token: { type: 'string' } },
          required: ['name', 'token'],
          additionalProperties: false,
        },
        delegateConsent: async () => ({ consentClass: null, roleFloor: 'employee', summary: 'Bump.' }),
        handler: async (_ctx, a) => ({ name: a.name }),
      }),
    );
    const a = await call(h, 'employee', 'counter.bump', { name: 'z' });
    const b = await call(h, 'employee', 'counter.secret_bump', { name: 'z', token: 'hunter2' });
    const e = refused(
      await call(h, 'employee', 'macros.record', {
        name: 'leak',
        from_audit_id: a.audit_id,
        to_audit_id: b.audit_id,
      }),
      'macro_invalid',
    );
    assert.match(e.message, /redacted/);
    refused(
      await call(h, 'admin', 'macros.record', {
        name: 'theirs',
        from_audit_id: a.audit_id,
        to_audit_id: b.audit_id,
      }),
      'macro_invalid',
    );
    assert.equal(await macroCount(h), 0);
  });
});

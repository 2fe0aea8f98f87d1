/**
 * An HTTP server on a test runtime (createTestRuntime) with a few small verbs, driven with
 * Fastify's inject() (no sockets). Cleans up with t.after.
 *
 * Verbs: notes.count (READ aggregate), notes_add (WRITE_REVERSIBLE receipt; args.hold waits on
 * `gate` inside the write transaction), notes_charge (WRITE_FINANCIAL with a typed phrase),
 * notes.enterprise_report (tier floor enterprise), notes.cli_only (surfaces ['cli']),
 * notes.store_down (READ whose handler loses the database), notes.crash (READ that throws).
 */
import type { TestContext } from 'node:test';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { createTestRuntime, type TestRuntime } from '../../support/runtime.ts';
import { createHttpServer, type HttpServerOptions } from '../../../src/transports/http/server.ts';
import { defineVerb } from '../../../src/runtime/verb.ts';
import { StoreError } from '../../../src/store/store.ts';
import type { Envelope } from '../../../src/spec/types.ts';

export interface HttpHarness {
  h: TestRuntime;
  app: FastifyInstance;
  /** Resolve to let a held notes_add finish. */
  release(): void;
  /** Resolves when a notes_add with hold:true is inside its handler. */
  entered: Promise<void>;
  /** POST /api/v1/agent/dispatch/<verb> with a JSON body and optional key / headers. */
  dispatch(
    verb: string,
    body?: unknown,
    options?: { key?: string; headers?: Record<string, string> },
  ): Promise<LightMyRequestResponse>;
  inject(options: InjectOptions): Promise<LightMyRequestResponse>;
}

export function envelopeOf(res: LightMyRequestResponse): Envelope {
  return res.json() as Envelope;
}

export async function createHttpHarness(
  t: TestContext,
  options: HttpServerOptions = {},
): Promise<HttpHarness> {
  const h = await createTestRuntime(t);
  await h.rt.store.migrate('test-notes', [
    {
      version: 1,
      name: 'notes',
      sqlite: 'CREATE TABLE notes (id INTEGER PRIMARY KEY, company_id INTEGER NOT NULL, text TEXT NOT NULL)',
    },
  ]);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let signalEntered!: () => void;
  const entered = new Promise<void>((r) => (signalEntered = r));
  h.rt.register(
    defineVerb({
      name: 'notes.count',
      description: 'Count the notes of the tenant.',
      shape: 'aggregate',
      category: 'crm',
      input: {
        type: 'object',
        properties: { min_length: { type: 'integer', minimum: 0 } },
        additionalProperties: false,
      },
      async handler(ctx) {
        const r = await ctx.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM notes WHERE company_id = ?', [
          ctx.principal.company_id,
        ]);
        return {
          entity_id: ctx.principal.company_id,
          data: { notes: Number(r!.n), company_id: ctx.principal.company_id },
        };
      },
    }),
    defineVerb({
      name: 'notes_add',
      description: 'Add a note.',
      shape: 'receipt',
      category: 'crm',
      consent: 'WRITE_REVERSIBLE',
      input: {
        type: 'object',
        properties: { text: { type: 'string', minLength: 1 }, hold: { type: 'boolean' } },
        required: ['text'],
        additionalProperties: false,
      },
      async handler(ctx, args: { text: string; hold?: boolean }) {
        if (args.hold) {
          signalEntered();
          await gate;
        }
        const r = await ctx.db.run('INSERT INTO notes (company_id, text) VALUES (?, ?)', [
          ctx.principal.company_id,
          args.text,
        ]);
        ctx.setRollback(`notes:add:${String(r.lastInsertId)}`, { id: r.lastInsertId });
        return { note_id: r.lastInsertId };
      },
      revert: {
        async handler(ctx, original) {
          await ctx.db.run('DELETE FROM notes WHERE id = ? AND company_id = ?', [
            original.rollback.id,
            ctx.principal.company_id,
          ]);
          return { revert_action: `deleted note ${String(original.rollback.id)}` };
        },
      },
    }),
    defineVerb({
      name: 'notes_charge',
      description: 'Charge for a note (financial).',
      shape: 'receipt',
      category: 'payments',
      consent: 'WRITE_FINANCIAL',
      input: {
        type: 'object',
        properties: { amount_cents: { type: 'integer', minimum: 1 } },
        required: ['amount_cents'],
        additionalProperties: false,
      },
      phrase: (a: { amount_cents: number }) => `CHARGE ${a.amount_cents} CENTS`,
      async handler(_ctx, a: { amount_cents: number }) {
        return { charged_cents: a.amount_cents };
      },
    }),
    defineVerb({
      name: 'notes.enterprise_report',
      description: 'Enterprise only.',
      shape: 'aggregate',
      category: 'crm',
      tier_floor: 'enterprise',
      input: { type: 'object', properties: {} },
      handler: async (ctx) => ({ entity_id: ctx.principal.company_id, data: {} }),
    }),
    defineVerb({
      name: 'notes.cli_only',
      description: 'Only on the CLI.',
      shape: 'aggregate',
      category: 'crm',
      surfaces: ['cli'],
      input: { type: 'object', properties: {} },
      handler: async (ctx) => ({ entity_id: ctx.principal.company_id, data: {} }),
    }),
    defineVerb({
      name: 'notes.crash',
      description: 'Crashes.',
      shape: 'aggregate',
      category: 'crm',
      input: { type: 'object', properties: {} },
      handler: async () => {
        throw new Error('secret stack detail /etc/passwd');
      },
    }),
    defineVerb({
      name: 'notes.store_down',
      description: 'Loses the database.',
      shape: 'aggregate',
      category: 'crm',
      input: { type: 'object', properties: {} },
      handler: async () => {
        throw new StoreError('unavailable', 'disk I/O error');
      },
    }),
  );
  const app = createHttpServer(h.rt, { logger: false, ...options });
  t.after(() => app.close());
  await app.ready();
  return {
    h,
    app,
    release,
    entered,
    inject: (o) => app.inject(o),
    dispatch(verb, body, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      if (o.key !== undefined) headers.authorization = `Bearer ${o.key}`;
      return app.inject({
        method: 'POST',
        url: `/api/v1/agent/dispatch/${verb}`,
        ...(body === undefined ? {} : { payload: body as object }),
        headers,
      });
    },
  };
}

/**
 * An HTTP server on a test runtime (createTestRuntime) with a few small verbs, driven with
 * Fastify's inject() (no sockets). Cleans up with t.after.
 *
 * Verbs: the notes test pack (test/support/notes-pack.ts: notes.count, notes_add with `hold`,
 * notes_charge, notes.enterprise_report, …) plus notes.cli_only (surfaces ['cli']),
 * notes.store_down (READ whose handler loses the database), notes.crash (READ that throws).
 */
import type { TestContext } from 'node:test';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { createTestRuntime, type TestRuntime } from '../../support/runtime.ts';
import { installNotesPack } from '../../support/notes-pack.ts';
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
  const { release, entered } = await installNotesPack(h);
  h.rt.register(
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

/**
 * MCP test support: test verbs of each consent class and shape, a runtime with them, and the
 * SDK's own Client connected in-process (InMemoryTransport linked pair) — a real peer.
 */
import type { TestContext } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import {
  ElicitRequestSchema,
  type ElicitRequest,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { createTestRuntime, type TestRuntime } from '../../support/runtime.ts';
import type { Runtime } from '../../../src/runtime/runtime.ts';
import { defineVerb, type VerbDefinition } from '../../../src/runtime/verb.ts';
import { formatCents } from '../../../src/runtime/consent/typed-phrase.ts';
import { createMcpServer, type McpServerOptions } from '../../../src/transports/mcp/mcp-server.ts';

/** How many times each test write handler ran (tests assert nothing ran on a denial). */
export interface Runs {
  note: number;
  charge: number;
  purge: number;
}

/** Test verbs: READ aggregate, WRITE_REVERSIBLE, WRITE_FINANCIAL, IRREVERSIBLE, an http-only verb, a big/slow read. */
export function testVerbs(runs: Runs): VerbDefinition[] {
  return [
    defineVerb({
      name: 'test.echo',
      title: 'Echo',
      description: 'Echo the arguments back as an aggregate (test).',
      shape: 'aggregate',
      category: 'test',
      input: {
        type: 'object',
        properties: {
          text: { type: 'string', description: 'Any text.' },
          count: { type: 'integer', minimum: 0, description: 'A count.' },
          tags: { type: 'array', description: 'Tags (no items schema on purpose).' },
          note: { type: ['string', 'null'], description: 'Required but nullable.' },
        },
        required: ['text', 'note'],
        additionalProperties: false,
      },
      idempotent: true,
      async handler(_ctx, args) {
        return { entity_id: 1, entity_type: 'echo', data: args };
      },
    }),
    defineVerb({
      name: 'test.blob',
      description: 'Return a blob of `bytes` characters (test of large outputs).',
      shape: 'aggregate',
      category: 'test',
      input: {
        type: 'object',
        properties: { bytes: { type: 'integer', minimum: 0 } },
        required: ['bytes'],
        additionalProperties: false,
      },
      async handler(_ctx, args: { bytes: number }) {
        return { entity_id: 'blob', data: { blob: 'x'.repeat(args.bytes) } };
      },
    }),
    defineVerb({
      name: 'test.slow',
      description: 'Count to `steps`, reporting progress, until done or cancelled (test).',
      shape: 'aggregate',
      category: 'test',
      input: {
        type: 'object',
        properties: { steps: { type: 'integer', minimum: 1 }, delay_ms: { type: 'integer', minimum: 0 } },
        required: ['steps'],
        additionalProperties: false,
      },
      async handler(ctx, args: { steps: number; delay_ms?: number }) {
        let done = 0;
        for (; done < args.steps; done++) {
          if (ctx.signal.aborted) break;
          ctx.progress(done + 1, args.steps, `step ${done + 1}`);
          await new Promise((r) => setTimeout(r, args.delay_ms ?? 5));
        }
        slowState.lastAborted = ctx.signal.aborted;
        return { entity_id: 'slow', data: { done, aborted: ctx.signal.aborted } };
      },
    }),
    defineVerb({
      name: 'test.note_add',
      title: 'Add a note',
      description: 'Add a note (WRITE_REVERSIBLE, test).',
      shape: 'receipt',
      category: 'test',
      consent: 'WRITE_REVERSIBLE',
      input: {
        type: 'object',
        properties: { text: { type: 'string', minLength: 1 } },
        required: ['text'],
        additionalProperties: false,
      },
      summary: (a: { text: string }) => `Add the note "${a.text}".`,
      async handler(ctx, args: { text: string }) {
        runs.note++;
        ctx.setRollback(`note:${args.text}`, { text: args.text });
        return { status: 'added', note: args.text };
      },
      revert: {
        async handler() {
          return { revert_action: 'note removed' };
        },
      },
    }),
    defineVerb({
      name: 'test.charge',
      title: 'Charge an invoice',
      description: 'Charge an invoice (WRITE_FINANCIAL, test).',
      shape: 'receipt',
      category: 'test',
      consent: 'WRITE_FINANCIAL',
      open_world: true,
      input: {
        type: 'object',
        properties: {
          invoice_id: { type: 'integer', minimum: 1 },
          amount_cents: { type: 'integer', minimum: 1 },
        },
        required: ['invoice_id', 'amount_cents'],
        additionalProperties: false,
      },
      phrase: (a: { invoice_id: number; amount_cents: number }) =>
        `CHARGE ${formatCents(a.amount_cents)} to invoice #${a.invoice_id}`,
      summary: (a: { invoice_id: number; amount_cents: number }) =>
        `Charge ${formatCents(a.amount_cents)} to invoice #${a.invoice_id}.`,
      async handler(_ctx, args: { invoice_id: number; amount_cents: number }) {
        runs.charge++;
        return { status: 'charged', invoice_id: args.invoice_id, amount_cents: args.amount_cents };
      },
    }),
    defineVerb({
      name: 'test.purge',
      description: 'Delete a contact permanently (IRREVERSIBLE, test).',
      shape: 'receipt',
      category: 'test',
      consent: 'IRREVERSIBLE',
      input: {
        type: 'object',
        properties: { contact_id: { type: 'integer', minimum: 1 } },
        required: ['contact_id'],
        additionalProperties: false,
      },
      phrase: (a: { contact_id: number }) => `DELETE CONTACT ${a.contact_id} PERMANENTLY (yes? [really])`,
      async handler(_ctx, args: { contact_id: number }) {
        runs.purge++;
        return { status: 'deleted', contact_id: args.contact_id };
      },
    }),
    defineVerb({
      name: 'test.http_only',
      description: 'Only on HTTP (test of the surface filter).',
      shape: 'aggregate',
      category: 'test',
      surfaces: ['http'],
      input: { type: 'object', properties: {} },
      async handler() {
        return { entity_id: 0, data: {} };
      },
    }),
  ];
}

export const slowState = { lastAborted: false };

export interface McpHarness extends TestRuntime {
  runs: Runs;
}

/** A test runtime with the system verbs and the test verbs. */
export async function createMcpRuntime(t: TestContext): Promise<McpHarness> {
  const h = await createTestRuntime(t);
  const runs: Runs = { note: 0, charge: 0, purge: 0 };
  h.rt.register(...testVerbs(runs));
  return { ...h, runs };
}

export type ElicitHandler = (req: ElicitRequest) => Promise<ElicitResult> | ElicitResult;

/**
 * Connect the SDK Client to a fresh server over an in-memory linked pair. With `elicit`, the
 * client declares form elicitation and answers with it (the "human").
 */
export async function connectInMemory(
  t: TestContext,
  h: { rt: Runtime },
  options: { apiKey?: string | null; elicit?: ElicitHandler; server?: McpServerOptions } = {},
): Promise<Client> {
  const server = createMcpServer(h.rt, {
    credentials: () => ({ apiKey: options.apiKey ?? null }),
    ...options.server,
  });
  const client = new Client(
    { name: 'test-client', version: '1.0.0' },
    { capabilities: options.elicit ? { elicitation: { form: {} } } : {} },
  );
  if (options.elicit) client.setRequestHandler(ElicitRequestSchema, async (req) => options.elicit!(req));
  const [a, b] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(a), client.connect(b)]);
  t.after(async () => {
    await client.close();
    await server.close();
  });
  return client;
}

/** The exact phrase shown in an elicitation request (read by the "human" from the form). */
export function phraseShown(req: ElicitRequest): string {
  const params = req.params as {
    requestedSchema?: { properties?: Record<string, { description?: string }> };
    message: string;
  };
  const d = params.requestedSchema?.properties?.typed_phrase?.description ?? '';
  return d.replace(/^Type exactly: /, '');
}

/** Every key of a JSON value, recursively (for "no $ref anywhere" style checks). */
export function allKeys(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const n of node) allKeys(n, out);
  else if (node !== null && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      out.push(k);
      allKeys(v, out);
    }
  }
  return out;
}

/** Every subschema of a schema (objects reachable through schema keywords). */
export function subschemas(schema: unknown, out: Record<string, unknown>[] = []): Record<string, unknown>[] {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return out;
  const s = schema as Record<string, unknown>;
  out.push(s);
  for (const k of ['items', 'additionalProperties', 'not', 'contains', 'propertyNames'])
    if (s[k] !== undefined) subschemas(s[k], out);
  for (const k of ['anyOf', 'oneOf', 'allOf'])
    if (Array.isArray(s[k])) for (const b of s[k] as unknown[]) subschemas(b, out);
  for (const k of ['properties', 'patternProperties'])
    if (s[k] && typeof s[k] === 'object') for (const v of Object.values(s[k] as object)) subschemas(v, out);
  return out;
}

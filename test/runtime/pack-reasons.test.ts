/**
 * Pack reasons (spec/reasons.md §domain): a pack declares its reasons in `definePack({ reasons })`,
 * installPack stores them on that runtime's registry, and the HTTP transport answers a declared
 * reason with its status. Another runtime of the same process does not inherit them: there the
 * same reason is undeclared and answers 422, as every undeclared domain reason does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestRuntime } from '../support/runtime.ts';
import { createHttpServer } from '../../src/transports/http/server.ts';
import { definePack, installPack, checkPacks, PackError } from '../../src/runtime/pack.ts';
import { defineVerb } from '../../src/runtime/verb.ts';
import { VerbError } from '../../src/runtime/errors.ts';
import { packRefusals } from '../../src/runtime/refusals.ts';
import { packReason } from '../../src/spec/reasons.ts';
import { exitCodeOf } from '../../src/transports/cli/output.ts';
import type { Envelope } from '../../src/spec/types.ts';

const reasons = {
  shop_out_of_stock: {
    status: 409,
    kind: 'conflict',
    summary: 'No copies of that title are left.',
    hint: 'Order the title from the publisher first.',
  },
  shop_bad_isbn: { status: 400, kind: 'input', summary: 'The ISBN does not check out.' },
} as const;
const refuse = packRefusals(reasons);

const sellVerb = (name: string, refusal: () => VerbError) =>
  defineVerb({
    name,
    description: 'Sell one copy of a title (always out of stock in this test).',
    shape: 'aggregate',
    category: 'shop',
    input: { type: 'object', properties: {}, additionalProperties: false },
    handler: async () => {
      throw refusal();
    },
  });

const declaring = definePack({
  name: 'shop-declared',
  description: 'A shop that declares its reasons.',
  migrations: [],
  verbs: [
    sellVerb('shop.sell', () => refuse.shop_out_of_stock('"Dune" is out of stock.')),
    sellVerb('shop.check_isbn', () => refuse.shop_bad_isbn('978-0 is not an ISBN.')),
  ],
  reasons,
});

const undeclaring = definePack({
  name: 'shop-silent',
  description: 'A shop that throws the same reason without declaring it.',
  migrations: [],
  verbs: [
    sellVerb('shop.sell', () => new VerbError(packReason('shop_out_of_stock'), '"Dune" is out of stock.')),
  ],
});

async function post(rt: Parameters<typeof createHttpServer>[0], key: string, verb: string) {
  const app = createHttpServer(rt, { logger: false });
  try {
    const res = await app.inject({
      method: 'POST',
      url: `/api/v1/agent/dispatch/${verb}`,
      payload: { args: {} },
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    });
    return { status: res.statusCode, env: res.json() as Envelope };
  } finally {
    await app.close();
  }
}

test("a pack's declared reason answers its status over HTTP, with the declared hint", async (t) => {
  const a = await createTestRuntime(t);
  await installPack(a.rt, declaring);
  const { status, env } = await post(a.rt, a.keys.owner, 'shop.sell');
  assert.equal(status, 409);
  assert.equal(env.error?.reason, 'shop_out_of_stock');
  assert.equal(env.error?.message, '"Dune" is out of stock.');
  assert.equal(env.error?.hint, 'Order the title from the publisher first.');
  assert.equal(a.rt.registry.reasons.info('shop_out_of_stock').kind, 'conflict');
  assert.equal(a.rt.registry.reasons.ownerOf('shop_out_of_stock'), 'shop-declared');
  // kind input: 400 on HTTP and the CLI's input exit code 2 (not the domain default 1).
  const bad = await post(a.rt, a.keys.owner, 'shop.check_isbn');
  assert.equal(bad.status, 400);
  assert.equal(exitCodeOf(bad.env, a.rt.registry.reasons), 2);
});

test('another runtime in the same process does not see those reasons: undeclared stays 422', async (t) => {
  const a = await createTestRuntime(t);
  await installPack(a.rt, declaring);
  const b = await createTestRuntime(t);
  await installPack(b.rt, undeclaring);
  const { status, env } = await post(b.rt, b.keys.owner, 'shop.sell');
  // Today's answer for an undeclared domain reason: 422, the reason and message as thrown.
  assert.equal(status, 422);
  assert.equal(env.error?.reason, 'shop_out_of_stock');
  assert.equal(env.error?.message, '"Dune" is out of stock.');
  assert.equal(env.error?.hint, undefined);
  assert.equal(b.rt.registry.reasons.has('shop_out_of_stock'), false);
  assert.equal(exitCodeOf(env, b.rt.registry.reasons), 1);
});

test('two packs declaring one reason differently are refused before anything is installed', () => {
  const other = definePack({
    name: 'shop-other',
    description: 'Declares shop_out_of_stock as a 422.',
    migrations: [],
    verbs: [sellVerb('other.sell', () => refuse.shop_out_of_stock('x'))],
    reasons: { shop_out_of_stock: { status: 422, summary: 'Gone.' } },
  });
  assert.throws(
    () => checkPacks([declaring, other]),
    (err: unknown) =>
      err instanceof PackError &&
      err.field === 'reasons.shop_out_of_stock' &&
      /shop-declared/.test(err.message),
  );
  assert.throws(
    () =>
      definePack({
        name: 'shop-kind',
        description: 'A safety-layer kind is not a pack kind.',
        migrations: [],
        verbs: [sellVerb('kind.sell', () => refuse.shop_out_of_stock('x'))],
        reasons: { shop_nope: { status: 403, kind: 'denied' as 'domain', summary: 'No.' } },
      }),
    /kind must be one of/,
  );
});

test('a core reason is type-checked: a typo does not compile', () => {
  // @ts-expect-error -- 'not_fund' is no reason of the table (tsc --noEmit fails if this compiles)
  const typo = new VerbError('not_fund', 'x');
  assert.equal(typo.reason, 'not_fund');
  const ok = new VerbError('not_found', 'No deal 7 exists for this tenant.');
  assert.equal(ok.toEnvelopeError().reason, 'not_found');
});

test("the pipeline reads the runtime's table: a pack's not_found reason under the sandbox gets the keyless hint", async (t) => {
  const a = await createTestRuntime(t);
  await installPack(
    a.rt,
    definePack({
      name: 'shop-lookup',
      description: 'A shop whose lookups refuse with a declared not-found reason.',
      migrations: [],
      verbs: [sellVerb('shop.find', () => new VerbError(packReason('shop_title_missing'), 'No title 7.'))],
      reasons: { shop_title_missing: { status: 404, kind: 'not_found', summary: 'No such title.' } },
    }),
  );
  // No key: the sandbox principal answers, and a tenant-scoped not-found says so.
  const env = await a.rt.dispatch({ surface: 'http' }, 'shop.find', {});
  assert.equal(env.error?.reason, 'shop_title_missing');
  assert.match(env.error?.hint ?? '', /carried no API key, so it read the sandbox tenant/);
  assert.deepEqual(env.tenant, { id: a.sandboxId, sandbox: true });
});

/**
 * The starter project `solid init --starter NAME` writes: a pack in plain ESM JavaScript over its own
 * tables (one aggregate read, one preview, one confirmed write with a revert handler, one
 * WRITE_FINANCIAL charge with a typed phrase whose revert refunds it), its test
 * under `solid-verbs/testing` (`node --test`), a package.json and a README. Kept as strings here
 * so the built package ships them inside dist/. Spec: spec/manifest.md §packs.
 */

/** A pack name `solid init --starter` accepts: it names the verbs (`NAME.items`) and the table. */
export const STARTER_NAME = /^[a-z][a-z0-9_]{0,39}$/;

/**
 * The files of the starter project, path (relative to the project folder) → contents.
 * `name` must match {@link STARTER_NAME}; `dependency` is the solid-verbs spec written into
 * package.json: a `file:` tarball (init.ts starterSource) while solid-verbs is not on the npm
 * registry — a registry range there would install whatever a stranger publishes under the name.
 */
export function starterFiles(name: string, dependency: string): Record<string, string> {
  const table = `${name}_items`;
  return {
    'package.json': `${JSON.stringify(
      {
        name: name.replaceAll('_', '-'),
        private: true,
        type: 'module',
        description: `The ${name} pack: verbs for AI agents, served with solid-verbs.`,
        scripts: {
          // exec: the server replaces the shell, so stopping npm (Ctrl-C, SIGTERM) stops it.
          start: `[ -e .solid/solid.db ] || solid init; exec solid serve --pack ./pack.mjs`,
          test: 'node --test test/',
        },
        dependencies: { 'solid-verbs': dependency },
      },
      null,
      2,
    )}\n`,
    'pack.mjs': packModule(name, table),
    'test/pack.test.mjs': testModule(name),
    'README.md': readme(name, dependency),
    '.gitignore': 'node_modules/\n.solid/\n',
  };
}

function packModule(name: string, table: string): string {
  const charges = `${name}_charges`;
  return `// The ${name} pack: items with a price, served to AI agents by solid-verbs.
//
//   ${name}.items             aggregate, READ: the items and their total value
//   ${name}.item_add_preview  preview: what ${name}.item_add would change
//   ${name}.item_add          receipt, WRITE_REVERSIBLE (a human confirms): add an item; revert removes it
//   ${name}.charge            receipt, WRITE_FINANCIAL (a human types the phrase): charge a customer
//                             for an item; revert (audit.revert, its rollback_handle) refunds it
//
// Money is integer cents. Every query is scoped to ctx.principal.company_id (one tenant each).
import { definePack, defineVerb, formatCents, VerbError } from 'solid-verbs';

const itemInput = {
  type: 'object',
  properties: {
    title: { type: 'string', minLength: 1, maxLength: 200 },
    price_cents: { type: 'integer', minimum: 0, maximum: 10000000 },
  },
  required: ['title', 'price_cents'],
  additionalProperties: false,
};

async function totals(ctx) {
  const row = await ctx.db.get(
    'SELECT COUNT(*) AS n, COALESCE(SUM(price_cents), 0) AS cents FROM ${table} WHERE company_id = ?',
    [ctx.principal.company_id],
  );
  return { items: Number(row.n), value_cents: Number(row.cents) };
}

const items = defineVerb({
  name: '${name}.items',
  title: 'The items',
  description: 'List the items with their price in cents, and the totals. Use it before adding an item.',
  shape: 'aggregate',
  category: '${name}',
  input: { type: 'object', properties: {}, additionalProperties: false },
  idempotent: true,
  async handler(ctx) {
    const rows = await ctx.db.all(
      'SELECT id, title, price_cents FROM ${table} WHERE company_id = ? ORDER BY id',
      [ctx.principal.company_id],
    );
    return {
      entity_type: '${name}',
      entity_id: ctx.principal.company_id,
      data: await totals(ctx),
      relations: rows.map((r) => ({ type: 'item', id: Number(r.id), title: r.title, price_cents: Number(r.price_cents) })),
      fetched_at: ctx.now.toISOString(),
    };
  },
});

const itemAddPreview = defineVerb({
  name: '${name}.item_add_preview',
  title: 'Preview adding an item',
  description: 'Show the totals before and after adding an item, without adding it. Same arguments as ${name}.item_add.',
  shape: 'preview',
  category: '${name}',
  input: itemInput,
  idempotent: true,
  async handler(ctx, args) {
    const current = await totals(ctx);
    const projected = { items: current.items + 1, value_cents: current.value_cents + args.price_cents };
    return { current, projected, delta: { items: 1, value_cents: args.price_cents }, reversible: true };
  },
});

const itemAdd = defineVerb({
  name: '${name}.item_add',
  title: 'Add an item',
  description: 'Add an item with its price in cents. A human confirms; the pending answer carries the preview.',
  shape: 'receipt',
  category: '${name}',
  consent: 'WRITE_REVERSIBLE',
  preview: '${name}.item_add_preview',
  input: itemInput,
  summary: (a) => \`Add "\${a.title}" at \${formatCents(a.price_cents)}\`,
  async handler(ctx, args) {
    const row = await ctx.db.get(
      'INSERT INTO ${table} (company_id, title, price_cents) VALUES (?, ?, ?) RETURNING id',
      [ctx.principal.company_id, args.title, args.price_cents],
    );
    const id = Number(row.id);
    ctx.setEntity('item', id);
    ctx.setRollback(\`${name}:item_add:\${id}\`, { item_id: id });
    ctx.emit({ type: 'item.added', entity_type: 'item', entity_id: id, payload: { after: { ...args } } });
    return { item_id: id, title: args.title, price_cents: args.price_cents };
  },
  revert: {
    async handler(ctx, original) {
      const id = Number(original.rollback.item_id);
      const gone = await ctx.db.run('DELETE FROM ${table} WHERE company_id = ? AND id = ?', [
        ctx.principal.company_id,
        id,
      ]);
      if (gone.changes === 0)
        throw new VerbError('not_found', \`No item #\${id} to remove.\`, { hint: 'List the items with ${name}.items.' });
      ctx.emit({ type: 'item.removed', entity_type: 'item', entity_id: id, payload: { revert_of: original.audit_id } });
      return { revert_action: \`removed item #\${id}\` };
    },
  },
});

const charge = defineVerb({
  name: '${name}.charge',
  title: 'Charge a customer',
  description:
    'Charge a customer the price of an item (cents: the price ${name}.items lists). Money moves: a human types the phrase. Answers a receipt whose audit_id audit.revert takes to refund it.',
  shape: 'receipt',
  category: '${name}',
  consent: 'WRITE_FINANCIAL',
  input: {
    type: 'object',
    properties: {
      item_id: { type: 'integer', minimum: 1 },
      customer: { type: 'string', minLength: 1, maxLength: 200 },
      cents: { type: 'integer', minimum: 1, maximum: 10000000 },
    },
    required: ['item_id', 'customer', 'cents'],
    additionalProperties: false,
  },
  // The typed phrase names the action, the amount and the target; a human types it exactly.
  // It is built from the arguments, so the amount is one: the handler refuses another price.
  phrase: (a) => \`CHARGE \${formatCents(a.cents)} to \${a.customer} for item #\${a.item_id}\`,
  summary: (a) => \`Charge \${a.customer} \${formatCents(a.cents)} for item #\${a.item_id}\`,
  async handler(ctx, args) {
    const item = await ctx.db.get('SELECT id, title, price_cents FROM ${table} WHERE company_id = ? AND id = ?', [
      ctx.principal.company_id,
      args.item_id,
    ]);
    if (item === undefined)
      throw new VerbError('not_found', \`No item #\${args.item_id}.\`, { hint: 'List the items with ${name}.items.' });
    const cents = Number(item.price_cents);
    if (cents !== args.cents)
      throw new VerbError('amount_mismatch', \`Item #\${item.id} costs \${formatCents(cents)}, not \${formatCents(args.cents)}.\`, {
        hint: 'Charge the price ${name}.items lists.',
      });
    const row = await ctx.db.get(
      'INSERT INTO ${charges} (company_id, item_id, customer, cents, charged_at) VALUES (?, ?, ?, ?, ?) RETURNING id',
      [ctx.principal.company_id, args.item_id, args.customer, cents, ctx.now.toISOString()],
    );
    const id = Number(row.id);
    ctx.setEntity('charge', id);
    // What the revert needs; the receipt then carries a rollback_handle naming the inverse.
    ctx.setRollback(\`${name}:charge:\${id}\`, { charge_id: id, cents });
    // A real payment provider is called after the commit, through ctx.outbox and the pack's
    // outboxHandlers (docs/authoring.md §8(b)); this starter only records the charge.
    return { status: 'charged', charge_id: id, item: item.title, cents, amount: formatCents(cents) };
  },
  revert: {
    async handler(ctx, original) {
      const { charge_id, cents } = original.rollback;
      const done = await ctx.db.run(
        'UPDATE ${charges} SET refunded_at = ? WHERE company_id = ? AND id = ? AND refunded_at IS NULL',
        [ctx.now.toISOString(), ctx.principal.company_id, charge_id],
      );
      if (done.changes === 0)
        throw new VerbError('not_found', \`Charge #\${charge_id} is already refunded.\`);
      return { revert_action: \`refunded \${formatCents(cents)} of charge #\${charge_id}\` };
    },
  },
});

export default definePack({
  name: '${name}',
  description: 'Items with a price: list them, preview and add one, revert an addition, charge a customer and refund.',
  migrations: [
    {
      version: 1,
      name: 'items',
      sqlite: \`CREATE TABLE ${table} (company_id INTEGER NOT NULL, id INTEGER PRIMARY KEY AUTOINCREMENT,
  title TEXT NOT NULL, price_cents INTEGER NOT NULL)\`,
      postgres: \`CREATE TABLE ${table} (company_id BIGINT NOT NULL, id BIGSERIAL PRIMARY KEY,
  title TEXT NOT NULL, price_cents BIGINT NOT NULL)\`,
    },
    {
      version: 2,
      name: 'charges',
      sqlite: \`CREATE TABLE ${charges} (company_id INTEGER NOT NULL, id INTEGER PRIMARY KEY AUTOINCREMENT,
  item_id INTEGER NOT NULL, customer TEXT NOT NULL, cents INTEGER NOT NULL, charged_at TEXT NOT NULL, refunded_at TEXT)\`,
      postgres: \`CREATE TABLE ${charges} (company_id BIGINT NOT NULL, id BIGSERIAL PRIMARY KEY,
  item_id BIGINT NOT NULL, customer TEXT NOT NULL, cents BIGINT NOT NULL, charged_at TEXT NOT NULL, refunded_at TEXT)\`,
    },
  ],
  verbs: [items, itemAddPreview, itemAdd, charge],
  // The pack's own refusals: a status and a sentence each (docs/authoring.md §2).
  reasons: {
    amount_mismatch: { status: 422, kind: 'domain', summary: 'The amount is not the price of the item.' },
  },
});
`;
}

function testModule(name: string): string {
  return `// The ${name} pack under solid-verbs/testing: a fresh in-memory business per test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestBusiness, phraseOf } from 'solid-verbs/testing';
import pack from '../pack.mjs';

async function business(t) {
  const b = await createTestBusiness({ packs: [pack] });
  t.after(() => b.close());
  return b;
}

test('the items start empty, and a read needs no consent', async (t) => {
  const b = await business(t);
  const items = await b.call('${name}.items', {}, { role: 'read_only' });
  assert.equal(items.ok, true, JSON.stringify(items));
  assert.deepEqual(items.result.data, { items: 0, value_cents: 0 });
});

test('the preview shows the change without making it', async (t) => {
  const b = await business(t);
  const preview = await b.call('${name}.item_add_preview', { title: 'Mug', price_cents: 900 });
  assert.equal(preview.ok, true, JSON.stringify(preview));
  assert.deepEqual(preview.result.delta, { items: 1, value_cents: 900 });
  assert.equal((await b.call('${name}.items')).result.data.items, 0);
});

test('adding an item waits for a human, then lands; revert removes it', async (t) => {
  const b = await business(t);
  const pending = await b.dispatch('${name}.item_add', { title: 'Mug', price_cents: 900 });
  assert.equal(pending.error.reason, 'dispatch_pending');
  assert.equal(pending.consent.gate, 'confirmation');
  assert.deepEqual(pending.consent.preview.delta, { items: 1, value_cents: 900 });

  const added = await b.call('${name}.item_add', { title: 'Mug', price_cents: 900 });
  assert.equal(added.ok, true, JSON.stringify(added));
  assert.deepEqual((await b.call('${name}.items')).result.data, { items: 1, value_cents: 900 });

  const reverted = await b.call('audit.revert', { audit_id: added.audit_id });
  assert.equal(reverted.ok, true, JSON.stringify(reverted));
  assert.deepEqual((await b.call('${name}.items')).result.data, { items: 0, value_cents: 0 });
  assert.equal((await b.verifyAudit()).ok, true);
});

test('a charge waits for a human to type the phrase; its revert refunds it', async (t) => {
  const b = await business(t);
  const added = await b.call('${name}.item_add', { title: 'Mug', price_cents: 900 });
  const item_id = added.result.item_id;
  const args = { item_id, customer: 'Ada', cents: 900 };

  // What the agent gets: dispatch_pending, a typed-phrase gate, the phrase withheld from it.
  const pending = await b.dispatch('${name}.charge', args, { role: 'admin' });
  assert.equal(pending.error.reason, 'dispatch_pending');
  assert.equal(pending.consent.gate, 'typed_phrase');
  assert.equal(pending.consent.typed_phrase, undefined);
  assert.equal(phraseOf(pending), \`CHARGE $9.00 to Ada for item #\${item_id}\`);
  // An employee may not move money (WRITE_FINANCIAL's floor is admin).
  assert.equal((await b.dispatch('${name}.charge', args, { role: 'employee' })).error.reason, 'role_denied');

  // call() consents as a human at the terminal would: it types the phrase.
  const charged = await b.call('${name}.charge', args, { role: 'admin' });
  assert.equal(charged.ok, true, JSON.stringify(charged));
  assert.equal(charged.result.status, 'charged');
  assert.equal(typeof charged.result.rollback_handle, 'string');

  const refunded = await b.call('audit.revert', { audit_id: charged.audit_id }, { role: 'admin' });
  assert.equal(refunded.ok, true, JSON.stringify(refunded));
  const again = await b.call('audit.revert', { audit_id: charged.audit_id }, { role: 'admin' });
  assert.equal(again.ok, false); // a revert happens once
  assert.equal((await b.verifyAudit()).ok, true);
});

test('a charge of another amount than the price is refused, nothing charged', async (t) => {
  const b = await business(t);
  const added = await b.call('${name}.item_add', { title: 'Mug', price_cents: 900 });
  const wrong = await b.call('${name}.charge', { item_id: added.result.item_id, customer: 'Ada', cents: 100 }, { role: 'admin' });
  assert.equal(wrong.error.reason, 'amount_mismatch');
});

test('bad arguments are refused with an envelope, nothing written', async (t) => {
  const b = await business(t);
  const bad = await b.call('${name}.item_add', { title: '', price_cents: -1 });
  assert.equal(bad.ok, false);
  assert.equal(bad.error.reason, 'invalid_input');
  assert.equal((await b.call('${name}.items')).result.data.items, 0);
});
`;
}

function readme(name: string, dependency: string): string {
  const tarball = dependency.startsWith('file:') ? dependency.slice('file:'.length) : undefined;
  const inFolder = tarball !== undefined && !tarball.includes('/');
  const source =
    tarball === undefined
      ? `\`solid-verbs\` comes from \`${dependency}\` (package.json).`
      : `\`solid-verbs\` is not on the npm registry, so package.json takes it from a tarball,
\`${dependency}\` — never from the registry, where the unclaimed name could be anyone's package.
${
  inFolder
    ? `Put \`${tarball}\` in this folder before the first \`npm install\`: in a solid-verbs checkout
(\`npm ci\` done) run \`npm pack --pack-destination /path/to/this/folder\`. Without it
\`npm install\` stops with ENOENT; it never fetches another package instead.`
    : `\`npm install\` reads it there (\`${tarball}\`, relative to this folder); keep it, or point the
dependency at another copy with \`npm install /path/to/solid-verbs-<version>.tgz\`.`
}`;
  return `# ${name}

A solid-verbs pack: typed verbs an AI agent can call on your business, with consent gates,
receipts, revert and a tamper-evident audit log. The pack is \`pack.mjs\`; its tests are in \`test/\`.

${source}

\`\`\`sh
npm install && npm start   # solid init (once: prints an owner API key), then solid serve --pack ./pack.mjs
npm test                   # node --test, a fresh in-memory business per test (solid-verbs/testing)
\`\`\`

\`npm start\` serves the agent API, MCP, WebMCP and the dashboard on http://127.0.0.1:4400
(\`npx solid serve --pack ./pack.mjs\` once the database exists; another port with
\`npm start -- --port 4401\`).

Try a verb from the CLI:

\`\`\`sh
export SOLID_API_KEY=...   # the key solid init printed
npx solid agent dispatch ${name}.items --pack ./pack.mjs
\`\`\`

Add verbs to \`pack.mjs\` with \`defineVerb\`, new tables with a new migration version. The
package's README (\`node_modules/solid-verbs/README.md\`, "Your own verbs") and the authoring guide
(\`docs/authoring.md\` in the solid-verbs repository) cover consent classes, previews and reverts.
`;
}

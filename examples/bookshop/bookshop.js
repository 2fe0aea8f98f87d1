/**
 * The bookshop pack: titles on a shelf, sales, refunds. Built only on the public API of
 * solid-verbs, as a team would build its own (docs/authoring.md walks through it).
 *
 * - bookshop.shelf                aggregate, READ: the titles, their price and stock
 * - bookshop.title_add            receipt, WRITE_REVERSIBLE: a new title (revert: remove it, unless sold)
 * - bookshop.price_preview        preview: what bookshop.price_set would change
 * - bookshop.price_set            receipt, WRITE_REVERSIBLE: a new price (revert: the old one, unless changed since)
 * - bookshop.sale_record          receipt, WRITE_REVERSIBLE: one copy sold (revert: back on the shelf)
 * - bookshop.sale_refund          receipt, WRITE_FINANCIAL: refund a sale through the payments API (outbox)
 *
 * Money is integer cents everywhere. The payments API is called from the outbox, after the
 * refund's transaction commits, with the outbox id as its idempotency key.
 */
import { definePack, defineVerb, formatCents, VerbError } from 'solid-verbs';

const idOf = { type: 'integer', minimum: 1 };

async function titleOf(ctx, id) {
  const row = await ctx.db.get(
    'SELECT id, title, author, price_cents, stock FROM bookshop_titles WHERE company_id = ? AND id = ?',
    [ctx.principal.company_id, id],
  );
  if (row === undefined)
    throw new VerbError('not_found', `No title #${id} in this shop.`, {
      hint: 'List the titles with bookshop.shelf.',
    });
  return { ...row, price_cents: Number(row.price_cents), stock: Number(row.stock) };
}

const shelf = defineVerb({
  name: 'bookshop.shelf',
  title: 'The shelf',
  description:
    'List the titles of the shop with their price (in cents) and copies in stock, and the totals. Use it before selling or changing a price.',
  shape: 'aggregate',
  category: 'bookshop',
  input: { type: 'object', properties: {}, additionalProperties: false },
  idempotent: true,
  async handler(ctx) {
    const rows = await ctx.db.all(
      'SELECT id, title, author, price_cents, stock FROM bookshop_titles WHERE company_id = ? ORDER BY id',
      [ctx.principal.company_id],
    );
    return {
      entity_type: 'shop',
      entity_id: ctx.principal.company_id,
      data: { titles: rows.length, copies: rows.reduce((n, r) => n + Number(r.stock), 0) },
      relations: rows.map((r) => ({
        type: 'title',
        id: Number(r.id),
        title: r.title,
        author: r.author,
        price_cents: Number(r.price_cents),
        stock: Number(r.stock),
      })),
      fetched_at: ctx.now.toISOString(),
    };
  },
});

const titleAdd = defineVerb({
  name: 'bookshop.title_add',
  title: 'Add a title',
  description: 'Put a new title on the shelf with its price in cents and the copies in stock.',
  shape: 'receipt',
  category: 'bookshop',
  consent: 'WRITE_REVERSIBLE',
  input: {
    type: 'object',
    properties: {
      title: { type: 'string', minLength: 1, maxLength: 200 },
      author: { type: 'string', minLength: 1, maxLength: 200 },
      price_cents: { type: 'integer', minimum: 0, maximum: 10_000_000 },
      stock: { type: 'integer', minimum: 0, maximum: 100_000 },
    },
    required: ['title', 'author', 'price_cents', 'stock'],
    additionalProperties: false,
  },
  summary: (a) => `Add "${a.title}" by ${a.author} at ${formatCents(a.price_cents)} (${a.stock} in stock)`,
  async handler(ctx, args) {
    const row = await ctx.db.get(
      'INSERT INTO bookshop_titles (company_id, title, author, price_cents, stock) VALUES (?, ?, ?, ?, ?) RETURNING id',
      [ctx.principal.company_id, args.title, args.author, args.price_cents, args.stock],
    );
    const id = Number(row.id);
    ctx.setEntity('title', id);
    ctx.setRollback(`bookshop:title_add:${id}`, { title_id: id });
    ctx.emit({ type: 'title.added', entity_type: 'title', entity_id: id, payload: { after: { ...args } } });
    return { title_id: id, title: args.title };
  },
  revert: {
    async handler(ctx, original) {
      const id = Number(original.rollback.title_id);
      const sold = await ctx.db.get(
        'SELECT COUNT(*) AS n FROM bookshop_sales WHERE company_id = ? AND title_id = ?',
        [ctx.principal.company_id, id],
      );
      if (Number(sold.n) > 0)
        throw new VerbError('title_sold', `Title #${id} has sales; it cannot be taken off the books.`, {
          hint: 'Set its stock to 0 instead, or refund the sales first.',
        });
      await ctx.db.run('DELETE FROM bookshop_titles WHERE company_id = ? AND id = ?', [
        ctx.principal.company_id,
        id,
      ]);
      ctx.emit({
        type: 'title.removed',
        entity_type: 'title',
        entity_id: id,
        payload: { revert_of: original.audit_id },
      });
      return { revert_action: `removed title #${id}` };
    },
  },
});

const priceInput = {
  type: 'object',
  properties: { title_id: idOf, price_cents: { type: 'integer', minimum: 0, maximum: 10_000_000 } },
  required: ['title_id', 'price_cents'],
  additionalProperties: false,
};

const pricePreview = defineVerb({
  name: 'bookshop.price_preview',
  title: 'Preview a price change',
  description:
    'Show the current and the new price of a title without changing it. Same arguments as bookshop.price_set.',
  shape: 'preview',
  category: 'bookshop',
  input: priceInput,
  idempotent: true,
  async handler(ctx, args) {
    const t = await titleOf(ctx, args.title_id);
    return {
      current: { title: t.title, price_cents: t.price_cents, price: formatCents(t.price_cents) },
      projected: { title: t.title, price_cents: args.price_cents, price: formatCents(args.price_cents) },
      delta: { price_cents: args.price_cents - t.price_cents },
      reversible: true,
    };
  },
});

const priceSet = defineVerb({
  name: 'bookshop.price_set',
  title: 'Set a price',
  description:
    'Change the price of a title (in cents). The pending answer carries the preview: old and new price.',
  shape: 'receipt',
  category: 'bookshop',
  consent: 'WRITE_REVERSIBLE',
  preview: 'bookshop.price_preview',
  input: priceInput,
  summary: (a) => `Set the price of title #${a.title_id} to ${formatCents(a.price_cents)}`,
  async handler(ctx, args) {
    const t = await titleOf(ctx, args.title_id);
    await ctx.db.run('UPDATE bookshop_titles SET price_cents = ? WHERE company_id = ? AND id = ?', [
      args.price_cents,
      ctx.principal.company_id,
      t.id,
    ]);
    ctx.setEntity('title', t.id);
    ctx.setRollback(`bookshop:price:${t.id}:${t.price_cents}`, {
      title_id: t.id,
      before: t.price_cents,
      after: args.price_cents,
    });
    ctx.emit({
      type: 'title.repriced',
      entity_type: 'title',
      entity_id: t.id,
      payload: { before: t.price_cents, after: args.price_cents },
    });
    return { title_id: t.id, price_cents: args.price_cents, previous_price_cents: t.price_cents };
  },
  revert: {
    async handler(ctx, original) {
      const { title_id, before, after } = original.rollback;
      const t = await titleOf(ctx, Number(title_id));
      // Never silently discard a later change: restore only what this action set.
      if (t.price_cents !== after)
        throw new VerbError('changed_since', `The price of title #${t.id} changed again after this action.`, {
          hint: 'Revert the later price change first, or set the price you want with bookshop.price_set.',
        });
      await ctx.db.run('UPDATE bookshop_titles SET price_cents = ? WHERE company_id = ? AND id = ?', [
        before,
        ctx.principal.company_id,
        t.id,
      ]);
      ctx.emit({
        type: 'title.repriced',
        entity_type: 'title',
        entity_id: t.id,
        payload: { before: after, after: before, revert_of: original.audit_id },
      });
      return { revert_action: `price of title #${t.id} back to ${formatCents(Number(before))}` };
    },
  },
});

const saleRecord = defineVerb({
  name: 'bookshop.sale_record',
  title: 'Record a sale',
  description: 'Record that one copy of a title was sold at its current price; the stock goes down by one.',
  shape: 'receipt',
  category: 'bookshop',
  consent: 'WRITE_REVERSIBLE',
  input: {
    type: 'object',
    properties: { title_id: idOf },
    required: ['title_id'],
    additionalProperties: false,
  },
  async handler(ctx, args) {
    const t = await titleOf(ctx, args.title_id);
    if (t.stock < 1)
      throw new VerbError('out_of_stock', `"${t.title}" is out of stock.`, {
        hint: 'Check bookshop.shelf for copies in stock.',
      });
    await ctx.db.run('UPDATE bookshop_titles SET stock = stock - 1 WHERE company_id = ? AND id = ?', [
      ctx.principal.company_id,
      t.id,
    ]);
    const row = await ctx.db.get(
      'INSERT INTO bookshop_sales (company_id, title_id, cents, sold_at) VALUES (?, ?, ?, ?) RETURNING id',
      [ctx.principal.company_id, t.id, t.price_cents, ctx.now.toISOString()],
    );
    const saleId = Number(row.id);
    ctx.setEntity('sale', saleId);
    ctx.setRollback(`bookshop:sale:${saleId}`, { sale_id: saleId, title_id: t.id });
    ctx.emit({
      type: 'sale.recorded',
      entity_type: 'sale',
      entity_id: saleId,
      payload: { title_id: t.id, cents: t.price_cents },
    });
    return { sale_id: saleId, title_id: t.id, cents: t.price_cents };
  },
  revert: {
    async handler(ctx, original) {
      const saleId = Number(original.rollback.sale_id);
      const sale = await ctx.db.get('SELECT refunded FROM bookshop_sales WHERE company_id = ? AND id = ?', [
        ctx.principal.company_id,
        saleId,
      ]);
      if (sale === undefined) throw new VerbError('not_found', `No sale #${saleId}.`);
      if (Number(sale.refunded) === 1)
        throw new VerbError('changed_since', `Sale #${saleId} was refunded after it was recorded.`, {
          hint: 'A refunded sale stays on the books.',
        });
      await ctx.db.run('DELETE FROM bookshop_sales WHERE company_id = ? AND id = ?', [
        ctx.principal.company_id,
        saleId,
      ]);
      await ctx.db.run('UPDATE bookshop_titles SET stock = stock + 1 WHERE company_id = ? AND id = ?', [
        ctx.principal.company_id,
        Number(original.rollback.title_id),
      ]);
      return { revert_action: `sale #${saleId} removed, the copy is back on the shelf` };
    },
  },
});

const saleRefund = defineVerb({
  name: 'bookshop.sale_refund',
  title: 'Refund a sale',
  description:
    "Refund a sale's full amount to the customer through the payments provider. Money leaves the shop: a human types the phrase. Not revertible.",
  shape: 'receipt',
  category: 'bookshop',
  consent: 'WRITE_FINANCIAL',
  open_world: true,
  input: {
    type: 'object',
    properties: { sale_id: idOf, cents: { type: 'integer', minimum: 1, maximum: 10_000_000 } },
    required: ['sale_id', 'cents'],
    additionalProperties: false,
  },
  phrase: (a) => `REFUND ${formatCents(a.cents)} on sale #${a.sale_id}`,
  summary: (a) => `Refund ${formatCents(a.cents)} to the customer of sale #${a.sale_id}`,
  async handler(ctx, args) {
    const sale = await ctx.db.get(
      'SELECT cents, refunded FROM bookshop_sales WHERE company_id = ? AND id = ?',
      [ctx.principal.company_id, args.sale_id],
    );
    if (sale === undefined) throw new VerbError('not_found', `No sale #${args.sale_id}.`);
    if (Number(sale.refunded) === 1)
      throw new VerbError('already_refunded', `Sale #${args.sale_id} was already refunded.`);
    if (Number(sale.cents) !== args.cents)
      throw new VerbError(
        'amount_mismatch',
        `Sale #${args.sale_id} was ${formatCents(Number(sale.cents))}, not ${formatCents(args.cents)}.`,
        {
          hint: 'Refund the full amount of the sale.',
        },
      );
    await ctx.db.run('UPDATE bookshop_sales SET refunded = 1 WHERE company_id = ? AND id = ?', [
      ctx.principal.company_id,
      args.sale_id,
    ]);
    // The payments call happens after this transaction commits (the outbox), never inside it.
    ctx.outbox('bookshop.refund', { sale_id: args.sale_id, cents: args.cents });
    ctx.setEntity('sale', args.sale_id);
    ctx.emit({
      type: 'sale.refunded',
      entity_type: 'sale',
      entity_id: args.sale_id,
      payload: { cents: args.cents },
    });
    return { sale_id: args.sale_id, refunded_cents: args.cents, payment: 'queued' };
  },
});

/**
 * The pack, with the payments client injected: `refund({ sale_id, cents, idempotency_key })`
 * calls the provider. The default posts to BOOKSHOP_PAYMENTS_URL (or only logs when it is unset).
 */
export function createBookshop({ refund = postRefund } = {}) {
  return definePack({
    name: 'bookshop',
    description: 'A small bookshop: titles, prices, sales and refunds.',
    migrations: [
      {
        version: 1,
        name: 'titles and sales',
        sqlite: `
CREATE TABLE bookshop_titles (company_id INTEGER NOT NULL, id INTEGER PRIMARY KEY AUTOINCREMENT,
  title TEXT NOT NULL, author TEXT NOT NULL, price_cents INTEGER NOT NULL, stock INTEGER NOT NULL);
CREATE TABLE bookshop_sales (company_id INTEGER NOT NULL, id INTEGER PRIMARY KEY AUTOINCREMENT,
  title_id INTEGER NOT NULL, cents INTEGER NOT NULL, sold_at TEXT NOT NULL, refunded INTEGER NOT NULL DEFAULT 0);`,
        postgres: `
CREATE TABLE bookshop_titles (company_id BIGINT NOT NULL, id BIGSERIAL PRIMARY KEY,
  title TEXT NOT NULL, author TEXT NOT NULL, price_cents BIGINT NOT NULL, stock BIGINT NOT NULL);
CREATE TABLE bookshop_sales (company_id BIGINT NOT NULL, id BIGSERIAL PRIMARY KEY,
  title_id BIGINT NOT NULL, cents BIGINT NOT NULL, sold_at TEXT NOT NULL, refunded INTEGER NOT NULL DEFAULT 0);`,
      },
    ],
    verbs: [shelf, titleAdd, pricePreview, priceSet, saleRecord, saleRefund],
    reasons: {
      title_sold: { status: 409, kind: 'conflict', summary: 'The title has sales and cannot be removed.' },
      out_of_stock: { status: 409, kind: 'conflict', summary: 'No copy of the title is in stock.' },
      already_refunded: { status: 409, kind: 'conflict', summary: 'The sale was already refunded.' },
      amount_mismatch: { status: 422, summary: 'The refund amount is not the amount of the sale.' },
    },
    outboxHandlers: {
      // Delivered after commit, retried with backoff, at least once: the outbox id is the
      // provider's idempotency key, so a redelivery never refunds twice.
      'bookshop.refund': async (payload, meta) =>
        refund({
          ...payload,
          company_id: meta.company_id,
          idempotency_key: `bookshop-refund-${meta.outbox_id}`,
        }),
    },
  });
}

async function postRefund(refund) {
  const url = process.env.BOOKSHOP_PAYMENTS_URL;
  if (url === undefined || url === '') {
    console.error(
      `bookshop: no BOOKSHOP_PAYMENTS_URL; refund of sale #${refund.sale_id} (${refund.cents} cents) not sent`,
    );
    return;
  }
  const res = await fetch(`${url}/refunds`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': refund.idempotency_key },
    body: JSON.stringify({ sale_id: refund.sale_id, amount_cents: refund.cents }),
  });
  // A throw leaves the outbox row pending: it is retried with backoff.
  if (!res.ok) throw new Error(`payments provider answered ${res.status}`);
}

export default createBookshop();

/**
 * A local payments provider in the style of Stripe, on node:http bound to 127.0.0.1: the sandbox
 * `solid serve --demo` starts for the demo's integrations category, and the fake the connector's
 * fault tests drive (test/support/fake-payments-provider.ts). Nothing leaves the machine; no money.
 *
 * API: `POST /v1/charges` `{ amount, currency, customer, description?, metadata? }` →
 * `{ id: 'ch_…', object: 'charge', amount, currency, customer, status: 'succeeded', refunded }`;
 * `POST /v1/refunds` `{ charge, amount? }` → `{ id: 're_…', object: 'refund', charge, amount,
 * status }`, a second refund of a charge → 400 `charge_already_refunded`. Both need
 * `Authorization: Bearer <one of keys>` (401 otherwise) and honour `Idempotency-Key` as Stripe
 * does: the same key and body → the first answer again (`Idempotent-Replayed: true`), another
 * body → 400 `idempotency_key_reused`, the first request still running → 409. A customer id
 * ending in `_decline` is declined (402 `card_declined`).
 *
 * Faults, taken one per request in order from `faults` (tests push them):
 * `fail` (500 before doing anything), `fail_after` (does the work, answers 500: a lost success),
 * `hang` (never answers: a timeout), `late` (does the work, answers after `lateMs`: past the
 * caller's timeout). Duplicates are the caller's: the same message delivered twice, at once or
 * after a success, meets the idempotency key (the tests deliver it so).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';

/** One fault of the next request (see the header). */
export type ProviderFault = 'fail' | 'fail_after' | 'hang' | 'late';

/** A charge as the provider keeps it. */
export interface SandboxCharge {
  id: string;
  amount: number;
  currency: string;
  customer: string;
  idempotency_key: string | null;
  refunded: boolean;
}

/** A running sandbox provider. */
export interface SandboxProvider {
  /** `http://127.0.0.1:<port>/` */
  readonly url: string;
  /** Every charge made, by id. */
  readonly charges: Map<string, SandboxCharge>;
  /** Every refund made: refund id → charge id. */
  readonly refunds: Map<string, string>;
  /** Faults of the next requests, taken in order. */
  readonly faults: ProviderFault[];
  /** Requests received: path, idempotency key, status answered (or `hang`). */
  readonly requests: Array<{ path: string; key: string | null; status: number | 'hang' }>;
  /** Stop listening and drop every open connection (hanging requests included); resolves once closed. */
  close(): Promise<void>;
}

interface Stored {
  body: string;
  status: number;
  answer: Record<string, unknown>;
}

/** Start a sandbox provider accepting `keys` as bearer credentials. `lateMs`: the `late` fault's delay. */
export async function startSandboxProvider(options: {
  /** The bearer keys accepted, or a predicate (the demo's sandbox accepts any `sk_test_…`). */
  keys: string[] | ((key: string) => boolean);
  lateMs?: number;
  /** Do not keep the process alive for the provider alone (the demo's in-process sandbox). */
  unref?: boolean;
}): Promise<SandboxProvider> {
  const accepts = (auth: string): boolean => {
    if (!auth.startsWith('Bearer ')) return false;
    const key = auth.slice('Bearer '.length);
    return typeof options.keys === 'function' ? options.keys(key) : options.keys.includes(key);
  };
  const charges = new Map<string, SandboxCharge>();
  const refunds = new Map<string, string>();
  const faults: ProviderFault[] = [];
  const requests: SandboxProvider['requests'] = [];
  const idem = new Map<string, Stored | 'running'>();
  const hanging = new Set<ServerResponse>();
  const timers = new Set<NodeJS.Timeout>();
  const lateMs = options.lateMs ?? 1500;
  const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

  function perform(
    path: string,
    body: Record<string, unknown>,
    key: string | null,
  ): { status: number; answer: Record<string, unknown> } {
    if (path === '/v1/charges') {
      const amount = body.amount;
      const customer = body.customer;
      if (
        typeof amount !== 'number' ||
        !Number.isInteger(amount) ||
        amount < 50 ||
        typeof customer !== 'string' ||
        typeof body.currency !== 'string'
      )
        return {
          status: 400,
          answer: {
            error: {
              type: 'invalid_request_error',
              code: 'parameter_invalid',
              message: 'amount, currency and customer are required',
            },
          },
        };
      if (customer.endsWith('_decline'))
        return {
          status: 402,
          answer: {
            error: { type: 'card_error', code: 'card_declined', message: 'Your card was declined.' },
          },
        };
      const charge: SandboxCharge = {
        id: id('ch'),
        amount,
        currency: body.currency,
        customer,
        idempotency_key: key,
        refunded: false,
      };
      charges.set(charge.id, charge);
      return { status: 200, answer: { ...charge, object: 'charge', status: 'succeeded' } };
    }
    if (path === '/v1/refunds') {
      const charge = typeof body.charge === 'string' ? charges.get(body.charge) : undefined;
      if (charge === undefined)
        return {
          status: 404,
          answer: {
            error: { type: 'invalid_request_error', code: 'resource_missing', message: 'No such charge.' },
          },
        };
      if (charge.refunded)
        return {
          status: 400,
          answer: {
            error: {
              type: 'invalid_request_error',
              code: 'charge_already_refunded',
              message: 'Charge has already been refunded.',
            },
          },
        };
      charge.refunded = true;
      const refundId = id('re');
      refunds.set(refundId, charge.id);
      return {
        status: 200,
        answer: {
          id: refundId,
          object: 'refund',
          charge: charge.id,
          amount: charge.amount,
          status: 'succeeded',
        },
      };
    }
    return {
      status: 404,
      answer: { error: { type: 'invalid_request_error', code: 'unknown_path', message: 'Unknown path.' } },
    };
  }

  function send(
    res: ServerResponse,
    status: number,
    answer: Record<string, unknown>,
    replayed = false,
  ): void {
    res.writeHead(status, {
      'content-type': 'application/json',
      ...(replayed ? { 'idempotent-replayed': 'true' } : {}),
    });
    res.end(JSON.stringify(answer));
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const path = (req.url ?? '/').split('?')[0]!;
    const key = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : null;
    const note = (status: number | 'hang') => requests.push({ path, key, status });
    if (req.method !== 'POST') return (note(405), send(res, 405, { error: { code: 'method_not_allowed' } }));
    const auth = req.headers.authorization ?? '';
    if (!accepts(auth))
      return (
        note(401),
        send(res, 401, {
          error: { type: 'authentication_error', code: 'invalid_api_key', message: 'Invalid API key.' },
        })
      );
    const fault = faults.shift();
    if (fault === 'fail')
      return (
        note(500),
        send(res, 500, { error: { type: 'api_error', code: 'internal', message: 'Try again.' } })
      );
    if (fault === 'hang') {
      note('hang');
      hanging.add(res);
      res.on('close', () => hanging.delete(res));
      return;
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return (note(400), send(res, 400, { error: { code: 'invalid_json' } }));
    }
    const idemId = key === null ? null : `${auth}\n${path}\n${key}`;
    if (idemId !== null) {
      const seen = idem.get(idemId);
      if (seen === 'running')
        return (
          note(409),
          send(res, 409, {
            error: {
              type: 'idempotency_error',
              code: 'request_in_progress',
              message: 'A request with this key is in progress.',
            },
          })
        );
      if (seen !== undefined) {
        if (seen.body !== raw)
          return (
            note(400),
            send(res, 400, {
              error: {
                type: 'idempotency_error',
                code: 'idempotency_key_reused',
                message: 'Keys are for one request body.',
              },
            })
          );
        return (note(seen.status), send(res, seen.status, seen.answer, true));
      }
      idem.set(idemId, 'running');
    }
    const done = perform(path, body, key);
    if (idemId !== null) idem.set(idemId, { body: raw, ...done });
    if (fault === 'fail_after')
      return (
        note(500),
        send(res, 500, { error: { type: 'api_error', code: 'internal', message: 'Try again.' } })
      );
    if (fault === 'late') {
      note(done.status);
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (!res.destroyed) send(res, done.status, done.answer);
      }, lateMs);
      timers.add(timer);
      return;
    }
    note(done.status);
    send(res, done.status, done.answer);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 500, { error: { code: 'internal' } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  if (options.unref === true) server.unref();
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/`,
    charges,
    refunds,
    faults,
    requests,
    async close() {
      for (const t of timers) clearTimeout(t);
      for (const r of hanging) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

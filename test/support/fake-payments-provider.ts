/**
 * The fake payments provider of the connector tests: the sandbox provider (node:http on
 * 127.0.0.1, src/connectors/payments/sandbox-provider.ts) with its faults — 500, a lost success,
 * no answer, a late answer — closed after the test. Duplicate deliveries are made by the tests (the same outbox message run twice).
 */
import type { TestContext } from 'node:test';
import {
  startSandboxProvider,
  type SandboxProvider,
} from '../../src/connectors/payments/sandbox-provider.ts';

export type { ProviderFault, SandboxProvider } from '../../src/connectors/payments/sandbox-provider.ts';

/** Start a fake provider accepting `keys`; closed with the test. */
export async function fakePaymentsProvider(
  t: TestContext,
  options: { keys: string[]; lateMs?: number },
): Promise<SandboxProvider> {
  const p = await startSandboxProvider(options);
  t.after(() => p.close());
  return p;
}

/** Charges per idempotency key: more than one for a key is a double charge. */
export function chargesPerKey(p: SandboxProvider): Map<string | null, number> {
  const m = new Map<string | null, number>();
  for (const c of p.charges.values()) m.set(c.idempotency_key, (m.get(c.idempotency_key) ?? 0) + 1);
  return m;
}

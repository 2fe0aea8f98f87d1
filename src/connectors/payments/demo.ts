/**
 * The demo business's `integrations` category (docs/demo.md): the reference payments connector
 * pointed at a real provider when `SOLID_PAYMENTS_PROVIDER_URL` is set, else at the **sandbox
 * provider** (sandbox-provider.ts) started inside this process on the first call — 127.0.0.1, no
 * money, any `sk_test_…` key, charges kept in memory by this process only (a charge made by one
 * process and refunded by another is refused as unknown by the second one's sandbox).
 *
 * `solid serve --demo` enables the pack (`--pack integrations` elsewhere) and calls
 * {@link seedSandboxCredential}: in sandbox mode only, each active tenant whose vault has no
 * `payments.api_key` gets a sandbox key (`sk_test_sandbox_…`, worth nothing) so the demo's charges
 * go through; an owner's own secret is never replaced. With a real provider nothing is seeded:
 * the owner runs `solid vault set payments.api_key`.
 */
import { randomBytes } from 'node:crypto';
import type { Pack } from '../../runtime/pack.ts';
import type { PackRuntime } from '../../runtime/core.ts';
import { listVaultSecrets, setVaultSecret } from '../../runtime/vault/vault.ts';
import { paymentsConnectorPack } from './pack.ts';
import { startSandboxProvider, type SandboxProvider } from './sandbox-provider.ts';

let sandbox: Promise<SandboxProvider> | undefined;

/** The provider URL in use: the configured one, else the sandbox's (started once per process). */
export async function demoProviderUrl(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const configured = env.SOLID_PAYMENTS_PROVIDER_URL;
  if (configured !== undefined && configured !== '') return configured;
  // unref: the sandbox never keeps the process alive after the runtime closes.
  sandbox ??= startSandboxProvider({ keys: (k) => k.startsWith('sk_test_'), unref: true });
  return (await sandbox).url;
}

/** True when the demo's connector calls the in-process sandbox (no SOLID_PAYMENTS_PROVIDER_URL). */
export function demoUsesSandbox(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env.SOLID_PAYMENTS_PROVIDER_URL ?? '') === '';
}

/** The demo's integrations pack (see the header). */
export const demoIntegrationsPack: Pack = {
  ...paymentsConnectorPack({ baseUrl: () => demoProviderUrl() }),
  description:
    "Charges and refunds through a payments provider (the demo's integrations category): the in-process sandbox provider unless SOLID_PAYMENTS_PROVIDER_URL is set.",
};

/**
 * Sandbox mode only: give each active tenant without a `payments.api_key` a sandbox key in its
 * vault (audited `vault.set` by the operator). Returns the tenants seeded; none with a real provider.
 */
export async function seedSandboxCredential(
  rt: PackRuntime,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number[]> {
  if (!demoUsesSandbox(env)) return [];
  const tenants = await rt.store.read((q) =>
    q.all<{ company_id: number | string }>(
      "SELECT company_id FROM tenants WHERE status = 'active' ORDER BY company_id",
    ),
  );
  const seeded: number[] = [];
  for (const t of tenants) {
    const companyId = Number(t.company_id);
    const has = (await rt.store.read((q) => listVaultSecrets(q, companyId))).some(
      (e) => e.name === 'payments.api_key',
    );
    if (has) continue;
    await rt.store.write((tx) =>
      setVaultSecret(tx, rt.secrets, {
        company_id: companyId,
        name: 'payments.api_key',
        secret: `sk_test_sandbox_${randomBytes(12).toString('hex')}`,
        actor: undefined,
        now: rt.clock(),
      }),
    );
    seeded.push(companyId);
  }
  return seeded;
}

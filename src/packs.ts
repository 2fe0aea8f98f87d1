/**
 * The packs this distribution knows, by name, loaded on demand.
 */
import type { Pack } from './runtime/pack.ts';

export const KNOWN_PACKS: Readonly<Record<string, () => Promise<Pack>>> = {
  /** The home-services demo business (src/business/pack.ts, docs/demo.md). */
  demo: async () => (await import('./business/pack.ts')).demoPack,
  /** Test-safe verbs for `solid conformance` (src/conformance/pack.ts, spec/conformance.md §test-pack). */
  conformance: async () => (await import('./conformance/pack.ts')).conformancePack,
  /** The demo's integrations category: the reference payments connector (src/connectors/payments/demo.ts). */
  integrations: async () => (await import('./connectors/payments/demo.ts')).demoIntegrationsPack,
};

/**
 * The packs this distribution knows, by name, loaded on demand.
 */
import type { Pack } from './runtime/pack.ts';

export const KNOWN_PACKS: Readonly<Record<string, () => Promise<Pack>>> = {
  /** The home-services demo business (src/business/pack.ts, docs/demo.md). */
  demo: async () => (await import('./business/pack.ts')).demoPack,
};

/**
 * The packs this distribution knows, by name, loaded on demand.
 */
import type { Pack } from './runtime/pack.ts';

export const KNOWN_PACKS: Readonly<Record<string, () => Promise<Pack>>> = {
  // demo: the home-services demo business (src/business/pack.ts)
};

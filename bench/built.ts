/**
 * The built package (dist/, `npm run build`), loaded by path at run time: the bench modules
 * measure what users install, never the TypeScript sources. Types come from `import type` of the
 * sources (erased at run time); values from here.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The dist/ directory of this checkout. */
export const DIST = resolve(fileURLToPath(new URL('../dist/', import.meta.url)));

/** Throw with the reason when the built package is not there. */
export function requireDist(): void {
  if (!existsSync(join(DIST, 'index.js')))
    throw new Error('the bench runs the built package: run `npm run build` first (dist/index.js is missing)');
}

/**
 * Import a module of the built package by its path under dist/ (e.g. 'transports/cli/local.js'),
 * typed as `T` (give it `typeof import('../src/…')`). Throws when there is no build.
 */
export async function built<T>(rel: string): Promise<T> {
  requireDist();
  return (await import(pathToFileURL(join(DIST, rel)).href)) as T;
}

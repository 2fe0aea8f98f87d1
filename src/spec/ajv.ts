/**
 * Ajv (JSON Schema 2020-12) with ajv-formats, required the first time a validator is built, so a
 * command that validates nothing (`solid verbs list`) never loads Ajv (issue 36: loading it was
 * about a sixth of that command's start-up). Both packages are CommonJS, so this shares the one
 * copy any static `import` of them loads.
 */
import { createRequire } from 'node:module';
import type { Ajv2020, Options } from 'ajv/dist/2020.js';

const require = createRequire(import.meta.url);

/** A new Ajv 2020-12 instance with `options`, the ajv-formats formats added. */
export function newAjv2020(options: Options): Ajv2020 {
  const { Ajv2020: Ajv } = require('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js');
  const addFormats = require('ajv-formats') as (ajv: Ajv2020) => Ajv2020;
  return addFormats(new Ajv(options));
}

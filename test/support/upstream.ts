/**
 * Loads the upstream reference schemas from ../shared/spec-reference (data, never copied into the
 * repository) and compiles them with Ajv 2020 so tests can prove our output is valid against them.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join, resolve } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';

const addFormats = addFormatsImport as unknown as (ajv: Ajv2020) => Ajv2020;

export const UPSTREAM_DIR = resolve(
  fileURLToPath(new URL('../../', import.meta.url)),
  '../shared/spec-reference',
);
export const upstreamAvailable = existsSync(UPSTREAM_DIR);
/** The one message a test skips with when ../shared/spec-reference is not beside the clone. */
export const UPSTREAM_SKIP: string | false = upstreamAvailable
  ? false
  : `${UPSTREAM_DIR} is absent (a plain clone): checks against the upstream schemas and examples skipped`;

let ajv: Ajv2020 | undefined;
function load(): Ajv2020 {
  if (ajv === undefined) {
    ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema(JSON.parse(readFileSync(join(UPSTREAM_DIR, 'schema/verb-record.json'), 'utf8')));
    ajv.addSchema(JSON.parse(readFileSync(join(UPSTREAM_DIR, 'schema/envelope.json'), 'utf8')));
    for (const f of readdirSync(join(UPSTREAM_DIR, 'schema/shapes'))) {
      ajv.addSchema(JSON.parse(readFileSync(join(UPSTREAM_DIR, 'schema/shapes', f), 'utf8')));
    }
  }
  return ajv;
}

/**
 * Compiled upstream validator: 'verb-record', 'envelope' or 'shapes/<shape>'. Undefined when upstream
 * has none, or when ../shared/spec-reference is absent (UPSTREAM_SKIP says so).
 */
export function upstreamValidator(name: string): ValidateFunction | undefined {
  if (!upstreamAvailable) return undefined;
  return load().getSchema(`https://solidnumber.com/solid-verbs/v1/${name}.json`);
}

/**
 * Asserts `value` is valid against the upstream schema `name` (see upstreamValidator). Without
 * ../shared the upstream check is skipped and the test's own assertions still run; with it, a
 * schema upstream does not publish is a test error, not a silent pass.
 */
export function assertUpstreamValid(name: string, value: unknown, message = name): void {
  if (!upstreamAvailable) return;
  const validate = upstreamValidator(name);
  assert.ok(validate, `upstream has no schema ${name}`);
  assert.ok(validate(value), `${message} vs upstream ${name}: ${JSON.stringify(validate.errors)}`);
}

export function upstreamExample(file: string): {
  verb: string;
  shape: string;
  input: Record<string, unknown>;
  output: Record<string, unknown>;
} {
  return JSON.parse(readFileSync(join(UPSTREAM_DIR, 'examples', file), 'utf8'));
}

/** The seed README's example VerbRecord, parsed out of the README text. */
export function seedExampleRecord(): Record<string, unknown> {
  const text = readFileSync(resolve(UPSTREAM_DIR, '../seed/solid-verbs-README.txt'), 'utf8');
  const start = text.indexOf('{\n  "name": "payments.preview_refund_impact"');
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    if (text[i] === '{') depth++;
    if (text[i] === '}') depth--;
    if (depth === 0) return JSON.parse(text.slice(start, i + 1)) as Record<string, unknown>;
  }
  throw new Error('seed example not found');
}

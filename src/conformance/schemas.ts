/**
 * The schemas the kit validates with: our own schema/ folder (VerbRecord, envelope, the 13
 * shapes, the conformance declaration), compiled once per process with Ajv 2020 and formats; and
 * a lenient Ajv for the schemas a server publishes (input and output schemas of its records),
 * which may use keywords of their own. Errors read `<pointer> <message>`.
 * Spec: spec/conformance.md §checks.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import { SCHEMA_DIR } from '../spec/validators.ts';

const addFormats = addFormatsImport as unknown as (ajv: Ajv2020) => Ajv2020;

/** `$id` prefix of our schemas. */
export const SCHEMA_ID_BASE = 'https://schemas.solid-verbs.dev/v1/';

let ours: Ajv2020 | undefined;
const compiled = new Map<string, ValidateFunction>();

function ourAjv(): Ajv2020 {
  if (ours === undefined) {
    ours = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ours);
    const files = readdirSync(SCHEMA_DIR, { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.endsWith('.json'),
    );
    for (const f of files) ours.addSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, f), 'utf8')) as object);
  }
  return ours;
}

/** Ajv errors as `<instance pointer> <message>` lines (at most `max`). */
export function errorLines(errors: readonly ErrorObject[] | null | undefined, max = 8): string[] {
  const lines = [
    ...new Set(
      (errors ?? []).map((e) => {
        const extra =
          e.keyword === 'additionalProperties'
            ? ` (${(e.params as { additionalProperty: string }).additionalProperty})`
            : e.keyword === 'enum'
              ? ` (${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')})`
              : '';
        return `${e.instancePath || '/'} ${e.message ?? 'is invalid'}${extra}`;
      }),
    ),
  ];
  return lines.length > max ? [...lines.slice(0, max), `… ${lines.length - max} more`] : lines;
}

/**
 * Validate against one of our schemas by its path in schema/ (`verb-record.json`,
 * `shapes/receipt.json`, `envelope.json`, `conformance-declaration.json`). Returns the error lines
 * (empty when valid).
 */
export function validateOurs(path: string, value: unknown): string[] {
  let v = compiled.get(path);
  if (v === undefined) {
    v = ourAjv().getSchema(`${SCHEMA_ID_BASE}${path}`);
    if (v === undefined) throw new Error(`no schema ${path} in ${SCHEMA_DIR}`);
    compiled.set(path, v);
  }
  return v(value) ? [] : errorLines(v.errors);
}

/** A compiler of published schemas, one per run (what it compiled is dropped with it). */
export type PublishedCompiler = (schema: unknown) => ValidateFunction | string;

/**
 * A compiler for schemas a server published (lenient: unknown keywords are ignored, `$ref`s to our
 * schema ids resolve). It returns the validator, or the compile error's message.
 */
export function publishedCompiler(): PublishedCompiler {
  const ajv = new Ajv2020({ strict: false, allErrors: true, allowUnionTypes: true });
  addFormats(ajv);
  const files = readdirSync(SCHEMA_DIR, { recursive: true, encoding: 'utf8' }).filter((f) =>
    f.endsWith('.json'),
  );
  for (const f of files) ajv.addSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, f), 'utf8')) as object);
  const cache = new WeakMap<object, ValidateFunction | string>();
  return (schema) => {
    if (schema === null || typeof schema !== 'object' || Array.isArray(schema))
      return 'the schema is not an object';
    const hit = cache.get(schema);
    if (hit !== undefined) return hit;
    let out: ValidateFunction | string;
    try {
      // Without $id: two records may publish one $id with different content.
      const { $id: _id, ...rest } = schema as Record<string, unknown>;
      void _id;
      out = ajv.compile(rest);
    } catch (err) {
      out = (err as Error).message;
    }
    cache.set(schema, out);
    return out;
  };
}

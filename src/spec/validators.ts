/**
 * Validators for the specification's artifacts, built on Ajv (draft 2020-12) with every schema
 * compiled once and cached. `validateVerbRecord` and `validateEnvelope` keep the upstream SDK's
 * signature and error wording (`{ valid, errors: string[] }`; messages name the field and the
 * offending value), so a user of the upstream SDK can switch without changes.
 *
 * Spec: spec/manifest.md (VerbRecord), spec/envelope.md, spec/shapes.md.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { Ajv2020, ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import { newAjv2020 } from './ajv.ts';
import { VALID_SHAPES, type JsonSchema, type Shape, type ValidationResult } from './types.ts';

/** Absolute path of the repository's schema/ folder. */
export const SCHEMA_DIR = fileURLToPath(new URL('../../schema/', import.meta.url));

function loadJson(path: string): JsonSchema {
  return JSON.parse(readFileSync(path, 'utf8')) as JsonSchema;
}

/** Our own schemas, loaded once. */
export const verbRecordSchema: JsonSchema = loadJson(join(SCHEMA_DIR, 'verb-record.json'));
/** The JSON Schema of the envelope every transport answers with. spec/envelope.md */
export const envelopeSchema: JsonSchema = loadJson(join(SCHEMA_DIR, 'envelope.json'));
/** The output JSON Schema of each shape, by shape name. spec/shapes.md */
export const shapeSchemas: Readonly<Record<Shape, JsonSchema>> = Object.freeze(
  Object.fromEntries(
    VALID_SHAPES.map((s) => [s, loadJson(join(SCHEMA_DIR, 'shapes', `${s}.json`))]),
  ) as Record<Shape, JsonSchema>,
);

let specAjv: Ajv2020 | undefined;
/** The Ajv instance holding the spec's own schemas (strict). */
function spec(): Ajv2020 {
  if (specAjv === undefined) {
    specAjv = newAjv2020({ strict: true, allErrors: true, strictRequired: false, allowUnionTypes: true });
    specAjv.addSchema(verbRecordSchema);
    specAjv.addSchema(envelopeSchema);
    for (const s of VALID_SHAPES) specAjv.addSchema(shapeSchemas[s]);
    // Any other schema file in schema/ (e.g. shared definitions).
    for (const f of readdirSync(SCHEMA_DIR)) {
      if (f.endsWith('.json') && f !== 'verb-record.json' && f !== 'envelope.json')
        specAjv.addSchema(loadJson(join(SCHEMA_DIR, f)));
    }
  }
  return specAjv;
}

const compiled = new Map<string, ValidateFunction>();
function compiledFor(schema: JsonSchema): ValidateFunction {
  const id = schema.$id as string;
  let v = compiled.get(id);
  if (v === undefined) {
    v = spec().getSchema(id) ?? spec().compile(schema);
    compiled.set(id, v);
  }
  return v;
}

/** Format Ajv errors the upstream SDK's way: the field first, with the offending value. */
export function formatAjvErrors(
  errors: readonly ErrorObject[] | null | undefined,
  data: unknown,
  root = '',
): string[] {
  if (!errors) return [];
  const out: string[] = [];
  for (const e of errors) {
    const field = fieldName(e.instancePath, root);
    const value = valueAt(data, e.instancePath);
    switch (e.keyword) {
      case 'required':
        out.push(`${join2(field, (e.params as { missingProperty: string }).missingProperty)} is required`);
        break;
      case 'enum':
        out.push(
          `${field || 'value'} "${String(value)}" must be one of: ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`,
        );
        break;
      case 'pattern':
        out.push(
          `${field || 'value'} "${String(value)}" must match ${(e.params as { pattern: string }).pattern}`,
        );
        break;
      case 'additionalProperties':
        out.push(
          `${field || 'record'} has an unknown property "${(e.params as { additionalProperty: string }).additionalProperty}"`,
        );
        break;
      case 'type':
        out.push(`${field || 'value'} must be ${(e.params as { type: string }).type}`);
        break;
      case 'const':
        out.push(
          `${field || 'value'} must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}`,
        );
        break;
      case 'if':
      case 'anyOf':
      case 'oneOf':
        break; // the branch errors already say what is wrong
      default:
        out.push(`${field || 'value'} ${e.message ?? 'is invalid'}`);
    }
  }
  return [...new Set(out)];
}

function join2(a: string, b: string): string {
  return a ? `${a}.${b}` : b;
}

function fieldName(instancePath: string, root: string): string {
  const parts = instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const base = parts.join('.');
  return root ? (base ? `${root}.${base}` : root) : base;
}

function valueAt(data: unknown, pointer: string): unknown {
  let cur: unknown = data;
  for (const part of pointer.split('/').slice(1)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return cur;
}

/**
 * Find `company_id` / `user_id` declared anywhere in an input schema's properties (nested objects,
 * array items, combinators). Returns the JSON paths where they appear.
 */
export function findIdentityProperties(schema: unknown, path = 'input_schema'): string[] {
  const found: string[] = [];
  const walk = (node: unknown, at: string): void => {
    if (node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      node.forEach((n, i) => walk(n, `${at}[${i}]`));
      return;
    }
    const obj = node as Record<string, unknown>;
    const props = obj.properties;
    if (props !== null && typeof props === 'object' && !Array.isArray(props)) {
      for (const key of Object.keys(props)) {
        if (key === 'company_id' || key === 'user_id') found.push(`${at}.properties.${key}`);
        walk((props as Record<string, unknown>)[key], `${at}.properties.${key}`);
      }
    }
    for (const k of [
      'items',
      'additionalProperties',
      'anyOf',
      'oneOf',
      'allOf',
      'not',
      'then',
      'else',
      'if',
      'prefixItems',
      '$defs',
      'definitions',
      'patternProperties',
    ]) {
      if (k in obj) walk(obj[k], `${at}.${k}`);
    }
  };
  walk(schema, path);
  return found;
}

/**
 * Validate a VerbRecord (manifest entry) against schema/verb-record.json, plus the rule that
 * company_id and user_id never appear in input_schema (at any depth).
 * Returns `{ valid, errors }` like the upstream SDK. Never throws.
 */
export function validateVerbRecord(record: unknown): ValidationResult {
  if (typeof record !== 'object' || record === null || Array.isArray(record)) {
    return { valid: false, errors: ['VerbRecord must be an object'] };
  }
  const v = compiledFor(verbRecordSchema);
  const ok = v(record);
  const errors = ok
    ? []
    : formatAjvErrors(v.errors, record).filter((e) => !e.startsWith('input_schema.properties'));
  const r = record as Record<string, unknown>;
  if (typeof r.name === 'string' && r.name === '')
    errors.push('name is required and must be a non-empty string');
  if (typeof r.description === 'string' && r.description === '')
    errors.push('description is required and must be a non-empty string');
  if (typeof r.input_schema === 'object' && r.input_schema !== null) {
    const ids = findIdentityProperties(r.input_schema);
    if (ids.length > 0) {
      errors.push(
        `input_schema MUST NOT include company_id or user_id — these are injected by the runtime (found at ${ids.join(', ')})`,
      );
    }
  }
  const unique = [...new Set(errors)];
  return { valid: unique.length === 0, errors: unique };
}

/**
 * Validate a response envelope against schema/envelope.json: ok and verb required, ok=false
 * requires error {reason, message}. Returns `{ valid, errors }`; never throws.
 */
export function validateEnvelope(envelope: unknown): ValidationResult {
  if (typeof envelope !== 'object' || envelope === null || Array.isArray(envelope)) {
    return { valid: false, errors: ['Envelope must be an object'] };
  }
  const e = envelope as Record<string, unknown>;
  const errors: string[] = [];
  if (typeof e.ok !== 'boolean') errors.push('ok is required and must be a boolean');
  if (typeof e.verb !== 'string') errors.push('verb is required and must be a string');
  if (e.ok === false && (e.error === undefined || e.error === null))
    errors.push('error is required when ok is false');
  const v = compiledFor(envelopeSchema);
  if (!v(envelope)) {
    for (const msg of formatAjvErrors(v.errors, envelope)) {
      if (
        msg.startsWith('ok ') ||
        msg.startsWith('verb ') ||
        msg === 'ok is required' ||
        msg === 'verb is required' ||
        msg === 'error is required'
      )
        continue;
      errors.push(msg);
    }
  }
  const unique = [...new Set(errors)];
  return { valid: unique.length === 0, errors: unique };
}

/**
 * Validate a verb's output against its shape's schema (schema/shapes/<shape>.json).
 * Unknown shape → invalid with a message listing the shapes. Never throws.
 */
export function validateShapeOutput(shape: string, value: unknown): ValidationResult {
  if (!(VALID_SHAPES as readonly string[]).includes(shape)) {
    return { valid: false, errors: [`shape "${shape}" must be one of: ${VALID_SHAPES.join(', ')}`] };
  }
  const v = compiledFor(shapeSchemas[shape as Shape]);
  if (v(value)) return { valid: true, errors: [] };
  return { valid: false, errors: formatAjvErrors(v.errors, value) };
}

/** The compiled validator of a shape's output schema (cached), for hot paths. */
export function shapeOutputValidator(shape: Shape): ValidateFunction {
  return compiledFor(shapeSchemas[shape]);
}

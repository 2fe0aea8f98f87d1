/**
 * The one schema compiler of the runtime: the process-wide Ajv (JSON Schema 2020-12, with
 * formats) that compiles a verb's input and output schema the first time the verb validates one
 * (registration only checks the schema against the 2020-12 meta-schema: `checkSchema`), and a
 * cache keyed by the schema's JSON text, so a second `Registry` (every test runtime, every
 * `openLocal`) registering the same verbs compiles nothing. A CLI command or `solid mcp` that
 * calls one verb compiles one schema, not the whole catalogue's (issue 36: compiling every
 * verb's schema was 37 % of `solid mcp`'s start-up). Compiling is synchronous, so two concurrent
 * first calls cannot both compile or see half a validator.
 *
 * Two option profiles, because the two uses differ on purpose:
 * - inputs: `useDefaults` (an omitted `limit` becomes its declared default before the handler
 *   runs), first error only (the envelope names one JSON Pointer: `invalid_input`);
 * - outputs: no defaults (a result is never rewritten), all errors (a developer check, on when
 *   the runtime's `validateOutputs` option is).
 *
 * Throws Ajv's own error when a schema does not compile; the registry wraps it in a
 * RegistrationError naming the verb. Spec: spec/manifest.md §registration.
 */
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { newAjv2020 } from '../spec/ajv.ts';
import type { JsonSchema } from '../spec/types.ts';

/** A compiled schema: call it on a value; its `errors` hold the last failure. */
export type CompiledSchema = ValidateFunction;

function profile(options: { useDefaults: boolean; allErrors: boolean }) {
  const ajv = newAjv2020({
    strict: false,
    allowUnionTypes: true,
    validateFormats: true,
    ...options,
  });
  const cache = new Map<string, CompiledSchema>();
  // A frozen schema (a shape's shared output schema) cannot change: look it up by identity, no
  // JSON.stringify of a large schema per registration.
  const frozen = new WeakMap<JsonSchema, CompiledSchema>();
  const compile = (schema: JsonSchema): CompiledSchema => {
    const known = frozen.get(schema);
    if (known !== undefined) return known;
    const key = JSON.stringify(schema);
    let v = cache.get(key);
    if (v === undefined) {
      // The same `$id` with another body (a verb re-registered with a changed schema): the new
      // body wins, as registration's last-write-wins rule says.
      const id = typeof schema.$id === 'string' ? schema.$id : undefined;
      if (id !== undefined && ajv.getSchema(id) !== undefined) ajv.removeSchema(id);
      v = ajv.compile(schema);
      cache.set(key, v);
    }
    if (Object.isFrozen(schema)) frozen.set(schema, v);
    return v;
  };
  /** Ajv's meta-schema errors of `schema` as one sentence, or undefined when it is a valid schema. */
  const check = (schema: JsonSchema): string | undefined => {
    if (frozen.has(schema)) return undefined;
    if (ajv.validateSchema(schema) === true) return undefined;
    return ajv.errorsText(ajv.errors, { dataVar: 'schema' });
  };
  return { compile, check };
}

// Each profile (and Ajv itself) is built on its first use: a command that validates nothing
// loads no Ajv (issue 36).
let inputs: ReturnType<typeof profile> | undefined;
let outputs: ReturnType<typeof profile> | undefined;
const inputProfile = () => (inputs ??= profile({ useDefaults: true, allErrors: false }));
const outputProfile = () => (outputs ??= profile({ useDefaults: false, allErrors: true }));

/** Compile (or fetch from the cache) a verb's input schema: defaults applied, first error only. */
export const compileInputSchema = (schema: JsonSchema): CompiledSchema => inputProfile().compile(schema);

/** Compile (or fetch from the cache) a verb's output schema: no defaults, every error. */
export const compileOutputSchema = (schema: JsonSchema): CompiledSchema => outputProfile().compile(schema);

/**
 * Check `schema` against the JSON Schema 2020-12 meta-schema without compiling it (what
 * registration does): undefined when valid, else Ajv's errors as one sentence.
 */
export const checkSchema = (schema: JsonSchema): string | undefined => inputProfile().check(schema);

/**
 * Conformance of our JSON Schemas (schema/) with the upstream solid-verbs schemas
 * (../shared/spec-reference/schema, loaded from disk, never copied).
 *
 * What a user relies on:
 * - every schema compiles under Ajv's strict mode without a single warning;
 * - every schema names itself (`$id` under https://schemas.solid-verbs.dev/v1/<path>), title, description;
 * - the upstream examples validate against our shape schemas and upstream's (infrastructure-diagnose.json
 *   excepted: upstream's own aggregate schema refuses it, and ours refuses it the same way);
 * - wherever upstream publishes a schema, ours gives the same verdict on realistic documents, except where
 *   a case states why it differs (our documented additions, or our stricter rules, which only ever refuse
 *   what upstream accepts, never the other way round: transaction's added status values are the one
 *   documented exception).
 *
 * Run: node --import tsx --test test/conformance/schemas.test.ts
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join, sep } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';

const addFormats = addFormatsImport as unknown as (ajv: Ajv2020) => Ajv2020;

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const OUR_SCHEMA_DIR = join(REPO_ROOT, 'schema');
const SPEC_REFERENCE_DIR = join(REPO_ROOT, '..', 'shared', 'spec-reference');
const UPSTREAM_SCHEMA_DIR = join(SPEC_REFERENCE_DIR, 'schema');
const UPSTREAM_EXAMPLES_DIR = join(SPEC_REFERENCE_DIR, 'examples');
const ID_BASE = 'https://schemas.solid-verbs.dev/v1/';

type Json = Record<string, unknown>;

/** A folder of schemas added to one Ajv instance, addressable by their path inside the folder. */
interface SchemaSet {
  ajv: Ajv2020;
  /** Path inside the folder with forward slashes (e.g. `shapes/receipt.json`) -> parsed schema. */
  documents: Map<string, Json>;
  /** Everything Ajv logged while adding and compiling. */
  logged: string[];
  validator(path: string): ValidateFunction | undefined;
}

function readJson(path: string): Json {
  return JSON.parse(readFileSync(path, 'utf8')) as Json;
}

function loadSchemaSet(dir: string, options: { strict: boolean }): SchemaSet {
  const logged: string[] = [];
  const record =
    (level: string) =>
    (...args: unknown[]) => {
      logged.push(`${level}: ${args.map(String).join(' ')}`);
    };
  const ajv = new Ajv2020({
    strict: options.strict,
    allErrors: true,
    logger: { log: record('log'), warn: record('warn'), error: record('error') },
  });
  addFormats(ajv);
  const documents = new Map<string, Json>();
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.json'))
    .sort();
  for (const file of files) documents.set(file.split(sep).join('/'), readJson(join(dir, file)));
  for (const schema of documents.values()) ajv.addSchema(schema);
  const compiled = new Map<string, ValidateFunction>();
  return {
    ajv,
    documents,
    logged,
    validator(path) {
      const schema = documents.get(path);
      if (schema === undefined) return undefined;
      let validate = compiled.get(path);
      if (validate === undefined) {
        validate = ajv.getSchema(schema.$id as string);
        assert.ok(validate, `${path} did not compile`);
        compiled.set(path, validate);
      }
      return validate;
    },
  };
}

const ours = loadSchemaSet(OUR_SCHEMA_DIR, { strict: true });
// Upstream's schemas are data we do not own; they use type arrays, which Ajv's strict mode flags.
// Without ../shared beside the clone (a plain `git clone`) our schemas are still checked on their own;
// every comparison with upstream is skipped with this one message.
const UPSTREAM_PRESENT = existsSync(UPSTREAM_SCHEMA_DIR);
const UPSTREAM_SKIP = UPSTREAM_PRESENT
  ? false
  : `${SPEC_REFERENCE_DIR} is absent: comparisons with the upstream schemas and examples skipped`;
const upstream: SchemaSet = UPSTREAM_PRESENT
  ? loadSchemaSet(UPSTREAM_SCHEMA_DIR, { strict: false })
  : { ajv: new Ajv2020(), documents: new Map(), logged: [], validator: () => undefined };

function check(set: SchemaSet, path: string, value: unknown): { valid: boolean; errors: string } {
  const validate = set.validator(path);
  assert.ok(validate, `no schema ${path}`);
  const valid = validate(value) as boolean;
  return { valid, errors: set.ajv.errorsText(validate.errors) };
}

/**
 * One document and the verdict our schema must give. `upstreamValid` is given only where upstream's
 * verdict differs from ours, and `why` then says which documented rule of ours makes the difference.
 */
interface Case {
  title: string;
  value: unknown;
  valid: boolean;
  upstreamValid?: boolean;
  why?: string;
}

/** Asserts our verdict on every case and, when upstream has the schema, upstream's verdict too. */
function runCases(path: string, cases: Case[]): void {
  const upstreamHasIt = upstream.documents.has(path);
  for (const c of cases) {
    const label = c.valid ? 'accepts' : 'refuses';
    const agreement = !upstreamHasIt
      ? '(upstream publishes no schema)'
      : c.upstreamValid === undefined || c.upstreamValid === c.valid
        ? '(as upstream does)'
        : `(upstream ${c.upstreamValid ? 'accepts' : 'refuses'} it: ${c.why ?? 'undocumented'})`;
    test(`${path} ${label} ${c.title} ${agreement}`, () => {
      if (c.upstreamValid !== undefined) assert.ok(c.why, 'a case that differs from upstream must say why');
      const mine = check(ours, path, c.value);
      assert.equal(mine.valid, c.valid, `ours: ${mine.errors}`);
      if (upstreamHasIt) {
        const theirs = check(upstream, path, c.value);
        assert.equal(theirs.valid, c.upstreamValid ?? c.valid, `upstream: ${theirs.errors}`);
      }
    });
  }
}

/** `base` with `patch` applied; a patch value of `undefined` removes the member. */
function withChanges(base: Json, patch: Json): Json {
  const out: Json = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) delete out[key];
    else out[key] = value;
  }
  return out;
}

const ALL_SHAPES = [
  'aggregate',
  'explain',
  'preview',
  'suggest',
  'transaction',
  'receipt',
  'revert',
  'subscribe',
  'discovery',
  'trail',
  'reputation',
  'macro',
  'telemetry',
];

describe('schema files', () => {
  test('every schema in schema/ compiles under Ajv strict mode without a warning', () => {
    assert.ok(
      ours.documents.size >= 15,
      `expected verb-record, envelope and 13 shapes, found ${ours.documents.size}`,
    );
    for (const path of ours.documents.keys()) ours.validator(path);
    assert.deepEqual(ours.logged, []);
  });

  test('every schema declares draft 2020-12, an $id naming its own path, a title and a description', () => {
    for (const [path, schema] of ours.documents) {
      assert.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema', path);
      assert.equal(schema.$id, `${ID_BASE}${path}`, path);
      assert.equal(typeof schema.title, 'string', `${path} title`);
      assert.ok(
        typeof schema.description === 'string' && schema.description.length > 20,
        `${path} description`,
      );
    }
  });

  test(
    'schema/shapes holds one schema per shape, and the shape enum matches upstream',
    { skip: UPSTREAM_SKIP },
    () => {
      const shapeFiles = [...ours.documents.keys()].filter((p) => p.startsWith('shapes/')).sort();
      assert.deepEqual(shapeFiles, ALL_SHAPES.map((s) => `shapes/${s}.json`).sort());
      const ourEnum = ((ours.documents.get('verb-record.json')!.properties as Json).shape as Json).enum;
      const upstreamEnum = ((upstream.documents.get('verb-record.json')!.properties as Json).shape as Json)
        .enum;
      assert.deepEqual(ourEnum, ALL_SHAPES);
      assert.deepEqual([...(ourEnum as string[])].sort(), [...(upstreamEnum as string[])].sort());
    },
  );

  test('every upstream schema has a counterpart at the same path here', { skip: UPSTREAM_SKIP }, () => {
    for (const path of upstream.documents.keys()) assert.ok(ours.documents.has(path), path);
  });

  test('shape schemas leave the top-level object open to domain fields', () => {
    for (const [path, schema] of ours.documents) {
      if (path.startsWith('shapes/')) assert.equal(schema.additionalProperties, true, path);
    }
  });
});

/**
 * Upstream examples that upstream's own shape schema refuses. We keep upstream's required members (so that
 * anything valid against ours stays valid upstream), which means we refuse them too.
 */
const UPSTREAM_EXAMPLES_INVALID_UPSTREAM: Record<string, { missing: string[]; why: string }> = {
  'infrastructure-diagnose.json': {
    missing: ['data', 'entity_id'],
    why: 'its output is the bare droplet report, without the entity_id and data that the aggregate shape requires',
  },
};

/** The set of members a validator reported as missing (keyword `required`), sorted. */
function missingMembers(set: SchemaSet, path: string, value: unknown): string[] {
  const validate = set.validator(path)!;
  validate(value);
  return (validate.errors ?? [])
    .map((e) =>
      e.keyword === 'required'
        ? String((e.params as { missingProperty: string }).missingProperty)
        : `${e.instancePath} ${e.keyword}`,
    )
    .sort();
}

describe('upstream examples', { skip: UPSTREAM_SKIP }, () => {
  const files = UPSTREAM_PRESENT
    ? readdirSync(UPSTREAM_EXAMPLES_DIR)
        .filter((f) => f.endsWith('.json'))
        .sort()
    : [];
  test('the three upstream examples are present', () => {
    assert.equal(files.length, 3);
  });
  for (const file of files) {
    const example = readJson(join(UPSTREAM_EXAMPLES_DIR, file));
    const path = `shapes/${String(example.shape)}.json`;
    const known = UPSTREAM_EXAMPLES_INVALID_UPSTREAM[file];
    if (known === undefined) {
      test(`${file}: output is valid against our ${String(example.shape)} shape and upstream's`, () => {
        const mine = check(ours, path, example.output);
        assert.ok(mine.valid, `ours: ${mine.errors}`);
        const theirs = check(upstream, path, example.output);
        assert.ok(theirs.valid, `upstream: ${theirs.errors}`);
      });
    } else {
      test(`${file}: ours refuses its output exactly as upstream's own schema does (${known.why})`, () => {
        assert.deepEqual(missingMembers(upstream, path, example.output), known.missing);
        assert.deepEqual(missingMembers(ours, path, example.output), known.missing);
      });
      test(`${file}: the same report carried as the aggregate shape's data is valid against ours and upstream's`, () => {
        const output = example.output as Json;
        const wrapped = { entity_id: output.droplet_id, entity_type: 'droplet', data: output };
        const mine = check(ours, path, wrapped);
        assert.ok(mine.valid, `ours: ${mine.errors}`);
        assert.ok(check(upstream, path, wrapped).valid);
      });
    }
    test(`${file}: its verb name and shape make a valid VerbRecord`, () => {
      const record = {
        name: example.verb,
        description: 'Example verb from the upstream specification.',
        shape: example.shape,
        input_schema: { type: 'object', properties: {} },
      };
      const mine = check(ours, 'verb-record.json', record);
      assert.ok(mine.valid, `ours: ${mine.errors}`);
      assert.ok(check(upstream, 'verb-record.json', record).valid);
    });
  }
});

// ---------------------------------------------------------------------------------------------
// VerbRecord
// ---------------------------------------------------------------------------------------------

const previewRefundRecord: Json = {
  name: 'payments.preview_refund_impact',
  description: 'Project the impact of refunding a transaction without executing it.',
  shape: 'preview',
  side_effects: 'read',
  input_schema: {
    type: 'object',
    properties: {
      transaction_id: { type: 'integer', minimum: 1 },
      refund_amount_cents: { type: 'integer', minimum: 1, nullable: true },
    },
    required: ['transaction_id'],
  },
  output_schema: { type: 'object', additionalProperties: true },
  surfaces: ['http', 'mcp_stdio', 'webmcp', 'ucp', 'cli'],
  requires_consent: false,
  tier_floor: 'starter',
};

const chargeInvoiceRecord: Json = {
  name: 'charge_invoice',
  description: 'Charge the saved card of the customer for an open invoice.',
  shape: 'receipt',
  side_effects: 'write',
  input_schema: {
    type: 'object',
    properties: {
      invoice_id: { type: 'integer', minimum: 1 },
      amount_cents: { type: 'integer', minimum: 1 },
    },
    required: ['invoice_id', 'amount_cents'],
  },
  surfaces: ['http', 'cli'],
  requires_consent: true,
  tier_floor: 'professional',
};

describe('verb-record.json', () => {
  const refundInputSchema = previewRefundRecord.input_schema as Json;
  runCases('verb-record.json', [
    {
      title: 'a full record whose input uses upstream-style nullable',
      value: previewRefundRecord,
      valid: true,
    },
    { title: 'a snake_case dispatcher verb on two surfaces', value: chargeInvoiceRecord, valid: true },
    {
      title: 'a record with only the required members and an empty input schema',
      value: {
        name: 'infrastructure_diagnose',
        description: 'Report droplet health.',
        shape: 'aggregate',
        input_schema: {},
      },
      valid: true,
    },
    {
      title: 'a record without a name',
      value: withChanges(previewRefundRecord, { name: undefined }),
      valid: false,
    },
    {
      title: 'a record without input_schema',
      value: withChanges(previewRefundRecord, { input_schema: undefined }),
      valid: false,
    },
    { title: 'an unknown shape', value: withChanges(previewRefundRecord, { shape: 'crud' }), valid: false },
    {
      title: 'an unknown surface',
      value: withChanges(previewRefundRecord, { surfaces: ['http', 'grpc'] }),
      valid: false,
    },
    {
      title: 'a name starting with a digit',
      value: withChanges(previewRefundRecord, { name: '1payments.refund' }),
      valid: false,
    },
    {
      title: 'a name with a hyphen',
      value: withChanges(previewRefundRecord, { name: 'payments.preview-refund' }),
      valid: false,
    },
    {
      title: 'a member the manifest does not define',
      value: withChanges(previewRefundRecord, { risk_class: 'READ' }),
      valid: false,
    },
    {
      title: 'an unknown side_effects value',
      value: withChanges(previewRefundRecord, { side_effects: 'delete' }),
      valid: false,
    },
    {
      title: 'a non-boolean requires_consent',
      value: withChanges(previewRefundRecord, { requires_consent: 'yes' }),
      valid: false,
    },
    {
      title: 'company_id declared in input_schema (the README example)',
      value: withChanges(previewRefundRecord, {
        input_schema: {
          ...refundInputSchema,
          properties: {
            company_id: { type: 'integer', minimum: 1 },
            ...(refundInputSchema.properties as Json),
          },
          required: ['company_id', 'transaction_id'],
        },
      }),
      valid: false,
      upstreamValid: true,
      why: 'ours forbids company_id and user_id in input_schema; the runtime injects them',
    },
    {
      title: 'user_id declared in input_schema properties',
      value: withChanges(chargeInvoiceRecord, {
        input_schema: {
          type: 'object',
          properties: { invoice_id: { type: 'integer' }, user_id: { type: 'integer' } },
        },
      }),
      valid: false,
      upstreamValid: true,
      why: 'ours forbids company_id and user_id in input_schema; the runtime injects them',
    },
    {
      title: 'company_id listed in input_schema required without a property',
      value: withChanges(chargeInvoiceRecord, { input_schema: { type: 'object', required: ['company_id'] } }),
      valid: false,
      upstreamValid: true,
      why: 'ours forbids company_id and user_id in input_schema; the runtime injects them',
    },
    {
      title: 'an input_schema typed as an array',
      value: withChanges(chargeInvoiceRecord, {
        input_schema: { type: 'array', items: { type: 'integer' } },
      }),
      valid: false,
      upstreamValid: true,
      why: 'ours requires tool arguments to be an object, as tool-calling APIs do',
    },
    {
      title: 'an unknown tier_floor',
      value: withChanges(chargeInvoiceRecord, { tier_floor: 'gold' }),
      valid: false,
      upstreamValid: true,
      why: 'ours limits tier_floor to starter, professional, enterprise',
    },
    {
      title: 'a surface listed twice',
      value: withChanges(chargeInvoiceRecord, { surfaces: ['http', 'http'] }),
      valid: false,
      upstreamValid: true,
      why: 'ours requires surfaces to be unique',
    },
  ]);
});

// ---------------------------------------------------------------------------------------------
// Envelope
// ---------------------------------------------------------------------------------------------

const successEnvelope: Json = {
  ok: true,
  verb: 'charge_invoice',
  result: { status: 'completed', audit_id: 4242, invoice_id: 201, amount_cents: 5000 },
  audit_id: 4242,
  idempotency_key: '4dbfa11cbfc149fc',
  rollback_handle: 'payments:refund:201:5000',
};

const pendingEnvelope: Json = {
  ok: false,
  verb: 'charge_invoice',
  error: {
    reason: 'dispatch_pending',
    message: 'Charging an invoice needs a human to type the confirmation phrase.',
    hint: 'Show the phrase to the person, then call again with confirm: true, the nonce and the typed phrase.',
  },
  audit_id: 4243,
  consent: {
    class: 'WRITE_FINANCIAL',
    gate: 'typed_phrase',
    nonce: 'n1.1748000000.3f9a2c',
    expires_at: '2026-05-23T14:05:00Z',
    summary: 'Charge $50.00 to invoice #4242',
    typed_phrase: 'CHARGE $50.00 to invoice #4242',
  },
};

const consent = pendingEnvelope.consent as Json;

describe('envelope.json', () => {
  runCases('envelope.json', [
    { title: 'a successful write with its receipt handles', value: successEnvelope, valid: true },
    { title: 'an idempotent replay', value: withChanges(successEnvelope, { replayed: true }), valid: true },
    {
      title: 'a refusal with reason, message and hint',
      value: {
        ok: false,
        verb: 'subscription_cancel_immediate',
        error: {
          reason: 'blocked_verb',
          message: 'This verb is never executed.',
          hint: 'Use subscriptions.schedule_cancel.',
        },
        audit_id: 9,
      },
      valid: true,
    },
    {
      title: 'an invalid_input error pointing at the failing argument',
      value: {
        ok: false,
        verb: 'payments.preview_refund_impact',
        error: {
          reason: 'invalid_input',
          message: 'must be >= 1',
          path: '/refund_amount_cents',
          details: { minimum: 1 },
        },
      },
      valid: true,
    },
    {
      title: 'a dispatch_pending answer carrying a typed-phrase consent request',
      value: pendingEnvelope,
      valid: true,
    },
    {
      title: 'a dispatch_pending answer with a confirmation gate and a preview',
      value: withChanges(pendingEnvelope, {
        verb: 'crm_contact_update',
        consent: {
          class: 'WRITE_REVERSIBLE',
          gate: 'confirmation',
          nonce: 'n1.abc',
          expires_at: '2026-05-23T14:05:00.000Z',
          summary: 'Rename contact 42',
          approval_id: 'ap_17',
          preview: { current: { name: 'Acme' }, projected: { name: 'Acme Plumbing' }, reversible: true },
        },
      }),
      valid: true,
    },
    {
      title: 'a member the envelope does not define',
      value: withChanges(successEnvelope, { trace_id: 'abc' }),
      valid: true,
    },
    {
      title: 'an envelope without verb',
      value: withChanges(successEnvelope, { verb: undefined }),
      valid: false,
    },
    { title: 'an envelope without ok', value: withChanges(successEnvelope, { ok: undefined }), valid: false },
    { title: 'a string ok', value: withChanges(successEnvelope, { ok: 'true' }), valid: false },
    { title: 'an array result', value: withChanges(successEnvelope, { result: [1, 2] }), valid: false },
    { title: 'a string audit_id', value: withChanges(successEnvelope, { audit_id: '4242' }), valid: false },
    {
      title: 'an error without message',
      value: { ok: false, verb: 'charge_invoice', error: { reason: 'role_denied' } },
      valid: false,
    },
    {
      title: 'ok=false without error',
      value: { ok: false, verb: 'charge_invoice' },
      valid: false,
      upstreamValid: true,
      why: 'ours requires error when ok is false',
    },
    {
      title: 'ok=true with an error',
      value: withChanges(successEnvelope, { error: { reason: 'internal_error', message: 'boom' } }),
      valid: false,
      upstreamValid: true,
      why: 'ours forbids error when ok is true',
    },
    {
      title: 'a reason that is not snake_case',
      value: { ok: false, verb: 'charge_invoice', error: { reason: 'Role Denied', message: 'no' } },
      valid: false,
      upstreamValid: true,
      why: 'ours requires snake_case reason codes',
    },
    {
      title: 'an error path that is not a JSON Pointer',
      value: {
        ok: false,
        verb: 'charge_invoice',
        error: { reason: 'invalid_input', message: 'bad', path: 'amount_cents' },
      },
      valid: false,
      upstreamValid: true,
      why: 'ours defines error.path as a JSON Pointer; upstream does not define path',
    },
    {
      title: 'a typed-phrase consent request without the phrase',
      value: withChanges(pendingEnvelope, { consent: withChanges(consent, { typed_phrase: undefined }) }),
      valid: false,
      upstreamValid: true,
      why: 'consent is ours; a typed_phrase gate must carry the phrase',
    },
    {
      title: 'a consent request with an unknown class',
      value: withChanges(pendingEnvelope, { consent: withChanges(consent, { class: 'RISKY' }) }),
      valid: false,
      upstreamValid: true,
      why: 'consent is ours; class is one of the five consent classes',
    },
    {
      title: 'a consent request whose expiry is not a date-time',
      value: withChanges(pendingEnvelope, { consent: withChanges(consent, { expires_at: 'in 5 minutes' }) }),
      valid: false,
      upstreamValid: true,
      why: 'consent is ours; expires_at is a date-time',
    },
    {
      title: 'a non-boolean replayed',
      value: withChanges(successEnvelope, { replayed: 'yes' }),
      valid: false,
      upstreamValid: true,
      why: 'replayed is ours and boolean',
    },
  ]);
});

// ---------------------------------------------------------------------------------------------
// Shapes upstream publishes
// ---------------------------------------------------------------------------------------------

const customerContext = (
  UPSTREAM_PRESENT ? readJson(join(UPSTREAM_EXAMPLES_DIR, 'customer-context.json')).output : {}
) as Json;

describe('shapes/aggregate.json', { skip: UPSTREAM_SKIP }, () => {
  runCases('shapes/aggregate.json', [
    { title: 'the customer context example', value: customerContext, valid: true },
    {
      title: 'a string entity id with no relations',
      value: { entity_id: 'droplet-1', entity_type: 'droplet', data: { size: 'SMALL', region: 'nyc1' } },
      valid: true,
    },
    {
      title: 'an output without data',
      value: withChanges(customerContext, { data: undefined }),
      valid: false,
    },
    {
      title: 'an output without entity_id',
      value: withChanges(customerContext, { entity_id: undefined }),
      valid: false,
    },
    { title: 'a boolean entity_id', value: withChanges(customerContext, { entity_id: true }), valid: false },
    {
      title: 'a relation without id',
      value: withChanges(customerContext, { relations: [{ type: 'deal' }] }),
      valid: false,
    },
    {
      title: 'a fetched_at that is not a date-time',
      value: withChanges(customerContext, { fetched_at: 'yesterday' }),
      valid: false,
    },
  ]);
});

const explainDeal: Json = {
  entity_id: 7,
  entity_type: 'deal',
  current_state: { stage: 'proposal_sent', amount_cents: 85000 },
  causal_chain: [
    {
      action: 'deal.create',
      timestamp: '2026-05-01T10:00:00Z',
      actor: 'user:3',
      detail: 'Created at stage new.',
    },
    {
      action: 'deal.move_stage',
      timestamp: '2026-05-10T16:20:00Z',
      actor: 'agent:sales',
      detail: 'new -> proposal_sent',
    },
  ],
  reasoning: 'The sales agent sent the proposal after the estimate appointment.',
};

describe('shapes/explain.json', () => {
  runCases('shapes/explain.json', [
    { title: 'a deal explained by two events', value: explainDeal, valid: true },
    { title: 'an empty causal chain', value: { entity_id: 'inv_201', causal_chain: [] }, valid: true },
    {
      title: 'an output without causal_chain',
      value: withChanges(explainDeal, { causal_chain: undefined }),
      valid: false,
    },
    {
      title: 'a chain event without action',
      value: withChanges(explainDeal, { causal_chain: [{ actor: 'user:3' }] }),
      valid: false,
    },
    {
      title: 'a chain event whose timestamp is not a date-time',
      value: withChanges(explainDeal, { causal_chain: [{ action: 'deal.create', timestamp: 'May 1st' }] }),
      valid: false,
    },
    {
      title: 'a string causal_chain',
      value: withChanges(explainDeal, { causal_chain: 'created, then moved' }),
      valid: false,
    },
  ]);
});

const previewRefund = (
  UPSTREAM_PRESENT ? readJson(join(UPSTREAM_EXAMPLES_DIR, 'preview-refund.json')).output : {}
) as Json;

describe('shapes/preview.json', { skip: UPSTREAM_SKIP }, () => {
  runCases('shapes/preview.json', [
    { title: 'the refund preview example', value: previewRefund, valid: true },
    {
      title: 'a reversible resize preview without delta',
      value: {
        current: { size: 'SMALL' },
        projected: { size: 'MEDIUM' },
        reversible: true,
        monthly_cost_delta_cents: 2400,
      },
      valid: true,
    },
    {
      title: 'an output without reversible',
      value: withChanges(previewRefund, { reversible: undefined }),
      valid: false,
    },
    { title: 'a string reversible', value: withChanges(previewRefund, { reversible: 'no' }), valid: false },
    {
      title: 'a string projected state',
      value: withChanges(previewRefund, { projected: 'refunded' }),
      valid: false,
    },
  ]);
});

const suggestions: Json = {
  suggestions: [
    {
      action: 'payments.send_reminder',
      confidence: 0.82,
      confidence_band: 'high',
      reason: 'Invoice 201 is 14 days overdue and reminders recovered 82% of similar invoices.',
      model_version: 'heuristic-1',
      sample_size: 311,
    },
    {
      action: 'crm.schedule_call',
      confidence: 0.3,
      confidence_band: 'learning',
      reason: 'Few outcomes recorded yet.',
    },
  ],
};

function withSuggestion(patch: Json): Json {
  return { suggestions: [withChanges((suggestions.suggestions as Json[])[0]!, patch)] };
}

describe('shapes/suggest.json', () => {
  runCases('shapes/suggest.json', [
    { title: 'two ranked suggestions', value: suggestions, valid: true },
    { title: 'no suggestions at all', value: { suggestions: [] }, valid: true },
    { title: 'an output without suggestions', value: {}, valid: false },
    { title: 'a confidence above 1', value: withSuggestion({ confidence: 1.2 }), valid: false },
    { title: 'a negative confidence', value: withSuggestion({ confidence: -0.1 }), valid: false },
    {
      title: 'an unknown confidence band',
      value: withSuggestion({ confidence_band: 'certain' }),
      valid: false,
    },
    { title: 'a suggestion without reason', value: withSuggestion({ reason: undefined }), valid: false },
    { title: 'a fractional sample size', value: withSuggestion({ sample_size: 2.5 }), valid: false },
  ]);
});

const committedTransaction: Json = {
  transaction_id: 'tx_8f2c',
  status: 'committed',
  audit_id: 5000,
  rollback_handle: 'tx:tx_8f2c:rollback_all',
  steps: [
    { verb: 'crm_contact_update', status: 'completed', audit_id: 5001 },
    { verb: 'deal.move_stage', status: 'completed', audit_id: 5002 },
  ],
};

describe('shapes/transaction.json', () => {
  const additions = 'ours adds the status values expired, failed, reverted, partially_reverted';
  runCases('shapes/transaction.json', [
    { title: 'a committed transaction with its child receipts', value: committedTransaction, valid: true },
    {
      title: 'a freshly started transaction with its expiry',
      value: { transaction_id: 'tx_9', status: 'started', steps: [], expires_at: '2026-05-23T14:15:00Z' },
      valid: true,
    },
    {
      title: 'an appended step not yet run',
      value: {
        transaction_id: 'tx_9',
        status: 'appended',
        steps: [{ verb: 'charge_invoice', status: 'pending' }],
      },
      valid: true,
    },
    {
      title: 'an unknown status',
      value: withChanges(committedTransaction, { status: 'done' }),
      valid: false,
    },
    {
      title: 'an output without transaction_id',
      value: withChanges(committedTransaction, { transaction_id: undefined }),
      valid: false,
    },
    {
      title: 'a numeric transaction_id',
      value: withChanges(committedTransaction, { transaction_id: 8 }),
      valid: false,
    },
    {
      title: 'a step without verb',
      value: withChanges(committedTransaction, { steps: [{ status: 'completed' }] }),
      valid: false,
    },
    {
      title: 'a step with a string audit_id',
      value: withChanges(committedTransaction, {
        steps: [{ verb: 'x', status: 'completed', audit_id: '5001' }],
      }),
      valid: false,
    },
    {
      title: 'a transaction reverted as a whole',
      value: withChanges(committedTransaction, { status: 'reverted' }),
      valid: true,
      upstreamValid: false,
      why: additions,
    },
    {
      title: 'a partially reverted transaction',
      value: withChanges(committedTransaction, {
        status: 'partially_reverted',
        partially_reverted: true,
        steps: [
          { verb: 'crm_contact_update', status: 'reverted', audit_id: 5001 },
          { verb: 'payments.refund', status: 'completed', audit_id: 5002 },
        ],
      }),
      valid: true,
      upstreamValid: false,
      why: additions,
    },
    {
      title: 'an expired transaction',
      value: { transaction_id: 'tx_9', status: 'expired' },
      valid: true,
      upstreamValid: false,
      why: additions,
    },
    {
      title: 'a transaction that failed at commit',
      value: {
        transaction_id: 'tx_9',
        status: 'failed',
        steps: [{ verb: 'charge_invoice', status: 'failed' }],
      },
      valid: true,
      upstreamValid: false,
      why: additions,
    },
    {
      title: 'an expires_at that is not a date-time',
      value: { transaction_id: 'tx_9', status: 'started', expires_at: 'soon' },
      valid: false,
      upstreamValid: true,
      why: 'expires_at is ours and a date-time',
    },
  ]);
});

const attestedReceipt: Json = {
  status: 'resized',
  audit_id: 4242,
  rollback_handle: 'infra:resize:1:s-2vcpu-4gb',
  idempotency_key: '4dbfa11cbfc149fc',
  timestamp: '2026-05-23T14:00:00.123Z',
  previous_size: 'SMALL',
  new_size: 'MEDIUM',
  attestation: {
    kid: 'tenant-1-2026-05',
    alg: 'ES256',
    seq: 17,
    row_hash: 'a'.repeat(64),
    prev_hash: '0'.repeat(64),
    jws: 'eyJhbGciOiJFUzI1NiIsImI2NCI6ZmFsc2UsImNyaXQiOlsiYjY0Il19..MEUCIQDx3m1XZ2E_kq-9',
  },
};

const attestation = attestedReceipt.attestation as Json;

describe('shapes/receipt.json', () => {
  const attestationIsOurs = 'attestation is ours; upstream accepts any extra member';
  runCases('shapes/receipt.json', [
    {
      title: 'the README receipt',
      value: {
        status: 'completed',
        audit_id: 4242,
        rollback_handle: 'infra:resize:1:s-2vcpu-4gb',
        idempotency_key: '4dbfa11cbfc149fc',
      },
      valid: true,
    },
    { title: 'a receipt with domain fields and an attestation', value: attestedReceipt, valid: true },
    { title: 'a replayed receipt', value: withChanges(attestedReceipt, { replayed: true }), valid: true },
    {
      title: 'a receipt without audit_id',
      value: withChanges(attestedReceipt, { audit_id: undefined }),
      valid: false,
    },
    {
      title: 'a receipt without status',
      value: withChanges(attestedReceipt, { status: undefined }),
      valid: false,
    },
    { title: 'a string audit_id', value: withChanges(attestedReceipt, { audit_id: '4242' }), valid: false },
    {
      title: 'a timestamp that is not a date-time',
      value: withChanges(attestedReceipt, { timestamp: 'now' }),
      valid: false,
    },
    {
      title: 'a numeric rollback_handle',
      value: withChanges(attestedReceipt, { rollback_handle: 7 }),
      valid: false,
    },
    {
      title: 'an attestation signed with another algorithm',
      value: withChanges(attestedReceipt, { attestation: withChanges(attestation, { alg: 'HS256' }) }),
      valid: false,
      upstreamValid: true,
      why: attestationIsOurs,
    },
    {
      title: 'an attestation whose JWS carries its payload',
      value: withChanges(attestedReceipt, {
        attestation: withChanges(attestation, { jws: 'eyJh.eyJwYXlsb2FkIjoxfQ.MEUC' }),
      }),
      valid: false,
      upstreamValid: true,
      why: attestationIsOurs,
    },
    {
      title: 'an attestation with a short row hash',
      value: withChanges(attestedReceipt, { attestation: withChanges(attestation, { row_hash: 'abc123' }) }),
      valid: false,
      upstreamValid: true,
      why: attestationIsOurs,
    },
    {
      title: 'an attestation with chain position 0',
      value: withChanges(attestedReceipt, { attestation: withChanges(attestation, { seq: 0 }) }),
      valid: false,
      upstreamValid: true,
      why: attestationIsOurs,
    },
    {
      title: 'an attestation without kid',
      value: withChanges(attestedReceipt, { attestation: withChanges(attestation, { kid: undefined }) }),
      valid: false,
      upstreamValid: true,
      why: attestationIsOurs,
    },
    {
      title: 'a receipt with audit_id 0',
      value: withChanges(attestedReceipt, { audit_id: 0 }),
      valid: false,
      upstreamValid: true,
      why: 'ours requires audit ids to be row ids, from 1',
    },
    {
      title: 'a non-boolean replayed',
      value: withChanges(attestedReceipt, { replayed: 1 }),
      valid: false,
      upstreamValid: true,
      why: 'replayed is ours and boolean',
    },
  ]);
});

describe('shapes/revert.json', () => {
  runCases('shapes/revert.json', [
    {
      title: 'a successful revert',
      value: {
        reverted: true,
        audit_id: 4242,
        original_action: 'infra.resize to MEDIUM',
        revert_action: 'infra.resize to SMALL',
      },
      valid: true,
    },
    {
      title: 'an action without a revert handler',
      value: {
        reverted: false,
        audit_id: 4242,
        reason: 'no_revert_handler',
        message: 'Refunds cannot be undone; intervene manually.',
      },
      valid: true,
    },
    { title: 'an output without audit_id', value: { reverted: true }, valid: false },
    { title: 'a string reverted', value: { reverted: 'yes', audit_id: 1 }, valid: false },
    { title: 'a numeric reason', value: { reverted: false, audit_id: 1, reason: 404 }, valid: false },
    {
      title: 'a refused revert without reason',
      value: { reverted: false, audit_id: 4242 },
      valid: false,
      upstreamValid: true,
      why: 'ours requires reason when reverted is false',
    },
  ]);
});

const dealEvent: Json = {
  seq: 101,
  type: 'deal.stage_changed',
  entity_type: 'deal',
  entity_id: 7,
  payload: { from: 'new', to: 'proposal_sent' },
  occurred_at: '2026-05-23T13:59:00Z',
  audit_id: 4240,
};

describe('shapes/subscribe.json', () => {
  runCases('shapes/subscribe.json', [
    {
      title: 'a new subscription with its initial events',
      value: {
        subscription_id: 'sub_3',
        cursor: 'c1.101.9f2e',
        initial_events: [dealEvent],
        filters: { event_types: ['deal.stage_changed'] },
        poll_interval_ms: 5000,
        retention_seconds: 604800,
      },
      valid: true,
    },
    {
      title: 'a poll returning events after the cursor',
      value: {
        subscription_id: 'sub_3',
        cursor: 'c1.102.77aa',
        events: [withChanges(dealEvent, { seq: 102, entity_id: 'inv_201', audit_id: undefined })],
      },
      valid: true,
    },
    {
      title: 'an output without cursor',
      value: { subscription_id: 'sub_3', initial_events: [] },
      valid: false,
    },
    { title: 'a numeric cursor', value: { subscription_id: 'sub_3', cursor: 101 }, valid: false },
    { title: 'an output without subscription_id', value: { cursor: 'c1' }, valid: false },
    {
      title: 'initial events that are not objects',
      value: { subscription_id: 'sub_3', cursor: 'c1', initial_events: ['deal.created'] },
      valid: false,
    },
    {
      title: 'an initial event without seq',
      value: {
        subscription_id: 'sub_3',
        cursor: 'c1',
        initial_events: [withChanges(dealEvent, { seq: undefined })],
      },
      valid: false,
      upstreamValid: true,
      why: 'ours defines the event object; upstream only asks for an object',
    },
    {
      title: 'a polled event whose occurred_at is not a date-time',
      value: {
        subscription_id: 'sub_3',
        cursor: 'c1',
        events: [withChanges(dealEvent, { occurred_at: 'today' })],
      },
      valid: false,
      upstreamValid: true,
      why: 'events is ours',
    },
    {
      title: 'a fractional poll interval',
      value: { subscription_id: 'sub_3', cursor: 'c1', poll_interval_ms: 2.5 },
      valid: false,
      upstreamValid: true,
      why: 'poll_interval_ms is ours and an integer',
    },
  ]);
});

describe('shapes/discovery.json', () => {
  const withRecord = (record: Json): Json => ({
    verbs: [previewRefundRecord, record],
    total: 2,
    surface: 'http',
  });
  runCases('shapes/discovery.json', [
    { title: 'two VerbRecords filtered by surface', value: withRecord(chargeInvoiceRecord), valid: true },
    { title: 'an empty manifest', value: { verbs: [], total: 0 }, valid: true },
    { title: 'an output without total', value: { verbs: [previewRefundRecord] }, valid: false },
    { title: 'a string total', value: { verbs: [], total: '0' }, valid: false },
    {
      title: 'a record with a member VerbRecord does not define',
      value: withRecord(withChanges(chargeInvoiceRecord, { handler: 'x' })),
      valid: false,
    },
    {
      title: 'a record with an unknown shape',
      value: withRecord(withChanges(chargeInvoiceRecord, { shape: 'crud' })),
      valid: false,
    },
    {
      title: 'a record declaring company_id among its arguments',
      value: withRecord(
        withChanges(chargeInvoiceRecord, {
          input_schema: { type: 'object', properties: { company_id: { type: 'integer' } } },
        }),
      ),
      valid: false,
      upstreamValid: true,
      why: 'ours forbids company_id and user_id in input_schema',
    },
    {
      title: 'an unknown surface filter',
      value: { verbs: [], total: 0, surface: 'grpc' },
      valid: false,
      upstreamValid: true,
      why: 'ours limits surface to the five surfaces',
    },
  ]);
});

// ---------------------------------------------------------------------------------------------
// Shapes upstream names without a schema
// ---------------------------------------------------------------------------------------------

const trailPage: Json = {
  entries: [
    {
      audit_id: 4242,
      seq: 17,
      timestamp: '2026-05-23T14:00:00Z',
      action: 'charge_invoice',
      actor: 'user:3/agent:claude',
      entity_id: 201,
      status: 'completed',
      reason: null,
      shape: 'receipt',
      consent_class: 'WRITE_FINANCIAL',
      role: 'admin',
      agent_type: 'mcp_stdio',
      approved_by: 3,
      parent_id: null,
    },
    {
      audit_id: 4243,
      seq: 18,
      timestamp: '2026-05-23T14:01:00Z',
      action: 'delete-all-customers',
      actor: 'user:9/agent:unknown',
      entity_id: null,
      status: 'denied',
      reason: 'unknown_verb',
      shape: null,
      consent_class: null,
    },
  ],
  next_cursor: 't1.4243.c0ffee',
  total: 250,
};

function withEntry(patch: Json): Json {
  return withChanges(trailPage, { entries: [withChanges((trailPage.entries as Json[])[0]!, patch)] });
}

describe('shapes/trail.json', () => {
  runCases('shapes/trail.json', [
    { title: 'a page with a completed write and a denied unknown verb', value: trailPage, valid: true },
    { title: 'the last, empty page', value: { entries: [], next_cursor: null }, valid: true },
    {
      title: 'a page without next_cursor',
      value: withChanges(trailPage, { next_cursor: undefined }),
      valid: false,
    },
    { title: 'a page without entries', value: { next_cursor: null }, valid: false },
    { title: 'an entry without actor', value: withEntry({ actor: undefined }), valid: false },
    { title: 'an entry with a string audit_id', value: withEntry({ audit_id: '4242' }), valid: false },
    { title: 'an entry with a boolean entity_id', value: withEntry({ entity_id: false }), valid: false },
    {
      title: 'an entry whose timestamp is not a date-time',
      value: withEntry({ timestamp: '14:00' }),
      valid: false,
    },
    { title: 'an entry with an unknown shape', value: withEntry({ shape: 'crud' }), valid: false },
    {
      title: 'an entry with an unknown consent class',
      value: withEntry({ consent_class: 'WRITE' }),
      valid: false,
    },
    { title: 'a numeric next_cursor', value: withChanges(trailPage, { next_cursor: 2 }), valid: false },
  ]);
});

const reputationBoard: Json = {
  window: '24h',
  generated_at: '2026-05-23T14:00:00Z',
  scores: [
    {
      verb: 'customer.full_context',
      agent: null,
      invocations: 120,
      successes: 117,
      failures: 2,
      denials: 1,
      success_rate: 0.975,
      p50_ms: 12.5,
      p95_ms: 41,
      star_rating: 4.8,
      sample_size: 120,
    },
    {
      verb: 'charge_invoice',
      agent: 'claude',
      invocations: 0,
      denials: 0,
      success_rate: null,
      p50_ms: null,
      p95_ms: null,
      star_rating: null,
      sample_size: 0,
    },
  ],
};

function withScore(patch: Json): Json {
  return withChanges(reputationBoard, {
    scores: [withChanges((reputationBoard.scores as Json[])[0]!, patch)],
  });
}

describe('shapes/reputation.json', () => {
  runCases('shapes/reputation.json', [
    { title: 'a scored verb and a verb never called', value: reputationBoard, valid: true },
    {
      title: 'a rating withheld below the minimum sample',
      value: withScore({ invocations: 3, star_rating: null, sample_size: 3 }),
      valid: true,
    },
    { title: 'an unknown window', value: withChanges(reputationBoard, { window: '2h' }), valid: false },
    { title: 'an output without scores', value: { window: '7d' }, valid: false },
    { title: 'a score without star_rating', value: withScore({ star_rating: undefined }), valid: false },
    { title: 'a score without p95_ms', value: withScore({ p95_ms: undefined }), valid: false },
    { title: 'a success rate above 1', value: withScore({ success_rate: 1.5 }), valid: false },
    { title: 'a rating above 5 stars', value: withScore({ star_rating: 6 }), valid: false },
    { title: 'a fractional invocation count', value: withScore({ invocations: 1.5 }), valid: false },
    {
      title: 'a success rate for a verb never called',
      value: withScore({ invocations: 0, success_rate: 0 }),
      valid: false,
    },
    {
      title: 'no success rate for a verb whose calls ran',
      value: withScore({ success_rate: null, sample_size: 3 }),
      valid: false,
    },
    {
      title: 'no success rate for a verb only refused (nothing ran)',
      value: withScore({ success_rate: null, sample_size: 0 }),
      valid: true,
    },
  ]);
});

const completedMacro: Json = {
  macro_id: 'mac_onboard',
  status: 'completed',
  steps: [
    {
      index: 0,
      verb: 'crm_contact_create',
      ok: true,
      status: 'completed',
      audit_id: 300,
      result: { status: 'completed', audit_id: 300 },
    },
    { index: 1, verb: 'deal.create', ok: true, status: 'completed', audit_id: 301 },
  ],
};

const failedMacro: Json = {
  macro_id: 12,
  status: 'failed',
  failed_step: 1,
  steps: [
    { index: 0, verb: 'crm_contact_create', ok: true, audit_id: 300 },
    {
      index: 1,
      verb: 'charge_invoice',
      ok: false,
      error: { reason: 'role_denied', message: 'Needs admin.', hint: 'Ask an admin.' },
    },
  ],
  resume: { macro_id: 12, from_step: 1 },
};

describe('shapes/macro.json', () => {
  runCases('shapes/macro.json', [
    { title: 'a completed two-step run', value: completedMacro, valid: true },
    { title: 'a run stopped at a refused step', value: failedMacro, valid: true },
    { title: 'a saved chain', value: { macro_id: 'mac_new', status: 'saved', steps: [] }, valid: true },
    { title: 'an unknown status', value: withChanges(completedMacro, { status: 'done' }), valid: false },
    {
      title: 'an output without steps',
      value: withChanges(completedMacro, { steps: undefined }),
      valid: false,
    },
    {
      title: 'a failed run without failed_step',
      value: withChanges(failedMacro, { failed_step: undefined }),
      valid: false,
    },
    {
      title: 'a failed step without its error',
      value: withChanges(failedMacro, { steps: [{ index: 1, verb: 'charge_invoice', ok: false }] }),
      valid: false,
    },
    {
      title: 'a step error whose reason is not snake_case',
      value: withChanges(failedMacro, {
        steps: [{ index: 1, verb: 'charge_invoice', ok: false, error: { reason: 'Denied!', message: 'no' } }],
      }),
      valid: false,
    },
    {
      title: 'a negative step index',
      value: withChanges(completedMacro, { steps: [{ index: -1, verb: 'x', ok: true }] }),
      valid: false,
    },
    {
      title: 'a step with a string ok',
      value: withChanges(completedMacro, { steps: [{ index: 0, verb: 'x', ok: 'true' }] }),
      valid: false,
    },
  ]);
});

const telemetrySnapshot: Json = {
  generated_at: '2026-05-23T14:00:00Z',
  window_seconds: 300,
  dispatch: { total: 200, ok: 180, errors: 8, denials: 12, error_rate: 0.04, denial_rate: 0.06 },
  latency_ms: { p50: 4.2, p95: 18.9, p99: 55 },
  store: { engine: 'sqlite', size_bytes: 1048576, audit_rows: 5021, event_rows: 812 },
  queues: { outbox_pending: 2, read_audit_buffered: 0 },
  by_reason: { role_denied: 7, daily_cap_exceeded: 5, internal_error: 8 },
};

describe('shapes/telemetry.json', () => {
  runCases('shapes/telemetry.json', [
    { title: 'a busy window', value: telemetrySnapshot, valid: true },
    {
      title: 'an idle runtime with no latency yet',
      value: withChanges(telemetrySnapshot, {
        dispatch: { total: 0, ok: 0, errors: 0, denials: 0, error_rate: 0, denial_rate: 0 },
        latency_ms: { p50: null, p95: null, p99: null },
        store: { engine: 'postgres', audit_rows: 0, event_rows: 0 },
        by_reason: undefined,
      }),
      valid: true,
    },
    {
      title: 'an output without queues',
      value: withChanges(telemetrySnapshot, { queues: undefined }),
      valid: false,
    },
    {
      title: 'an error rate above 1',
      value: withChanges(telemetrySnapshot, {
        dispatch: { ...(telemetrySnapshot.dispatch as Json), error_rate: 2 },
      }),
      valid: false,
    },
    {
      title: 'a dispatch block without denials',
      value: withChanges(telemetrySnapshot, {
        dispatch: withChanges(telemetrySnapshot.dispatch as Json, { denials: undefined }),
      }),
      valid: false,
    },
    {
      title: 'a latency given as text',
      value: withChanges(telemetrySnapshot, { latency_ms: { p50: 'fast', p95: 1, p99: 2 } }),
      valid: false,
    },
    {
      title: 'a store block without engine',
      value: withChanges(telemetrySnapshot, { store: { audit_rows: 1, event_rows: 1 } }),
      valid: false,
    },
    {
      title: 'a negative reason count',
      value: withChanges(telemetrySnapshot, { by_reason: { role_denied: -1 } }),
      valid: false,
    },
    {
      title: 'a reason key that is not snake_case',
      value: withChanges(telemetrySnapshot, { by_reason: { 'Role Denied': 1 } }),
      valid: false,
    },
    {
      title: 'a generated_at that is not a date-time',
      value: withChanges(telemetrySnapshot, { generated_at: 'now' }),
      valid: false,
    },
  ]);
});

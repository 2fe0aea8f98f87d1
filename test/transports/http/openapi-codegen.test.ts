/**
 * /openapi.json for code generators: the document `solid serve --demo` serves (every mount, the
 * demo and conformance packs) lints clean with Redocly (0 errors; the CI step `npm run
 * lint:openapi` runs the same), and a client generated from it with openapi-typescript
 * type-checks a call to charge_invoice — while a misspelt argument does not compile.
 * Spec: spec/transports.md §http-openapi.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { demoOpenApi } from '../../../scripts/openapi.ts';

type Doc = {
  servers: { url: string }[];
  paths: Record<string, Record<string, Record<string, unknown>>>;
  components: Record<string, Record<string, unknown>>;
};

const REDOCLY = createRequire(import.meta.url)
  .resolve('@redocly/cli/package.json')
  .replace(/package\.json$/, 'bin/cli.js');

let docOnce: Promise<Doc> | undefined;
const demoDoc = () => (docOnce ??= demoOpenApi('https://agents.example.org') as Promise<Doc>);

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'solid-openapi-codegen-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** `redocly lint --format=json` on the document: its problems. */
function redoclyLint(file: string): { ruleId: string; severity: string; message: string }[] {
  let out: string;
  try {
    out = execFileSync(process.execPath, [REDOCLY, 'lint', file, '--format=json'], {
      encoding: 'utf8',
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    // Exit code 1 on errors: the JSON report is still on stdout.
    out = (err as { stdout: string }).stdout;
  }
  return (JSON.parse(out) as { problems: { ruleId: string; severity: string; message: string }[] }).problems;
}

/** Type-check `files` (strict) and answer the error messages. */
function typeErrors(files: string[]): string[] {
  const program = ts.createProgram(files, {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
    types: [],
    skipLibCheck: true,
  });
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

const consumer = (args: string) => `
import type { paths } from './api.ts';

type ChargeInvoice = paths['/api/v1/agent/dispatch/charge_invoice']['post'];
type Body = NonNullable<ChargeInvoice['requestBody']>['content']['application/json'];
type Answer =
  | ChargeInvoice['responses'][200]['content']['application/json']
  | ChargeInvoice['responses'][202]['content']['application/json']
  | ChargeInvoice['responses'][403]['content']['application/json'];
type IdempotencyKey = NonNullable<ChargeInvoice['parameters']['header']>['Idempotency-Key'];

/** A typed fetch wrapper around the generated types. */
async function chargeInvoice(base: string, key: string, body: Body, idem?: IdempotencyKey): Promise<Answer> {
  const res = await fetch(\`\${base}/api/v1/agent/dispatch/charge_invoice\`, {
    method: 'POST',
    headers: {
      authorization: \`Bearer \${key}\`,
      'content-type': 'application/json',
      ...(idem !== undefined ? { 'idempotency-key': idem } : {}),
    },
    body: JSON.stringify(body),
  });
  return (await res.json()) as Answer;
}

export async function run(): Promise<string> {
  const answer = await chargeInvoice('https://agents.example.org', 'sk_solid_x_y', { args: ${args} }, 'order-42');
  if (answer.ok === true) {
    const auditId: number = answer.result.audit_id;
    return String(auditId);
  }
  if (answer.error?.reason === 'dispatch_pending') {
    const again = await chargeInvoice('https://agents.example.org', 'sk_solid_x_y', {
      args: ${args},
      confirm: true,
      nonce: answer.consent?.nonce ?? '',
      typed_phrase: answer.consent?.typed_phrase ?? '',
    });
    return again.ok ? 'charged' : (again.error?.reason ?? 'unknown');
  }
  return answer.error?.reason ?? 'unknown';
}
`;

test('the demo OpenAPI document lints with 0 Redocly errors', async (t) => {
  const doc = await demoDoc();
  const file = join(tempDir(t), 'openapi.json');
  writeFileSync(file, JSON.stringify(doc));
  const problems = redoclyLint(file);
  const errors = problems.filter((p) => p.severity === 'error');
  t.diagnostic(`redocly: ${errors.length} errors, ${problems.length - errors.length} warnings`);
  assert.deepEqual(
    errors.map((p) => `${p.ruleId}: ${p.message}`),
    [],
  );
});

test('charge_invoice has its own typed operation: args, typed result, 202 pending, errors, Idempotency-Key', async () => {
  const doc = await demoDoc();
  assert.ok(
    doc.servers.some((s) => s.url === 'https://agents.example.org'),
    'the configured origin is a server',
  );
  const op = doc.paths['/api/v1/agent/dispatch/charge_invoice']!.post!;
  assert.equal(op.operationId, 'charge_invoice');
  const responses = op.responses as Record<string, Record<string, unknown>>;
  assert.deepEqual(responses['202'], { $ref: '#/components/responses/Pending' });
  assert.deepEqual(responses['403'], { $ref: '#/components/responses/Error403' });
  const ok = (responses['200']!.content as Record<string, { schema: { properties: { result: unknown } } }>)[
    'application/json'
  ]!.schema;
  assert.deepEqual(ok.properties.result, { $ref: '#/components/schemas/ChargeInvoiceResult' });
  assert.ok(doc.components.schemas!.ChargeInvoiceResult, 'the output schema is a named component');
  assert.deepEqual(op.parameters, [{ $ref: '#/components/parameters/IdempotencyKey' }]);
  assert.deepEqual(op.security, [{ bearerApiKey: [] }]);
  assert.ok(doc.components.securitySchemes!.sessionCookie, 'the WebMCP session cookie scheme');
  for (const [path, item] of Object.entries(doc.paths))
    for (const name of [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]))
      for (const [method, operation] of Object.entries(item))
        assert.ok(
          ((operation.parameters ?? []) as { name?: string; in?: string }[]).some(
            (p) => p.in === 'path' && p.name === name,
          ),
          `${method} ${path} declares {${name}}`,
        );
});

test('a client generated with openapi-typescript type-checks a charge_invoice call; a misspelt argument fails', async (t) => {
  const doc = await demoDoc();
  const dir = tempDir(t);
  // openapi-typescript's input type is its own OpenAPI3 type; the document is plain JSON.
  const ast = await openapiTS(doc as unknown as Parameters<typeof openapiTS>[0]);
  writeFileSync(join(dir, 'api.ts'), astToString(ast));
  writeFileSync(
    join(dir, 'good.ts'),
    consumer('{ invoice_number: 4304, amount_cents: 5000, method: "card" }'),
  );
  writeFileSync(join(dir, 'typo.ts'), consumer('{ invoice_numbr: 4304, amount_cents: 5000 }'));
  writeFileSync(
    join(dir, 'bad-method.ts'),
    consumer('{ invoice_number: 4304, amount_cents: 5000, method: "bitcoin" }'),
  );
  assert.deepEqual(typeErrors([join(dir, 'good.ts')]), []);
  const typo = typeErrors([join(dir, 'typo.ts')]);
  assert.ok(
    typo.some((m) => m.includes('invoice_numbr')),
    `a misspelt argument is a type error: ${typo.join(' | ')}`,
  );
  const badMethod = typeErrors([join(dir, 'bad-method.ts')]);
  assert.ok(
    badMethod.some((m) => m.includes('bitcoin')),
    `a value outside the enum is a type error: ${badMethod.join(' | ')}`,
  );
});

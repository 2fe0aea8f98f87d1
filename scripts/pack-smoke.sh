#!/usr/bin/env bash
# Pack smoke test (CI, after the tests): the package as a user gets it.
#
#   npm pack (prepack builds dist/) → a fresh folder → npm install <tarball> with no tsx and no
#   TypeScript → a plain .mjs imports solid-verbs, defines a verb, dispatches it; the CLI runs
#   from node_modules/.bin. Also checks the tarball holds no tests and `npm ls --omit=dev` no tsx,
#   and that the installed README's and docs' links resolve (docs/, spec/, examples/ ship).
#
# Dependencies come from npm's cache when it has them (--prefer-offline; `npm ci` filled it).
# Usage: bash scripts/pack-smoke.sh   (exit 0 = the package works as shipped)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/solid-pack-smoke.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "pack smoke: FAIL: $*" >&2; exit 1; }

echo "== npm pack"
npm pack --silent --pack-destination "$work" >/dev/null
tarball=$(ls "$work"/solid-verbs-*.tgz)
if tar -tzf "$tarball" | grep -E '(^|/)(test|tests|bench|spike)/|\.test\.|(^|/)src/' ; then
  fail "the tarball holds test, bench or source files (listed above)"
fi
echo "ok: $(tar -tzf "$tarball" | wc -l) files, no tests, no bench, no sources"

echo "== npm install <tarball> in a fresh folder"
app="$work/app"
mkdir -p "$app"
cd "$app"
printf '{ "name": "smoke-app", "private": true, "type": "module" }\n' > package.json
npm install --prefer-offline --no-audit --no-fund --loglevel=error "$tarball"
if npm ls --omit=dev --all 2>/dev/null | grep -E ' (tsx|typescript|esbuild)@'; then
  fail "npm ls --omit=dev shows a TypeScript toolchain (listed above)"
fi
[ -e node_modules/tsx ] && fail "tsx was installed"
echo "ok: no tsx, typescript or esbuild among the installed packages"

echo "== the installed docs: README's and docs/*.md links resolve, the API reference is there"
installed="$app/node_modules/solid-verbs"
[ -f "$installed/docs/authoring.md" ] || fail "docs/authoring.md is not in the installed package"
[ -f "$installed/docs/api/index.html" ] || fail "the API reference (docs/api/index.html) is not in the installed package"
node "$root/scripts/check-doc-links.mjs" "$installed" || fail "a link of the installed README or docs does not resolve (listed above)"

echo "== a plain .mjs: define a verb, dispatch it"
cat > smoke.mjs <<'JS'
import assert from 'node:assert/strict';
import { createRuntime, defineVerb, dispatchWithKey, SqliteStore } from 'solid-verbs';
import pino from 'pino';

const greet = defineVerb({
  name: 'shop.greet',
  description: 'Say hello to a customer by name.',
  shape: 'aggregate',
  category: 'shop',
  input: {
    type: 'object',
    properties: { name: { type: 'string' } },
    required: ['name'],
    additionalProperties: false,
  },
  handler: async (_ctx, args) => ({ data: { greeting: `hello ${args.name}` }, sources: [] }),
});

const rt = await createRuntime({
  store: new SqliteStore({ path: ':memory:' }),
  logger: pino({ level: 'silent' }),
});
rt.register(greet);
const { company_id } = await rt.createTenant({ name: 'Smoke Shop', tier: 'starter' });
const apiKey = await rt.createApiKey({ company_id, user_id: 1, role: 'owner', agent_type: 'smoke' });
const env = await dispatchWithKey(rt, { surface: 'cli' }, apiKey, 'shop.greet', { name: 'Ada' });
assert.equal(env.ok, true, JSON.stringify(env));
assert.deepEqual(env.result.data, { greeting: 'hello Ada' });
const bad = await dispatchWithKey(rt, { surface: 'cli' }, apiKey, 'shop.greet', { nom: 'Ada' });
assert.equal(bad.ok, false);
assert.equal(bad.error?.reason, 'invalid_input');
await rt.close();
console.log('ok: shop.greet dispatched, bad input refused with', bad.error.reason);
JS
node smoke.mjs
node --input-type=module -e '
  const http = await import("solid-verbs/http");
  for (const name of ["solidVerbsPlugin", "startServer", "createHttpServer"])
    if (typeof http[name] !== "function") throw new Error(`solid-verbs/http has no ${name}`);
  console.log("ok: solid-verbs/http exports solidVerbsPlugin and startServer");
' || fail "solid-verbs/http does not export solidVerbsPlugin and startServer"

echo "== a TypeScript consumer: tsc against the shipped .d.ts types zod args and rejects a typo"
cat > consumer.ts <<'TS'
import { z } from 'zod';
import { createRuntime, defineVerb, definePack, packRefusals, SqliteStore, VerbError } from 'solid-verbs';
import { createTestBusiness } from 'solid-verbs/testing';

export const lookup = defineVerb({
  name: 'shop.lookup',
  description: 'Find an item by id.',
  shape: 'aggregate',
  category: 'shop',
  input: z.object({ item_id: z.number().int() }),
  async handler(ctx, args) {
    const id: number = args.item_id;
    return { entity_id: id, data: { tenant: ctx.principal.company_id } };
  },
});
const reasons = { out_of_stock: { status: 409, kind: 'conflict', summary: 'No copies left.' } } as const;
export const refuse = packRefusals(reasons);
export const soldOut = (): VerbError => refuse.out_of_stock('Sold out.');
export const missing = (): VerbError => new VerbError('not_found', 'No such item.');
export const pack = definePack({ name: 'shop', description: 'A shop.', migrations: [], verbs: [lookup], reasons });
export const open = () => createRuntime({ store: new SqliteStore({ path: ':memory:' }) });
export const business = () => createTestBusiness({ packs: [pack] });
TS
sed 's/const id: number = args.item_id;/const id: number = args.itme_id;/' consumer.ts > typo.ts
# A TypeScript project on Node has the Node types; everything else comes with solid-verbs.
npm install --prefer-offline --no-audit --no-fund --loglevel=error --no-save "@types/node@$(node -p "require('$root/package.json').devDependencies['@types/node']")"
"$root/node_modules/.bin/tsc" --noEmit --strict --module nodenext --moduleResolution nodenext --target es2022 consumer.ts \
  || fail "tsc does not compile a TypeScript consumer against the shipped types (errors above)"
if "$root/node_modules/.bin/tsc" --noEmit --strict --module nodenext --moduleResolution nodenext --target es2022 typo.ts >"$work/typo.out" 2>&1; then
  fail "tsc accepted args.itme_id on a zod-typed verb"
fi
grep -q "itme_id" "$work/typo.out" || { cat "$work/typo.out" >&2; fail "tsc failed typo.ts for another reason"; }
echo "ok: tsc compiles a consumer against the .d.ts and rejects args.itme_id"
sed "s/new VerbError('not_found'/new VerbError('not_fund'/" consumer.ts > reason-typo.ts
if "$root/node_modules/.bin/tsc" --noEmit --strict --module nodenext --moduleResolution nodenext --target es2022 reason-typo.ts >"$work/reason-typo.out" 2>&1; then
  fail "tsc accepted the reason 'not_fund'"
fi
grep -q "not_fund" "$work/reason-typo.out" || { cat "$work/reason-typo.out" >&2; fail "tsc failed reason-typo.ts for another reason"; }
echo "ok: tsc rejects a misspelt core reason (new VerbError('not_fund', …))"

echo "== the CLI from node_modules/.bin (built code, no tsx)"
version=$(npx --no-install solid --version)
[ "$version" = "$(node -p "require('$root/package.json').version")" ] || fail "solid --version printed '$version'"
npx --no-install solid init --db "$app/shop.db" >/dev/null 2>&1 || fail "solid init failed"
npx --no-install solid verbs list --json --db "$app/shop.db" | node -e '
  const list = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
  const verbs = Array.isArray(list) ? list : list.verbs ?? list.result?.verbs ?? [];
  if (verbs.length === 0) { console.error("no verbs listed"); process.exit(1); }
  console.log(`ok: solid ${process.argv[1]}; solid verbs list --json lists ${verbs.length} verbs`);
' "$version"

echo "== solid serve: the prebuilt WebMCP module and dashboard, no esbuild"
node_modules/.bin/solid serve --port 0 --db "$app/shop.db" >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
for _ in $(seq 1 300); do
  grep -q 'ready on' "$work/serve.out" 2>/dev/null && break
  kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.err" >&2; fail "solid serve exited"; }
  sleep 0.1
done
base=$(sed -n 's/^solid serve: ready on //p' "$work/serve.out")
[ -n "$base" ] || { kill "$serve_pid"; fail "solid serve never printed its ready line"; }
node -e '
  const base = process.argv[1];
  const check = async (path, type) => {
    const res = await fetch(base + path);
    const body = await res.text();
    if (res.status !== 200 || !res.headers.get("content-type").startsWith(type) || body.length === 0)
      throw new Error(`${path}: ${res.status} ${res.headers.get("content-type")}`);
  };
  await check("/webmcp.js", "text/javascript");
  await check("/dashboard.js", "text/javascript");
  await check("/", "text/html");
  await check("/api/v1/agent/verbs", "application/json");
  console.log(`ok: ${base} serves /webmcp.js, the dashboard and the API`);
' "$base" || { kill "$serve_pid"; fail "solid serve did not serve its assets"; }
kill "$serve_pid"
wait "$serve_pid" 2>/dev/null || true

echo "== your own pack (the README's bookshop.mjs): solid serve --pack, solid mcp --pack"
sed -n '/^\/\/ bookshop.mjs$/,/^```$/p' "$root/README.md" | sed '$d' > bookshop.mjs
[ -s bookshop.mjs ] || fail "the README has no bookshop.mjs example"
npx --no-install solid init --db "$app/books.db" --json > "$work/books-init.json" 2>/dev/null || fail "solid init (books) failed"
books_key=$(node -p 'JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8")).owner_api_key' "$work/books-init.json")
node_modules/.bin/solid serve --port 0 --db "$app/books.db" --pack ./bookshop.mjs >"$work/books.out" 2>"$work/books.err" &
serve_pid=$!
for _ in $(seq 1 300); do
  grep -q 'ready on' "$work/books.out" 2>/dev/null && break
  kill -0 "$serve_pid" 2>/dev/null || { cat "$work/books.err" >&2; fail "solid serve --pack exited"; }
  sleep 0.1
done
base=$(sed -n 's/^solid serve: ready on //p' "$work/books.out")
[ -n "$base" ] || { kill "$serve_pid"; fail "solid serve --pack never printed its ready line"; }
node -e '
  const [base, key] = process.argv.slice(1);
  const res = await fetch(`${base}/api/v1/agent/dispatch/bookshop.shelf`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ args: {} }),
  });
  const env = await res.json();
  if (res.status !== 200 || env.result?.data?.titles !== 0) throw new Error(`${res.status} ${JSON.stringify(env)}`);
  console.log(`ok: solid serve --pack ./bookshop.mjs answers bookshop.shelf over HTTP`);
' "$base" "$books_key" || { kill "$serve_pid"; fail "the pack verb did not answer over HTTP"; }
kill "$serve_pid"
wait "$serve_pid" 2>/dev/null || true
cat > mcp-call.mjs <<'JS'
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
const [db, key] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: 'node_modules/.bin/solid',
  args: ['mcp', '--db', db, '--pack', './bookshop.mjs'],
  env: { ...getDefaultEnvironment(), SOLID_API_KEY: key },
});
const client = new Client({ name: 'pack-smoke', version: '1.0.0' });
await client.connect(transport);
const tools = (await client.listTools()).tools.map((t) => t.name);
if (!tools.includes('bookshop__shelf')) throw new Error(`bookshop__shelf not listed: ${tools.join(' ')}`);
const call = await client.callTool({ name: 'bookshop__shelf', arguments: {} });
// The result is one JSON text block (no structuredContent: spec/transports.md §mcp-results).
const result = call.isError ? undefined : JSON.parse(call.content?.[0]?.text ?? 'null');
if (result?.data?.titles !== 0) throw new Error(JSON.stringify(call));
await client.close();
console.log(`ok: solid mcp --pack ./bookshop.mjs lists ${tools.length} tools and calls bookshop__shelf`);
JS
node mcp-call.mjs "$app/books.db" "$books_key" || fail "solid mcp --pack did not serve the pack"
cat > books.test.mjs <<'JS'
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestBusiness } from 'solid-verbs/testing';
import bookshop from './bookshop.mjs';

test('the README pack under solid-verbs/testing', async (t) => {
  const shop = await createTestBusiness({ packs: [bookshop] });
  t.after(() => shop.close());
  const shelf = await shop.call('bookshop.shelf', {}, { role: 'read_only' });
  assert.equal(shelf.ok, true, JSON.stringify(shelf));
  assert.equal((await shop.verifyAudit()).ok, true);
});
JS
node --test books.test.mjs >"$work/books-test.out" 2>&1 || { cat "$work/books-test.out" >&2; fail "solid-verbs/testing did not run the pack's test"; }
echo "ok: solid-verbs/testing runs a test of the pack from the installed package"

echo "== examples/bookshop: its tests and its solid.config.js against the installed package"
cp -r "$root/examples/bookshop" "$work/bookshop"
ln -s "$app/node_modules" "$work/bookshop/node_modules"
(cd "$work/bookshop" && node --test test/ >"$work/bookshop-test.out" 2>&1) ||
  { cat "$work/bookshop-test.out" >&2; fail "examples/bookshop tests failed"; }
(cd "$work/bookshop" && node_modules/.bin/solid init --db .solid/bookshop.db >/dev/null 2>&1 &&
  node_modules/.bin/solid verbs list --db .solid/bookshop.db --json) | node -e '
  const names = JSON.parse(require("node:fs").readFileSync(0, "utf8")).map((r) => r.name);
  if (!names.includes("bookshop.sale_refund")) { console.error("solid.config.js was not read"); process.exit(1); }
  console.log(`ok: examples/bookshop passes its tests; its solid.config.js serves ${names.filter((n) => n.startsWith("bookshop.")).length} bookshop verbs`);
' || fail "examples/bookshop's solid.config.js"

echo "== solid init --starter shop: the starter project's npm test against the installed package"
(cd "$work" && "$app/node_modules/.bin/solid" init --starter shop >/dev/null) || fail "solid init --starter shop failed"
# solid-verbs is not on the npm registry: the generated package.json must name the tarball this
# installation came from, so a plain `npm install` installs it (and never asks the registry).
dep=$(node -p 'require(process.argv[1]).dependencies["solid-verbs"]' "$work/shop/package.json")
[ "$dep" = "file:../$(basename "$tarball")" ] || fail "the starter project depends on '$dep', not the tarball"
(cd "$work/shop" &&
  npm install --prefer-offline --no-audit --no-fund --loglevel=error &&
  npm test >"$work/shop-test.out" 2>&1) || { cat "$work/shop-test.out" >&2 2>/dev/null; fail "the starter project's npm test failed"; }
grep -q '^# fail 0' "$work/shop-test.out" || { cat "$work/shop-test.out" >&2; fail "the starter project's tests did not all pass"; }
echo "ok: solid init --starter shop writes a project on $dep whose npm install && npm test pass"

echo "pack smoke: ok"

/**
 * `npm run build`: the package a user installs, in `dist/`.
 *
 *   dist/**.js, .d.ts, maps     tsc -p tsconfig.build.json (src/ → dist/, `.ts` imports rewritten)
 *   dist/web/                   the WebMCP module and the dashboard, bundled once here with esbuild
 *                               (web-assets.ts serves them; nothing is compiled by `solid serve`)
 *   dist/runtime/ledger/verify/chain-walk.cjs   the audit-verify worker script (verify-file.ts runs it)
 *
 * Run with tsx (a development dependency): node --import tsx scripts/build.ts
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { WEB_BUNDLES, WEB_DIR, WEB_STATIC, webBundleOptions } from '../src/transports/webmcp/web-assets.ts';
import { walkerBundleOptions } from '../src/runtime/ledger/verify/verify-file.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const dist = `${root}dist/`;

rmSync(dist, { recursive: true, force: true });
execFileSync(
  process.execPath,
  [`${root}node_modules/typescript/bin/tsc`, '-p', `${root}tsconfig.build.json`],
  {
    stdio: 'inherit',
  },
);

mkdirSync(`${dist}web`, { recursive: true });
for (const [out, entry] of Object.entries(WEB_BUNDLES)) {
  await build({ ...webBundleOptions(entry), outfile: `${dist}web/${out}` });
}
for (const name of WEB_STATIC) copyFileSync(`${WEB_DIR}${name}`, `${dist}web/${name}`);
await build({ ...walkerBundleOptions(), outfile: `${dist}runtime/ledger/verify/chain-walk.cjs` });

console.log(`built ${dist}`);

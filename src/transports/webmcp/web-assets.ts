/**
 * The browser files the WebMCP plugin serves, read once and kept in memory:
 *
 *   /webmcp.js      esbuild bundle of web/webmcp.ts (ES module; @mcp-b/webmcp-polyfill bundled in)
 *   /dashboard.js   esbuild bundle of web/dashboard.ts (ES module; loads /webmcp.js itself)
 *   /dashboard.css  web/dashboard.css as is
 *   /               web/dashboard.html as is
 *   /webmcp-bridge.js  esbuild bundle of web/webmcp-bridge.ts (ES module; @mcp-b/global bundled in)
 *   /webmcp-bridge     web/webmcp-bridge.html as is (the MCP-B bridge page)
 *
 * The built package serves the files `npm run build` bundled into `dist/web/` (scripts/build.ts):
 * nothing is compiled at run time and esbuild is not needed. Run from the TypeScript sources (a
 * checkout, the tests), there is no prebuilt folder and the bundles are made from `web/` with
 * esbuild on first request (no build output is committed).
 *
 * Each asset carries a strong ETag (SHA-256 of its bytes). A failed build is not cached (the next
 * request tries again); a successful one lives as long as the process (restart to pick up edits).
 *
 * Spec: spec/transports.md §webmcp-module.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

/** Directory of the browser sources. */
export const WEB_DIR = fileURLToPath(new URL('../../../web/', import.meta.url));

/**
 * Directory of the prebuilt assets: `dist/web/` beside the built module (`dist/transports/webmcp/`).
 * From the sources this is `src/web/`, which does not exist, so the sources are bundled instead.
 */
export const PREBUILT_WEB_DIR = fileURLToPath(new URL('../../web/', import.meta.url));

/** The browser bundles and their entry files in `web/`. */
export const WEB_BUNDLES = {
  'webmcp.js': 'webmcp.ts',
  'dashboard.js': 'dashboard.ts',
  'webmcp-bridge.js': 'webmcp-bridge.ts',
} as const;

/** The files copied as they are. */
export const WEB_STATIC = ['dashboard.css', 'dashboard.html', 'webmcp-bridge.html'] as const;

/** esbuild options of a browser bundle; typed here so the shipped .d.ts does not need esbuild. */
export interface WebBundleOptions {
  entryPoints: string[];
  absWorkingDir: string;
  bundle: true;
  format: 'esm';
  platform: 'browser';
  target: string[];
  external: string[];
  minify: true;
  legalComments: 'none';
  charset: 'utf8';
  logLevel: 'silent';
}

/** esbuild options for one browser bundle (used at serve time from sources and by the build). */
export function webBundleOptions(entry: string): WebBundleOptions {
  return {
    entryPoints: [`${WEB_DIR}${entry}`],
    absWorkingDir: fileURLToPath(new URL('../../../', import.meta.url)),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome120', 'firefox120', 'safari17'],
    // The dashboard loads the WebMCP module at run time from the server, not from its bundle.
    external: ['/webmcp.js'],
    minify: true,
    legalComments: 'none',
    charset: 'utf8',
    logLevel: 'silent',
  };
}

const prebuilt = existsSync(`${PREBUILT_WEB_DIR}webmcp.js`);

/** One served file. */
export interface WebAsset {
  body: string;
  contentType: string;
  /** Strong ETag, quoted. */
  etag: string;
}

/** Names of the assets this module can produce. */
export type WebAssetName =
  | 'webmcp.js'
  | 'dashboard.js'
  | 'dashboard.css'
  | 'dashboard.html'
  | 'webmcp-bridge.js'
  | 'webmcp-bridge.html';

const cache = new Map<WebAssetName, Promise<WebAsset>>();

function asset(body: string, contentType: string): WebAsset {
  return {
    body,
    contentType,
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
  };
}

async function bundle(entry: string): Promise<string> {
  const { build } = await import('esbuild');
  const result = await build({ ...webBundleOptions(entry), write: false });
  const [output] = result.outputFiles;
  if (output === undefined) throw new Error(`esbuild produced no output for ${entry}`);
  return output.text;
}

async function produce(name: WebAssetName): Promise<WebAsset> {
  if (prebuilt) {
    const type = name.endsWith('.js') ? 'javascript' : name.endsWith('.css') ? 'css' : 'html';
    return asset(await readFile(`${PREBUILT_WEB_DIR}${name}`, 'utf8'), `text/${type}; charset=utf-8`);
  }
  switch (name) {
    case 'webmcp.js':
      return asset(await bundle('webmcp.ts'), 'text/javascript; charset=utf-8');
    case 'dashboard.js':
    case 'webmcp-bridge.js':
      return asset(await bundle(WEB_BUNDLES[name]), 'text/javascript; charset=utf-8');
    case 'dashboard.css':
      return asset(await readFile(`${WEB_DIR}dashboard.css`, 'utf8'), 'text/css; charset=utf-8');
    case 'dashboard.html':
    case 'webmcp-bridge.html':
      return asset(await readFile(`${WEB_DIR}${name}`, 'utf8'), 'text/html; charset=utf-8');
  }
}

/**
 * The asset, built or read once per process. Rejects with esbuild's or the file system's error
 * (the route answers 500 internal_error and logs it).
 */
export function webAsset(name: WebAssetName): Promise<WebAsset> {
  let p = cache.get(name);
  if (p === undefined) {
    p = produce(name);
    cache.set(name, p);
    p.catch(() => cache.delete(name));
  }
  return p;
}

/**
 * The browser files the WebMCP plugin serves, built from `web/` on first request and kept in
 * memory (no build output is committed):
 *
 *   /webmcp.js      esbuild bundle of web/webmcp.ts (ES module; @mcp-b/webmcp-polyfill bundled in)
 *   /dashboard.js   esbuild bundle of web/dashboard.ts (ES module; loads /webmcp.js itself)
 *   /dashboard.css  web/dashboard.css as is
 *   /               web/dashboard.html as is
 *
 * Each asset carries a strong ETag (SHA-256 of its bytes). A failed build is not cached (the next
 * request tries again); a successful one lives as long as the process (restart to pick up edits).
 *
 * Spec: spec/transports.md §webmcp-module.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** Directory of the browser sources. */
export const WEB_DIR = fileURLToPath(new URL('../../../web/', import.meta.url));

/** One served file. */
export interface WebAsset {
  body: string;
  contentType: string;
  /** Strong ETag, quoted. */
  etag: string;
}

/** Names of the assets this module can produce. */
export type WebAssetName = 'webmcp.js' | 'dashboard.js' | 'dashboard.css' | 'dashboard.html';

const cache = new Map<WebAssetName, Promise<WebAsset>>();

function asset(body: string, contentType: string): WebAsset {
  return {
    body,
    contentType,
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
  };
}

async function bundle(entry: string): Promise<string> {
  const result = await build({
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
    write: false,
    logLevel: 'silent',
  });
  const [output] = result.outputFiles;
  if (output === undefined) throw new Error(`esbuild produced no output for ${entry}`);
  return output.text;
}

async function produce(name: WebAssetName): Promise<WebAsset> {
  switch (name) {
    case 'webmcp.js':
      return asset(await bundle('webmcp.ts'), 'text/javascript; charset=utf-8');
    case 'dashboard.js':
      return asset(await bundle('dashboard.ts'), 'text/javascript; charset=utf-8');
    case 'dashboard.css':
      return asset(await readFile(`${WEB_DIR}dashboard.css`, 'utf8'), 'text/css; charset=utf-8');
    case 'dashboard.html':
      return asset(await readFile(`${WEB_DIR}dashboard.html`, 'utf8'), 'text/html; charset=utf-8');
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

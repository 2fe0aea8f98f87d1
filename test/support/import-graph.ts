/**
 * The import graph of a source tree, and the rooms each room of `src/` may import
 * (ARCHITECTURE.md §layers; test/docs/architecture.test.ts checks it).
 *
 * A room is a top-level folder of `src/` (`runtime`, `store`, …), one transport folder
 * (`transports/mcp`), `transports` for the files directly in src/transports, or a file directly in
 * src/ (`index.ts`). Every relative import counts: static, type-only, re-exports and `import()`.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export interface ImportEdge {
  /** Importing file, relative to the tree's root (`src/transports/mcp/stdio.ts`). */
  from: string;
  /** Imported file, relative to the tree's root. */
  to: string;
}

function tsFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) tsFiles(p, out);
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** Every relative import of every .ts file under `<root>/src`. */
export function importGraph(root: string): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const file of tsFiles(join(root, 'src'))) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)'(\.{1,2}\/[^']+)'/gm))
      edges.push({ from: relative(root, file), to: relative(root, resolve(dirname(file), m[1]!)) });
  }
  return edges;
}

/** The room of a path under src/. */
export function roomOf(path: string): string {
  const parts = path.split('/').slice(1); // drop 'src'
  if (parts[0] === 'transports') return parts.length > 2 ? `transports/${parts[1]}` : 'transports';
  return parts[0]!;
}

const BELOW_TRANSPORTS = ['spec', 'store', 'runtime', 'identity', 'transports', 'transports/http'];

/**
 * What each room may import besides itself. A room not listed (the package faces `index.ts`,
 * `packs.ts`, `testing.ts`; the CLI, which composes everything; `transports/server`, the composed
 * server) is not checked. A transport folder imports the HTTP core, the runtime and identity,
 * never a sibling transport.
 */
export const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  spec: [],
  store: ['spec'],
  runtime: ['spec', 'store'],
  identity: ['spec', 'store', 'runtime'],
  verbs: ['spec', 'store', 'runtime'],
  business: ['spec', 'store', 'runtime'],
  transports: ['spec', 'store', 'runtime'],
  'transports/http': ['spec', 'store', 'runtime', 'identity', 'transports'],
  'transports/mcp': BELOW_TRANSPORTS,
  'transports/webmcp': BELOW_TRANSPORTS,
  'transports/ucp': BELOW_TRANSPORTS,
  'transports/remote': BELOW_TRANSPORTS,
  // The client of the HTTP API (CLI remote mode, the `solid mcp --remote` bridge over MCP stdio).
  'remote-client': [...BELOW_TRANSPORTS, 'transports/mcp'],
  // OAuth for hosted connectors: a room above the HTTP core and identity, like a transport.
  oauth: BELOW_TRANSPORTS,
  // Provisioning for platforms: the platform credential, log and verbs, and their HTTP mount.
  platform: BELOW_TRANSPORTS,
  // The conformance kit: a client of the HTTP and UCP transports, and a test pack.
  conformance: ['spec', 'store', 'runtime', 'transports', 'transports/http', 'transports/ucp'],
};

/**
 * The rooms below identity that may read its **core**: the modules of src/identity that import
 * nothing of src/ but src/spec and other core modules (the principal constructors, the consent
 * predicate, the auth-failure windows). The pipeline and the system verbs ask the one predicate
 * and build the sandbox principal through them; the rest of identity (authentication, sessions,
 * routes) sits above the runtime. So identity and the runtime import each other only through
 * files that import nothing back: no loop of files.
 */
export const READS_IDENTITY_CORE: readonly string[] = ['runtime', 'verbs'];

/** The core modules of src/identity in `edges` (see READS_IDENTITY_CORE). */
export function identityCore(edges: readonly ImportEdge[]): Set<string> {
  const files = new Set<string>();
  for (const e of edges) for (const f of [e.from, e.to]) if (f.startsWith('src/identity/')) files.add(f);
  const core = new Set(files);
  for (let changed = true; changed;) {
    changed = false;
    for (const { from, to } of edges) {
      if (!core.has(from) || to.startsWith('src/spec/') || core.has(to)) continue;
      core.delete(from);
      changed = true;
    }
  }
  return core;
}

/** The imports that break ALLOWED, as "from → to". */
export function boundaryViolations(
  edges: readonly ImportEdge[],
  allowed: Readonly<Record<string, readonly string[]>> = ALLOWED,
): string[] {
  const core = identityCore(edges);
  const out: string[] = [];
  for (const { from, to } of edges) {
    const a = roomOf(from);
    const b = roomOf(to);
    const rule = allowed[a];
    if (a === b || rule === undefined || rule.includes(b)) continue;
    if (b === 'identity' && READS_IDENTITY_CORE.includes(a) && core.has(to)) continue;
    out.push(`${from} → ${to}`);
  }
  return out;
}

#!/usr/bin/env node
// Check the relative links of the user docs: README.md and docs/*.md (not the generated docs/api).
// Every link to a file or folder must resolve under ROOT, and a `#anchor` into a Markdown file
// must name one of its headings (GitHub's slugs). Plain JavaScript, no dependencies, so it also
// runs on an installed package (scripts/pack-smoke.sh: `node check-doc-links.mjs node_modules/solid-verbs`).
//
// Usage: node scripts/check-doc-links.mjs [ROOT]   (default: the repository). Exit 1 on a broken link.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
const files = [
  join(root, 'README.md'),
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(root, 'docs', f)),
];

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
function anchorsOf(file) {
  const seen = new Map();
  const out = new Set();
  let fenced = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1]
      .replace(/`/g, '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

const broken = [];
let checked = 0;
for (const file of files) {
  let fenced = false;
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (/^\s*```/.test(line)) fenced = !fenced;
      if (fenced) return;
      for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const target = m[1];
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, mailto:
        const [path, anchor] = target.split('#');
        const abs = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
        const where = `${relative(root, file)}:${i + 1}`;
        checked++;
        if (!existsSync(abs)) {
          broken.push(`${where}: ${target} (no such file)`);
          continue;
        }
        if (anchor !== undefined && anchor !== '' && statSync(abs).isFile() && abs.endsWith('.md')) {
          if (!anchorsOf(abs).has(anchor.toLowerCase()))
            broken.push(`${where}: ${target} (no heading #${anchor})`);
        }
      }
    });
}
if (broken.length > 0) {
  console.error(`check-doc-links: ${broken.length} broken link(s) under ${root}:\n  ${broken.join('\n  ')}`);
  process.exit(1);
}
console.log(`check-doc-links: ${checked} links in ${files.length} files resolve under ${root}`);

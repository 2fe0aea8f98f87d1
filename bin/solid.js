#!/usr/bin/env node
// The `solid` command. Logs go to stderr (stdout carries only results, and only JSON-RPC for
// `solid mcp`).
//
// The installed package runs the built JavaScript in dist/ (`npm run build`): no TypeScript
// loader at run time. A checkout (src/ beside bin/) runs the TypeScript sources through tsx, a
// development dependency, so an edit is live without a rebuild; SOLID_RUN=dist makes a checkout
// run its build instead (the startup bench does), SOLID_RUN=src forces the sources.
import { existsSync } from 'node:fs';

console.log = (...args) => console.error(...args);
console.info = (...args) => console.error(...args);
console.debug = (...args) => console.error(...args);

const sources = new URL('../src/transports/cli/main.ts', import.meta.url);
const fromSources =
  process.env.SOLID_RUN === 'src' || (process.env.SOLID_RUN !== 'dist' && existsSync(sources));

let main;
if (fromSources) {
  const { register } = await import('tsx/esm/api');
  register();
  main = await import(sources.href);
} else {
  main = await import('../dist/transports/cli/main.js');
}
const code = await main.runCli(process.argv.slice(2), main.processIo());
process.exitCode = code;

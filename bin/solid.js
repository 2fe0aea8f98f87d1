#!/usr/bin/env node
// The `solid` command. Logs go to stderr (stdout carries only results, and only JSON-RPC for
// `solid mcp`). TypeScript sources run through tsx's loader; nothing is compiled ahead.
import { register } from 'tsx/esm/api';

console.log = (...args) => console.error(...args);
console.info = (...args) => console.error(...args);
console.debug = (...args) => console.error(...args);

register();
const { runCli, processIo } = await import('../src/transports/cli/main.ts');
const code = await runCli(process.argv.slice(2), processIo());
process.exitCode = code;

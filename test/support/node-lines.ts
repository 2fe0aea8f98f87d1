/**
 * Other Node LTS lines for the tests that need one: peers such as the official MCP conformance
 * suite and the MCP Inspector CLI require Node >= 22.19, while the suite itself may run on another
 * line. `bash scripts/node-line.sh 22` installs Node 22 from the npm registry (CI does, .ci/run).
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The Node 22 binary: SOLID_NODE22, else the CI cache of scripts/node-line.sh; undefined when absent. */
export function node22(): string | undefined {
  const given = process.env.SOLID_NODE22;
  if (given) return given;
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  const bin = join(
    cache,
    'solid-verbs-ci',
    'node22',
    'node_modules',
    `node-${process.platform}-${process.arch}`,
    'bin',
    'node',
  );
  return existsSync(bin) ? bin : undefined;
}

/** The skip message of a test that needs Node 22 and did not find it. */
export const NODE22_MISSING =
  'Node 22 is not installed: run `bash scripts/node-line.sh 22` (CI does) or set SOLID_NODE22';

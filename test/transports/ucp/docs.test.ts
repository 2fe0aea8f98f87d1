/**
 * docs/ucp.md as written: its settings example is valid `settings.ucp`, the commands it shows
 * exist with the flags it uses, and its troubleshooting table names real codes with their status.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseUcpSettings } from '../../../src/transports/ucp/ucp-config.ts';
import { UCP_ERROR_STATUS } from '../../../src/transports/ucp/ucp-error.ts';
import { buildProgram } from '../../../src/transports/cli/main.ts';
import { reasonInfo } from '../../../src/spec/reasons.ts';

const page = readFileSync(fileURLToPath(new URL('../../../docs/ucp.md', import.meta.url)), 'utf8');

test('the settings example is a valid settings.ucp', () => {
  const blocks = [...page.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!) as unknown);
  assert.ok(blocks.length >= 1);
  for (const b of blocks) parseUcpSettings(b);
});

test('every solid command and flag the page uses exists', async () => {
  const program = await buildProgram({ out: () => {}, err: () => {}, isTTY: false }, () => {});
  const lines = [...page.matchAll(/^solid ([a-z][^#\n]*?)(?:\s+#.*)?$/gm)].map((m) =>
    m[1]!.replace(/\\$/, '').trim(),
  );
  assert.ok(lines.length >= 6);
  for (const line of lines) {
    const words = line.split(/\s+/);
    let cmd = program;
    for (const w of words) {
      const next = cmd.commands.find((c) => c.name() === w);
      if (next === undefined) break;
      cmd = next;
    }
    assert.notEqual(cmd, program, line);
    for (const flag of words.filter((w) => w.startsWith('--'))) {
      assert.ok(
        cmd.options.some((o) => o.long === flag),
        `${line}: ${flag}`,
      );
    }
  }
});

test('the troubleshooting table names real codes with their status', () => {
  const rows = [...page.matchAll(/^\| `(\d{3}) ([a-z_]+)` \|/gm)];
  assert.ok(rows.length >= 10);
  for (const [, status, code] of rows) {
    const expected =
      (UCP_ERROR_STATUS as Record<string, number>)[code!] ??
      ({ capability_not_allowed: 403, consent_not_implied: 403 } as Record<string, number>)[code!] ??
      reasonInfo(code!).status;
    assert.equal(Number(status), code === 'dispatch_pending' ? 202 : expected, code);
  }
});

/**
 * docs/platform.md runs as written: every `curl … /api/v1/platform/<verb> … -d '<json>'` example
 * is sent, in the page's order, to the provisioning API of a test server with a platform key, and
 * each answers ok (`$EXPORT_ID` is the export id of the export example before it).
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { platformFixture } from '../platform/support.ts';

const page = readFileSync(new URL('../../docs/platform.md', import.meta.url), 'utf8');

/** The (verb, body) of each curl example, in order. */
function examples(): { verb: string; body: string }[] {
  const lines = page.replace(/\\\n\s*/g, ' ').split('\n');
  const out: { verb: string; body: string }[] = [];
  for (const line of lines) {
    const m = /^curl -s \$SOLID\/api\/v1\/platform\/(\S+) .*-d '(\{.*\})'$/.exec(line.trim());
    if (m) out.push({ verb: m[1]!, body: m[2]! });
  }
  return out;
}

it('every provisioning example of docs/platform.md answers ok, in order', async (t) => {
  const list = examples();
  assert.ok(list.length >= 10, `found ${list.length} examples`);
  const f = await platformFixture(t);
  let exportId = '';
  for (const { verb, body } of list) {
    const r = await f.call(verb, JSON.parse(body.replace('$EXPORT_ID', exportId)));
    assert.equal(r.env.ok, true, `${verb}: ${JSON.stringify(r.env.error)}`);
    if (verb === 'platform.tenants.export')
      exportId = String((r.env.result as { data: { export_id: string } }).data.export_id);
  }
  assert.deepEqual([...new Set(list.map((e) => e.verb))].sort(), [
    'platform.api_keys.create',
    'platform.tenants.create',
    'platform.tenants.delete',
    'platform.tenants.export',
    'platform.tenants.get',
    'platform.tenants.resume',
    'platform.tenants.suspend',
    'platform.tenants.update',
    'platform.users.invite',
  ]);
});

/**
 * The S3-compatible anchor sink (issue 30 row 11; spec/audit.md §anchors): `solid serve
 * --anchor-s3 s3://bucket/prefix` PUTs each publication as a new object through the AWS SDK's S3
 * client, and `solid audit verify --anchors s3://bucket/prefix` reads them back — so a chain
 * rewritten after its later checkpoints were deleted fails verification with the S3 sink as it
 * does with the directory one. The bucket is a small S3 stand-in written here (PUT, GET,
 * ListObjectsV2 on node:http, path-style, signatures not checked).
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Database from 'better-sqlite3';
import pino from 'pino';
import { counterRuntime, consented } from '../support/counter-verbs.ts';
import { AUDIT_COLUMNS, hashAuditRow, toAuditRow } from '../../src/runtime/ledger/write/audit.ts';
import { AnchorPublisher } from '../../src/runtime/ledger/keys/anchors.ts';
import { parseS3Location, s3Sink } from '../../src/runtime/ledger/keys/anchors-s3.ts';
import { anchorOptionsOf } from '../../src/transports/cli/commands/serve-options.ts';
import { runCli } from '../../src/transports/cli/main.ts';
import type { Io } from '../../src/transports/cli/output.ts';
import type { AuditVerifyReport } from '../../src/runtime/ledger/verify/verify.ts';
import type { TestRuntime } from '../support/runtime.ts';

const silent = pino({ level: 'silent' });

/** An in-memory S3 stand-in: objects by "bucket/key"; every request recorded as "METHOD path". */
async function fakeS3(t: TestContext): Promise<{
  endpoint: string;
  objects: Map<string, string>;
  requests: string[];
  fail: { status: number };
}> {
  const objects = new Map<string, string>();
  const requests: string[] = [];
  const fail = { status: 0 };
  const xml = (res: ServerResponse, status: number, body: string) => {
    res.writeHead(status, { 'content-type': 'application/xml' });
    res.end(`<?xml version="1.0" encoding="UTF-8"?>\n${body}`);
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://s3.local');
      requests.push(`${req.method} ${url.pathname}`);
      if (fail.status !== 0)
        return xml(res, fail.status, '<Error><Code>InternalError</Code><Message>down</Message></Error>');
      const [, bucket = '', ...rest] = url.pathname.split('/');
      const key = decodeURIComponent(rest.join('/'));
      if (req.method === 'PUT' && key !== '') {
        objects.set(`${bucket}/${key}`, Buffer.concat(chunks).toString('utf8'));
        res.writeHead(200, { etag: '"e"' });
        return res.end();
      }
      if (req.method === 'GET' && key === '' && url.searchParams.get('list-type') === '2') {
        const prefix = url.searchParams.get('prefix') ?? '';
        const keys = [...objects.keys()]
          .filter((k) => k.startsWith(`${bucket}/${prefix}`))
          .map((k) => k.slice(bucket.length + 1))
          .sort();
        return xml(
          res,
          200,
          `<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>${bucket}</Name><Prefix>${prefix}</Prefix><KeyCount>${keys.length}</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>${keys
            .map((k) => `<Contents><Key>${k}</Key><Size>1</Size></Contents>`)
            .join('')}</ListBucketResult>`,
        );
      }
      if (req.method === 'GET' && objects.has(`${bucket}/${key}`)) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(objects.get(`${bucket}/${key}`));
      }
      xml(res, 404, '<Error><Code>NoSuchKey</Code><Message>no such key</Message></Error>');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, objects, requests, fail };
}

/** The S3 settings in the environment for the CLI (restored after the test). */
function s3Env(t: TestContext, endpoint: string): NodeJS.ProcessEnv {
  const env = {
    SOLID_ANCHOR_S3_ENDPOINT: endpoint,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'test-access-key',
    AWS_SECRET_ACCESS_KEY: 'test-secret-key',
  };
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  t.after(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
  return env;
}

async function verify(h: TestRuntime, extra: string[]): Promise<{ code: number; report: AuditVerifyReport }> {
  const out: string[] = [];
  const io: Io = { out: (s) => out.push(s), err: () => {}, isTTY: false };
  const code = await runCli(['--db', h.dbPath, 'audit', 'verify', '--json', ...extra], io);
  return { code, report: JSON.parse(out.join('\n')) as AuditVerifyReport };
}

/** Edit a write after the first checkpoint, re-hash the chain, delete the later checkpoints and the receipts. */
function rewrite(h: TestRuntime): void {
  const db = new Database(h.dbPath);
  db.exec('DROP TRIGGER audit_log_no_update; DROP TRIGGER audit_log_no_delete;');
  const first = db
    .prepare('SELECT MIN(seq) AS s FROM audit_checkpoints WHERE company_id = ?')
    .get(h.companyId) as { s: number };
  const target = db
    .prepare(
      `SELECT audit_id FROM audit_log WHERE company_id = ? AND seq > ? AND action_type = 'counter.add' AND status = 'completed' ORDER BY seq DESC LIMIT 1`,
    )
    .get(h.companyId, first.s) as { audit_id: number };
  db.prepare(`UPDATE audit_log SET request_data = '{"by":900,"name":"c"}' WHERE audit_id = ?`).run(
    target.audit_id,
  );
  const rows = db
    .prepare(`SELECT ${AUDIT_COLUMNS.join(', ')} FROM audit_log WHERE company_id = ? ORDER BY seq`)
    .all(h.companyId) as Array<Record<string, unknown>>;
  let prev = '0'.repeat(64);
  for (const raw of rows) {
    const row = toAuditRow({ ...raw, prev_hash: prev });
    const hash = hashAuditRow(row);
    db.prepare('UPDATE audit_log SET prev_hash = ?, row_hash = ? WHERE audit_id = ?').run(
      prev,
      hash,
      row.audit_id,
    );
    prev = hash;
  }
  db.prepare('UPDATE tenant_heads SET audit_hash = ? WHERE company_id = ?').run(prev, h.companyId);
  db.prepare('DELETE FROM audit_checkpoints WHERE company_id = ? AND seq > ?').run(h.companyId, first.s);
  db.prepare('DELETE FROM receipts WHERE company_id = ?').run(h.companyId);
  db.close();
}

describe('S3 anchors', () => {
  it('catch a chain rewritten after its later checkpoints were deleted, read back from the bucket', async (t) => {
    const s3 = await fakeS3(t);
    const env = s3Env(t, s3.endpoint);
    let now = Date.parse('2026-03-02T09:00:00Z');
    const h = await counterRuntime(t, { engine: 'sqlite', clock: () => new Date(now) });
    for (let i = 0; i < 6; i++) {
      await consented(h, h.keys.employee, 'counter.add', { name: 'c', by: i + 1 });
      now += 150_000;
    }
    await h.rt.checkpoints.checkpointAll();
    const { sinks } = anchorOptionsOf({ anchorS3: 's3://acme-anchors/solid/acme' }, env);
    assert.deepEqual(
      sinks.map((s) => s.name),
      ['s3://acme-anchors/solid/acme/'],
    );
    const publisher = new AnchorPublisher(h.rt.store, sinks, { logger: silent });
    await publisher.publishNow();
    await h.rt.close();
    const stored = [...s3.objects.keys()];
    assert.equal(stored.length, 1);
    assert.match(stored[0]!, /^acme-anchors\/solid\/acme\/anchor-.+\.json$/);
    assert.ok(
      s3.requests.every((r) => !r.startsWith('DELETE')),
      'the sink never deletes',
    );
    assert.equal(
      (await verify(h, ['--anchors', 's3://acme-anchors/solid/acme'])).code,
      0,
      'the honest log matches its anchors in the bucket',
    );

    rewrite(h);
    const alone = await verify(h, []);
    assert.equal(alone.code, 0, 'the database alone proves nothing wrong');
    const anchored = await verify(h, ['--anchors', 's3://acme-anchors/solid/acme/']);
    assert.equal(anchored.code, 1);
    const kinds = anchored.report.tenants
      .find((x) => x.company_id === h.companyId)
      ?.findings.map((f) => f.kind);
    assert.ok(kinds?.includes('bad_signature'), String(kinds));
    assert.ok(anchored.report.warnings.some((w) => /anchor document.*s3:\/\/acme-anchors/.test(w)));
  });

  it('each publication is a new object; a failing bucket is retried on the next turn', async (t) => {
    const s3 = await fakeS3(t);
    s3Env(t, s3.endpoint);
    const h = await counterRuntime(t, { engine: 'sqlite' });
    await consented(h, h.keys.employee, 'counter.add', { name: 'c', by: 1 });
    await h.rt.checkpoints.checkpointAll();
    const warnings: string[] = [];
    const logger = { info: () => {}, warn: (_o: unknown, msg: string) => warnings.push(msg) };
    const sink = s3Sink('s3://anchors/x', { endpoint: s3.endpoint, region: 'us-east-1', timeoutMs: 5000 });
    const publisher = new AnchorPublisher(h.rt.store, [sink], { logger: logger as never });
    s3.fail.status = 500;
    await publisher.publishNow();
    assert.equal(s3.objects.size, 0);
    assert.deepEqual(warnings, ['anchors: publication failed; retried next turn']);
    s3.fail.status = 0;
    await publisher.publishNow();
    assert.equal(s3.objects.size, 1);
    await consented(h, h.keys.employee, 'counter.add', { name: 'c', by: 2 });
    await h.rt.checkpoints.checkpointAll();
    await publisher.publishNow();
    assert.equal(s3.objects.size, 2, 'a new head is a new object; the first is left as it was');
  });

  it('a location that is not s3://bucket/prefix or a bad endpoint is refused with an envelope', () => {
    const refused = (e: { reason?: string; hint?: string }) =>
      e.reason === 'invalid_args' && typeof e.hint === 'string';
    assert.throws(() => anchorOptionsOf({ anchorS3: 'https://bucket/x' }, {}), refused);
    assert.throws(() => anchorOptionsOf({ anchorS3: 's3://Bad_Bucket/x' }, {}), refused);
    assert.throws(
      () => anchorOptionsOf({ anchorS3: 's3://ok-bucket' }, { SOLID_ANCHOR_S3_ENDPOINT: 'ftp://x' }),
      refused,
    );
    assert.deepEqual(parseS3Location('s3://ok-bucket'), { bucket: 'ok-bucket', prefix: '' });
    assert.equal(
      anchorOptionsOf({}, { SOLID_ANCHOR_S3: 's3://ok-bucket/p' }).sinks[0]!.name,
      's3://ok-bucket/p/',
    );
  });
});

/**
 * FrameGuard and recoverFrameId (src/transports/mcp/stdio-frame-guard.ts): lines up to the limit
 * pass whole whatever the chunking; a longer frame is dropped up to its newline, reported once,
 * and the next line passes; an id is read back only when certain.
 * Spec: spec/transports.md §mcp-stdio.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_BODY_LIMIT_BYTES } from '../../../src/transports/http/server.ts';
import {
  DEFAULT_STDIO_FRAME_BYTES,
  FrameGuard,
  MAX_STDIO_FRAME_BYTES,
  recoverFrameId,
  type OversizeFrame,
} from '../../../src/transports/mcp/stdio-frame-guard.ts';

function run(limit: number, chunks: string[]): { lines: string[]; refused: OversizeFrame[] } {
  const lines: string[] = [];
  const refused: OversizeFrame[] = [];
  const g = new FrameGuard({
    maxFrameBytes: limit,
    onLine: (l) => lines.push(l.toString('utf8')),
    onOversize: (f) => refused.push(f),
  });
  for (const c of chunks) g.push(Buffer.from(c, 'utf8'));
  return { lines, refused };
}

test("the default frame limit is HTTP's body limit (1 MiB); a configured one is capped at 10 MiB (the SDK buffer)", () => {
  assert.equal(MAX_STDIO_FRAME_BYTES, 10 * 1024 * 1024);
  assert.equal(DEFAULT_STDIO_FRAME_BYTES, DEFAULT_BODY_LIMIT_BYTES);
  const noop = { onLine: () => {}, onOversize: () => {} };
  assert.equal(new FrameGuard(noop).maxFrameBytes, 1024 * 1024);
  assert.equal(
    new FrameGuard({ ...noop, maxFrameBytes: 64 * 1024 * 1024 }).maxFrameBytes,
    MAX_STDIO_FRAME_BYTES,
  );
});

test('lines up to the limit pass whole, however the stream is chunked; CRLF does not count', () => {
  const text = '{"id":1}\n12345678\r\n{"a":22}\n';
  const whole = run(8, [text]);
  assert.deepEqual(whole.lines, ['{"id":1}\n', '12345678\r\n', '{"a":22}\n']);
  assert.deepEqual(whole.refused, []);
  for (let cut = 1; cut < text.length; cut++) {
    const split = run(8, [text.slice(0, cut), text.slice(cut)]);
    assert.deepEqual(split.lines, whole.lines, `cut at ${cut}`);
    assert.deepEqual(split.refused, []);
  }
  const bytewise = run(8, [...text]);
  assert.deepEqual(bytewise.lines, whole.lines);
});

test('a frame over the limit is dropped up to its newline, reported once with its id, and the next line passes', () => {
  const big = `{"jsonrpc":"2.0","id":7,"method":"x","params":{"pad":"${'x'.repeat(100)}"}}`;
  const r = run(64, [big.slice(0, 30), big.slice(30, 90), big.slice(90) + '\n{"id":8}\n']);
  assert.deepEqual(r.lines, ['{"id":8}\n']);
  assert.equal(r.refused.length, 1);
  assert.equal(r.refused[0]!.id, 7);
  assert.equal(r.refused[0]!.limitBytes, 64);
  assert.ok(r.refused[0]!.bytesSeen > 64);
  const oneChunk = run(64, [`${big}\n{"id":8}\n`]);
  assert.deepEqual(oneChunk.lines, ['{"id":8}\n']);
  assert.equal(oneChunk.refused.length, 1);
  const noNewlineYet = run(64, [big]);
  assert.deepEqual(noNewlineYet.lines, []);
  assert.equal(noNewlineYet.refused.length, 1, 'reported when it crosses the limit');
});

test('recoverFrameId reads a top-level id only when certain', () => {
  assert.equal(recoverFrameId('{"jsonrpc":"2.0","id":7,"method":"tools/call"'), 7);
  assert.equal(recoverFrameId(' { "id" : "a\\"b" , "x'), 'a"b');
  assert.equal(recoverFrameId('{"params":{"id":3,"x":[1,{"y":"}"}]},"id":4,'), 4, 'nested ids are skipped');
  assert.equal(
    recoverFrameId('{"jsonrpc":"2.0","method":"x","params":{"pad":"xxxx'),
    null,
    'id after the head',
  );
  assert.equal(recoverFrameId('{"jsonrpc":"2.0","id":12'), null, 'a number cut by the end of the head');
  assert.equal(recoverFrameId('{"id":1.5,'), null);
  assert.equal(recoverFrameId('{"id":null,'), null);
  assert.equal(recoverFrameId('{"id":{"a":1},'), null);
  assert.equal(recoverFrameId('[{"id":1}]'), null);
  assert.equal(recoverFrameId('{id:1,'), null);
  assert.equal(recoverFrameId('{"a":tru,"id":1,'), null, 'not JSON before the id');
});

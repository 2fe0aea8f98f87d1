/**
 * Hostile servers for the conformance kit's own tests: tiny node:http servers on ephemeral ports
 * that answer every request the same wrong way (HTML, a body larger than the kit's limit, a
 * compression bomb, terminal escape sequences, never), and a port that refuses connections.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { gzipSync } from 'node:zlib';

export type Hostility = 'html404' | 'huge' | 'gzip-bomb' | 'escapes' | 'silent';

/** 64 MiB of zeros, gzipped once (about 64 KiB on the wire). */
let bomb: Buffer | undefined;

function answer(mode: Hostility, res: ServerResponse): void {
  switch (mode) {
    case 'html404':
      res.writeHead(404, { 'content-type': 'text/html' }).end('<html><body>Not Found</body></html>');
      return;
    case 'huge': {
      // 8 MiB streamed without a content-length, so only counting the bytes read can stop it.
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      let left = 128;
      const write = (): void => {
        while (left > 0) {
          left--;
          if (!res.write(chunk)) return void res.once('drain', write);
        }
        res.end();
      };
      res.on('close', () => (left = 0));
      write();
      return;
    }
    case 'gzip-bomb':
      bomb ??= gzipSync(Buffer.alloc(64 * 1024 * 1024));
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(bomb);
      return;
    case 'escapes':
      res
        .writeHead(200, { 'content-type': 'text/plain' })
        .end('\u001b[2J\u001b[32mPASS\u001b[0m\r\n  PASS  manifest.list  forged line\u0007');
      return;
    case 'silent':
      return; // never answers; closed with the server
  }
}

/** A server answering every request as `mode`; closed in t.after. Returns its base URL. */
export async function startHostileServer(t: TestContext, mode: Hostility): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    answer(mode, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A loopback port nothing listens on (bound, then closed). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

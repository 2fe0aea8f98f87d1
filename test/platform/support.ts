/** The platform tests' fixture: a test runtime with the provisioning and WebMCP (enrolment) mounts and a platform key. */
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { Envelope } from '../../src/spec/types.ts';
import { createHttpServer } from '../../src/transports/http/server.ts';
import { createWebmcpPlugin } from '../../src/transports/webmcp/index.ts';
import { platformPlugin } from '../../src/platform/plugin.ts';
import { createPlatformKey } from '../../src/platform/platform-keys.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

export interface PlatformFixture {
  h: TestRuntime;
  app: FastifyInstance;
  key: string;
  call(verb: string, args: unknown, key?: string): Promise<{ status: number; env: Envelope }>;
}

/** A test runtime with the platform mount and the WebMCP mount (enrolment routes), and one platform key. */
export async function platformFixture(t: TestContext): Promise<PlatformFixture> {
  const h = await createTestRuntime(t);
  const app = createHttpServer(h.rt, { logger: false, plugins: [platformPlugin, createWebmcpPlugin()] });
  await app.ready();
  t.after(() => app.close());
  const { key } = await createPlatformKey(h.rt.store, 'test-backend', h.rt.clock());
  return {
    h,
    app,
    key,
    async call(verb, args, k = key) {
      const res = await app.inject({
        method: 'POST',
        url: `/api/v1/platform/${verb}`,
        headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' },
        payload: JSON.stringify(args),
      });
      return { status: res.statusCode, env: res.json() as Envelope };
    },
  };
}

/**
 * The HTTP transport: public entry points. createHttpServer builds the Fastify instance other
 * transports mount on (options.plugins); solidVerbsPlugin mounts the same on your own Fastify app
 * under a prefix; startServer listens standalone; envelopeToHttp is the one envelope → HTTP mapping.
 * Spec: spec/transports.md §http.
 */
export {
  createHttpServer,
  DEFAULT_BODY_LIMIT_BYTES,
  type HttpServerOptions,
  type HttpPlugin,
  type HttpPluginOptions,
} from './server.ts';
export {
  solidVerbsPlugin,
  startServer,
  type SolidVerbsPluginOptions,
  type SolidMount,
  type StartServerOptions,
  type RunningServer,
} from './plugin.ts';
export { envelopeToHttp, type HttpAnswer } from './envelope-map.ts';
export { buildOpenApi, reasonStatusTable } from './openapi.ts';
export { HTTP_MOUNTS, loadHttpMounts, type HttpMount } from './http-mounts.ts';

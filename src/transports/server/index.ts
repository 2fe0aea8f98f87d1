/**
 * The composed server (`solid-verbs/http`): public entry points. createHttpServer (the HTTP core)
 * builds the Fastify instance the transports mount on (options.plugins); http-mounts.ts names the
 * transports `solid serve` mounts; solidVerbsPlugin mounts the same on your own Fastify app
 * under a prefix; startServer listens standalone; envelopeToHttp is the one envelope → HTTP mapping.
 * Spec: spec/transports.md §http.
 */
export {
  createHttpServer,
  DEFAULT_BODY_LIMIT_BYTES,
  type HttpServerOptions,
  type HttpPlugin,
  type HttpPluginOptions,
} from '../http/server.ts';
export {
  solidVerbsPlugin,
  startServer,
  type SolidVerbsPluginOptions,
  type SolidMount,
  type StartServerOptions,
  type RunningServer,
} from './plugin.ts';
export { envelopeToHttp, type HttpAnswer } from '../http/envelope-map.ts';
export { buildOpenApi, reasonStatusTable } from '../http/openapi.ts';
export { HTTP_MOUNTS, loadHttpMounts, type HttpMount } from './http-mounts.ts';

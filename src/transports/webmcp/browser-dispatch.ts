/**
 * The last step of every browser verb call (WebMCP execute and dashboard dispatch): one
 * `rt.dispatch` with the caller the route built, the body's input and options (plus an
 * `Idempotency-Key` header when the body has no `idempotency_key`), cancelled when the browser
 * drops the connection, answered through the HTTP transport's envelope map.
 *
 * Spec: spec/transports.md §webmcp-execute.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../../runtime/core.ts';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import { sendEnvelope } from '../http/error-handler.ts';
import type { CallBody } from './call-body.ts';

/** Dispatch and send the envelope (status from envelopeToHttp). */
export async function dispatchAndReply(
  rt: Runtime,
  request: FastifyRequest,
  reply: FastifyReply,
  caller: Omit<Caller, 'signal'>,
  name: string,
  body: CallBody,
): Promise<FastifyReply> {
  const options = { ...body.options };
  const header = request.headers['idempotency-key'];
  if (options.idempotency_key === undefined && typeof header === 'string' && header !== '')
    options.idempotency_key = header;
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort(new Error('the browser closed the connection'));
  });
  const envelope = await rt.dispatch({ ...caller, signal: controller.signal }, name, body.input, options);
  return sendEnvelope(reply, envelope, rt.clock().getTime(), rt.registry.reasons);
}

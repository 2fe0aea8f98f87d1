/**
 * What src/identity reaches of the runtime: the store, tenants and keys, secrets, the clock, the
 * logger, the refusal rows and the sandbox. Identity sits above the runtime and below every
 * transport, so it names the runtime itself, never a transport's view of it.
 */
import type { Runtime } from '../runtime/runtime.ts';

export type IdentityRuntime = Pick<
  Runtime,
  | 'store'
  | 'logger'
  | 'clock'
  | 'tenants'
  | 'keys'
  | 'secrets'
  | 'sandboxPrincipal'
  | 'recordRefusal'
  | 'afterWrite'
  | 'options'
>;

/**
 * A call as a transport that read an API key makes it: the key is authenticated through
 * src/identity (api-key-auth.ts `dispatchWithKey`: a bad key is the audited auth_invalid), then the
 * caller, without the key, is dispatched. The runtime itself never sees a key.
 */
import type { Caller, DispatchOptions } from '../../src/runtime/core.ts';
import type { Envelope } from '../../src/spec/types.ts';
import { dispatchWithKey, type KeyDispatchRuntime } from '../../src/identity/api-key-auth.ts';

/** `caller` with the raw API key a transport would have read (null/undefined: none presented). */
export type KeyedCaller = Caller & { apiKey?: string | null };

/** Dispatch `verb` as the holder of `caller.apiKey` (see the module comment). */
export function dispatchAs(
  rt: KeyDispatchRuntime,
  { apiKey, ...caller }: KeyedCaller,
  verb: string,
  args?: unknown,
  options?: DispatchOptions,
): Promise<Envelope> {
  return dispatchWithKey(rt, caller, apiKey, verb, args, options);
}

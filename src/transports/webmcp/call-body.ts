/**
 * The JSON body of a browser verb call, shared by `POST /api/v1/webmcp/execute/{tool_name}` (with a
 * `surface`) and `POST /api/v1/dashboard/dispatch/{verb}` (without):
 *
 *   { input?: object, surface: "dashboard"|"portal"|"developer"|"tenant-site"|"public",
 *     confirm?: boolean, nonce?: string, typed_phrase?: string, idempotency_key?: string }
 *
 * The dashboard route (no `surface`) also takes `args` for `input` (the agent API's name for the
 * same thing, so a caller moving between the two APIs is not refused for the word); both at once
 * are refused. WebMCP execute keeps the WebMCP word, `input`, only.
 *
 * Only the envelope around the verb's input is checked here; the input itself is validated by
 * dispatch (invalid_input with a JSON Pointer). Unknown members are refused so a misspelt
 * `typed_phrase` cannot silently turn a confirmation into a new preflight.
 *
 * Spec: spec/transports.md §webmcp-execute.
 */
import { VerbError } from '../../runtime/errors.ts';
import type { DispatchOptions } from '../../runtime/core.ts';
import { WEBMCP_SURFACES, type WebmcpSurface } from '../../spec/types.ts';
import { isWebmcpSurface } from './manifest.ts';

/** A checked call body. */
export interface CallBody {
  input: unknown;
  surface?: WebmcpSurface;
  options: DispatchOptions;
}

const OPTION_FIELDS = ['nonce', 'typed_phrase', 'idempotency_key'] as const;

function badBody(message: string, withSurface: boolean): VerbError {
  const surface = withSurface ? `, "surface": "${WEBMCP_SURFACES.join('|')}"` : '';
  return new VerbError('invalid_request', message, {
    hint: `POST a JSON object {"input": {…}${surface}}; to confirm a pending call add "confirm": true, "nonce" and, for typed-phrase verbs, "typed_phrase".`,
  });
}

/**
 * Check a call body (see the header).
 * @throws VerbError invalid_request naming the offending member
 */
export function parseCallBody(body: unknown, opts: { surface: true }): CallBody & { surface: WebmcpSurface };
export function parseCallBody(body: unknown, opts: { surface: false }): CallBody;
export function parseCallBody(body: unknown, opts: { surface: boolean }): CallBody {
  if (body === null || body === undefined || typeof body !== 'object' || Array.isArray(body))
    throw badBody('The body must be a JSON object.', opts.surface);
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) {
    const known =
      key === 'input' ||
      (!opts.surface && key === 'args') ||
      key === 'confirm' ||
      (OPTION_FIELDS as readonly string[]).includes(key) ||
      (opts.surface && key === 'surface');
    if (!known) throw badBody(`Unknown member "${key.slice(0, 50)}" in the body.`, opts.surface);
  }
  if (b.input !== undefined && b.args !== undefined)
    throw badBody('Pass the arguments as either "input" or "args", not both.', opts.surface);
  const out: CallBody = { input: b.input ?? b.args, options: {} };
  if (opts.surface) {
    if (!isWebmcpSurface(b.surface))
      throw badBody(`"surface" must be one of ${WEBMCP_SURFACES.join(', ')}.`, true);
    out.surface = b.surface;
  }
  if (b.confirm !== undefined) {
    if (typeof b.confirm !== 'boolean') throw badBody('"confirm" must be a boolean.', opts.surface);
    out.options.confirm = b.confirm;
  }
  for (const key of OPTION_FIELDS) {
    const v = b[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string') throw badBody(`"${key}" must be a string.`, opts.surface);
    out.options[key] = v;
  }
  return out;
}

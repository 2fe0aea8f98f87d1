/**
 * `defineBusinessVerb`: `defineVerb` for the demo pack's verbs. It translates the data layer's
 * DomainError (data/domain-error.ts) into the runtime's VerbError with the same reason code,
 * message and hint, in the handler and in the revert handler, so every domain refusal reaches
 * the envelope as a clear reason (`not_found`, `already_paid`, `double_booked`…) instead of an
 * internal_error. Nothing else changes: the definition is returned as given otherwise.
 *
 * Spec: spec/envelope.md §error, spec/reasons.md §domain.
 */
import { VerbError } from '../../runtime/errors.ts';
import type { VerbDefinition } from '../../runtime/verb.ts';
import { isDomainError, type DomainErrorCode } from '../data/domain-error.ts';
import { isCoreReason, packReason } from '../../spec/reasons.ts';

/**
 * The hint of a DomainError thrown without one, per code: every refusal's envelope carries a
 * next step (spec/envelope.md §error). A code not listed gets {@link GENERIC_DOMAIN_HINT}.
 */
export const DOMAIN_FALLBACK_HINTS: Partial<Record<DomainErrorCode, string>> = {
  no_change:
    "Nothing was changed: the value asked for is already the current one. Read the current state (the verb's preview, or a get/search verb) and call again only with a different value.",
};

/** The hint of a DomainError with neither its own hint nor one in {@link DOMAIN_FALLBACK_HINTS}. */
export const GENERIC_DOMAIN_HINT =
  'Nothing was written. Read the current state of the entity (a get, search or preview verb), then call again with arguments that fit it.';

/**
 * A DomainError as a VerbError (reason = its code, the same message; its hint, else the code's
 * fallback hint, so the envelope always has one); anything else is returned unchanged.
 */
export function toVerbError(err: unknown): unknown {
  if (!isDomainError(err)) return err;
  const path =
    err.code === 'invalid_input'
      ? `/${err.message
          .split(':')[0]!
          .replace(/\[(\d+)\]/g, '/$1')
          .replace(/\./g, '/')}`
      : undefined;
  const reason = isCoreReason(err.code) ? err.code : packReason(err.code);
  return new VerbError(reason, err.message, {
    hint: err.hint ?? DOMAIN_FALLBACK_HINTS[err.code] ?? GENERIC_DOMAIN_HINT,
    ...(path !== undefined ? { path } : {}),
    cause: err,
  });
}

/** Define a pack verb whose handler (and revert handler) report DomainErrors as VerbErrors. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- untyped by default, as defineVerb
export function defineBusinessVerb<A = any, R = any>(definition: VerbDefinition<A, R>): VerbDefinition<A, R> {
  const { handler, revert } = definition;
  const wrapped: VerbDefinition<A, R> = {
    ...definition,
    async handler(ctx, args) {
      try {
        return await handler(ctx, args);
      } catch (err) {
        throw toVerbError(err);
      }
    },
  };
  if (revert !== undefined) {
    wrapped.revert = {
      ...revert,
      async handler(ctx, original) {
        try {
          return await revert.handler(ctx, original);
        } catch (err) {
          throw toVerbError(err);
        }
      },
    };
  }
  return wrapped;
}

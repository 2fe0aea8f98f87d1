/**
 * The one predicate that decides every human/agent question: may this principal perform this
 * consent act under this tenant's settings? The consent step (typed phrases, confirmations),
 * the approvals verbs, the tenant-settings verbs and the session routes all ask it, and nothing
 * else decides whether a caller counts as a human.
 *
 *   act                       human   agent
 *   type_phrase               yes     only when the tenant's phrase_channel is `any` (default `human`)
 *   confirm                   yes     unless the tenant's confirmation_channel is `human` (default `any`)
 *   approve (and reject)      yes     never
 *   change_consent_settings   yes     never
 *   open_session              yes     never   (the operator's terminal opens none: a web
 *                                               session comes only from a sign-in)
 *
 * A missing principal (the keyless sandbox) is an agent. Role floors are checked elsewhere
 * (the floors step); this predicate only answers "is a human there, or does the owner allow an
 * agent to do this?". Spec: spec/consent.md §channels.
 */
import type { Principal } from '../spec/types.ts';

/** The acts the predicate decides. */
export const CONSENT_ACTS = [
  'type_phrase',
  'confirm',
  'approve',
  'change_consent_settings',
  'open_session',
] as const;
export type ConsentAct = (typeof CONSENT_ACTS)[number];

/** The values of the tenant settings `phrase_channel` and `confirmation_channel`. */
export const CHANNEL_SETTINGS = ['any', 'human'] as const;
export type ChannelSetting = (typeof CHANNEL_SETTINGS)[number];

/** The tenant settings the predicate reads (stored values; anything unknown reads as the default). */
export interface ConsentSettings {
  /** Who may type a phrase that counts: `human` (default) or `any` (an explicit owner choice). */
  phrase_channel?: unknown;
  /** Who may confirm a confirmation-click gate: `any` (default) or `human`. */
  confirmation_channel?: unknown;
}

/** The effective `phrase_channel`: `any` only when the owner stored exactly `any`; default `human`. */
export function phraseChannelOf(settings: ConsentSettings | undefined): ChannelSetting {
  return settings?.phrase_channel === 'any' ? 'any' : 'human';
}

/** The effective `confirmation_channel`: `human` only when stored exactly so; default `any`. */
export function confirmationChannelOf(settings: ConsentSettings | undefined): ChannelSetting {
  return settings?.confirmation_channel === 'human' ? 'human' : 'any';
}

/**
 * May `principal` perform `act` under `settings`? See the table in the header.
 * @param principal the authenticated principal (null/undefined → the sandbox, an agent)
 * @param settings the tenant's stored settings (or the effective values)
 */
export function mayConsent(
  principal: Principal | null | undefined,
  act: ConsentAct,
  settings: ConsentSettings | undefined,
): boolean {
  if (principal?.actor === 'human' && principal.sandbox !== true)
    return act !== 'open_session' || principal.consent_channel !== 'operator_terminal';
  switch (act) {
    case 'type_phrase':
      return phraseChannelOf(settings) === 'any';
    case 'confirm':
      return confirmationChannelOf(settings) === 'any';
    case 'approve':
    case 'change_consent_settings':
    case 'open_session':
      return false;
  }
}

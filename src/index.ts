/**
 * solid-verbs: public entry. createRuntime, defineVerb, the validators, the store engines and the
 * public types. Nothing else is exported.
 */
export { createRuntime, Runtime } from './runtime/runtime.ts';
export type { RuntimeOptions } from './runtime/options.ts';
export type { OutboxHandler } from './runtime/core.ts';
export { DEFAULT_DAILY_CAPS } from './runtime/consent/daily-caps.ts';
export {
  defineVerb,
  type VerbDefinition,
  type VerbContext,
  type CompiledVerb,
  type OriginalAction,
  type RevertDefinition,
  type EmittedEvent,
} from './runtime/verb.ts';
export { Registry, RegistrationError, toToolName } from './runtime/registry.ts';
export {
  definePack,
  checkPacks,
  installPack,
  PackError,
  type Pack,
  type SeedOptions,
  type CheckPacksOptions,
} from './runtime/pack.ts';
export { VerbError } from './runtime/errors.ts';
export { refuse, packRefusals, type PackRefusals } from './runtime/refusals.ts';
export { Secrets, loadSecrets } from './runtime/secrets.ts';
export { formatCents } from './runtime/consent/typed-phrase.ts';
export { verifyReceipt, type ReceiptVerification } from './runtime/ledger/keys/receipts.ts';
export { type Caller, type DispatchOptions } from './runtime/core.ts';
// Dispatching as the holder of an API key, as every transport does (the key resolves in identity).
export { dispatchWithKey } from './identity/api-key-auth.ts';
export { DEFAULT_BLOCKLIST } from './runtime/consent/blocklist.ts';
export { PIPELINE_STEPS } from './runtime/dispatch.ts';
export { systemVerbs } from './verbs/index.ts';
export {
  validateVerbRecord,
  validateEnvelope,
  validateShapeOutput,
  verbRecordSchema,
  envelopeSchema,
  shapeSchemas,
} from './spec/validators.ts';
export {
  REASONS,
  reasonInfo,
  defineReasons,
  packReason,
  isCoreReason,
  ReasonTable,
  type Reason,
  type CoreReason,
  type PackReason,
  type PackReasonSpec,
  type PackReasonKind,
} from './spec/reasons.ts';
export { readVaultSecret, listVaultSecrets, type VaultEntry } from './runtime/vault/vault.ts';
export {
  paymentsConnectorPack,
  providerIdempotencyKey,
  type PaymentsConnectorOptions,
} from './connectors/payments/pack.ts';
export {
  postToProvider,
  ProviderUnavailable,
  type ProviderAnswer,
} from './connectors/payments/provider-client.ts';
export {
  startSandboxProvider,
  type SandboxProvider,
  type SandboxCharge,
  type ProviderFault,
} from './connectors/payments/sandbox-provider.ts';
export * from './spec/types.ts';
export { SqliteStore, type SqliteStoreOptions } from './store/sqlite/sqlite-store.ts';
export { portableMigration, renderMigration } from './store/migrations/render.ts';
export {
  StoreError,
  parseJson,
  type Store,
  type StoreTx,
  type Queryable,
  type Migration,
} from './store/store.ts';

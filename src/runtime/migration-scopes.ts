/**
 * The runtime's own migration scopes, in the order `createRuntime` applies them: the core tables
 * (`runtime`), the outbox delivery loop (`delivery`), audit retention (`retention`), platform
 * provisioning (`platform`) and the credential vault (`vault`). Each scope numbers its versions on its own, so rooms add tables
 * without renumbering another's (spec/store.md §interface). Pack migrations and mounts with
 * tables of their own (OAuth) run theirs where they are installed.
 */
import type { Migration } from '../store/store.ts';
import { runtimeMigrations } from '../store/migrations/runtime.ts';
import { platformMigrations } from '../store/migrations/platform.ts';
import { deliveryMigrations } from './delivery/migrations.ts';
import { retentionMigrations } from './ledger/retention/migrations.ts';
import { vaultMigrations } from './vault/migrations.ts';

export const RUNTIME_MIGRATION_SCOPES: ReadonlyArray<
  readonly [scope: string, migrations: readonly Migration[]]
> = [
  ['runtime', runtimeMigrations],
  ['delivery', deliveryMigrations],
  ['retention', retentionMigrations],
  ['platform', platformMigrations],
  ['vault', vaultMigrations],
];

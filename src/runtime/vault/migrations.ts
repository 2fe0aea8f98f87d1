/**
 * Migration scope `vault`: the tenants' credentials for third-party APIs (src/runtime/vault/vault.ts).
 *
 * One row per tenant and name. `secret_enc` is the secret sealed with the master key's `vault`
 * key (Secrets.sealFor, AES-256-GCM, aad = `vault/<company_id>/<name>/<version>`), emptied when
 * the secret is revoked; `hint` is at most its last 4 characters (what a listing shows);
 * `version` counts sets and rotations (a rotation makes a new ciphertext under a new aad).
 *
 * Spec: spec/vault.md.
 */
import type { Migration } from '../../store/store.ts';
import { portableMigration } from '../../store/migrations/render.ts';

const VAULT_V1 = `
CREATE TABLE vault_secrets (
  company_id {bigint} NOT NULL,
  name TEXT NOT NULL,
  secret_enc TEXT NOT NULL,
  hint TEXT NOT NULL,
  version INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  rotated_at TEXT,
  revoked_at TEXT,
  PRIMARY KEY (company_id, name)
);
`;

export const vaultMigrations: readonly Migration[] = [portableMigration(1, 'vault secrets', VAULT_V1)];

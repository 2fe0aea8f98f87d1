/**
 * The OAuth tables (migration scope "oauth", applied when the OAuth mount starts; both engines):
 *
 *   oauth_models  what the authorization server (oidc-provider) stores through its adapter
 *                 (adapter.ts): clients, authorization codes, access and refresh tokens,
 *                 interactions, sessions, grants — one row per (model, id), the payload as JSON,
 *                 with the columns the adapter looks up by (grant_id, uid, user_code), the expiry
 *                 (epoch ms) and the time a one-use model was consumed
 *   oauth_grants  our grant objects (grants.ts): which human of which tenant let which client
 *                 act, up to which role, read-only or not, which toolsets or verbs (scope,
 *                 v2), until when; revoked_at once revoked
 *
 * A scope of its own so its versions never collide with the runtime scope's. spec/oauth.md §storage
 */
import type { Migration } from '../store/store.ts';
import { portableMigration } from '../store/migrations/render.ts';

const OAUTH_V1 = `
CREATE TABLE oauth_models (
  model TEXT NOT NULL,
  id TEXT NOT NULL,
  payload TEXT NOT NULL,
  grant_id TEXT,
  uid TEXT,
  user_code TEXT,
  expires_at {bigint},
  consumed_at {bigint},
  PRIMARY KEY (model, id)
);
CREATE INDEX oauth_models_grant ON oauth_models(grant_id);
CREATE INDEX oauth_models_uid ON oauth_models(model, uid);
CREATE INDEX oauth_models_expires ON oauth_models(expires_at);
CREATE TABLE oauth_grants (
  grant_id TEXT PRIMARY KEY,
  company_id {bigint} NOT NULL,
  user_id {bigint} NOT NULL,
  user_name TEXT NOT NULL,
  client_id TEXT NOT NULL,
  client_name TEXT NOT NULL,
  role TEXT NOT NULL,
  read_only INTEGER NOT NULL,
  resource TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  revoked_at TEXT,
  last_used_at TEXT
);
CREATE INDEX oauth_grants_company ON oauth_grants(company_id, created_at);
`;

/** v2: a grant's allow-list (JSON {verbs?, toolsets?}; NULL = the role's whole reach). */
const OAUTH_V2 = `
ALTER TABLE oauth_grants ADD COLUMN scope TEXT;
`;

/** The OAuth migrations, scope `oauth`. */
export const oauthMigrations: readonly Migration[] = [
  portableMigration(1, 'oauth models and grants', OAUTH_V1),
  portableMigration(2, 'oauth grant allow-lists', OAUTH_V2),
];

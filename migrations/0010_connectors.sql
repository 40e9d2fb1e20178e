-- Connectors (issue 14; docs/connectors.md). Providers are operator configuration
-- (CONNECTORS_PROVIDERS); categories, the connections listing and started authorizations live here.
-- Tokens never do: each connection's tokens are sealed in its own ConnectorConnection object.

-- Provider categories, served by GET /api/connectors/providers when the store is configured.
-- Seeded with defaults; an operator edits them with `wrangler d1 execute`.
CREATE TABLE IF NOT EXISTS connector_categories (
  id TEXT PRIMARY KEY,
  display_name TEXT NOT NULL,
  sort_order INTEGER NOT NULL
);

INSERT OR IGNORE INTO connector_categories (id, display_name, sort_order) VALUES
  ('communication', 'Communication', 10),
  ('productivity', 'Productivity', 20),
  ('developer_tools', 'Developer tools', 30),
  ('files', 'Files and documents', 40),
  ('crm', 'CRM and sales', 50),
  ('other', 'Other', 1000);

-- The connections listing (no tokens): who owns each connection, its provider and sub-services,
-- and the scopes its tokens were granted.
CREATE TABLE IF NOT EXISTS connector_connections (
  connection_id TEXT PRIMARY KEY,
  owner_user_id TEXT NOT NULL,
  provider_id TEXT NOT NULL,
  sub_services TEXT NOT NULL,
  scopes TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS connector_connections_owner ON connector_connections (owner_user_id, created_at);

-- Started authorizations, one per `state` (only its SHA-256 is kept). The PKCE verifier is sealed
-- under the encryption key like the tokens. Single use (completion deletes the row); expired rows
-- are pruned at each start and by the cron pass.
CREATE TABLE IF NOT EXISTS connector_oauth_starts (
  state_hash TEXT PRIMARY KEY,
  purpose TEXT NOT NULL,
  connection_id TEXT,
  initiator_user_id TEXT NOT NULL,
  provider_id TEXT NOT NULL,
  sub_services TEXT NOT NULL,
  redirect_uri TEXT NOT NULL,
  sealed_verifier TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS connector_oauth_starts_expiry ON connector_oauth_starts (expires_at);
CREATE INDEX IF NOT EXISTS connector_oauth_starts_initiator ON connector_oauth_starts (initiator_user_id, created_at);

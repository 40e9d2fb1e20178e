-- MCP servers as tool sources, API tools, MCP secret env values and sub-MCP endpoints (issue 19;
-- docs/mcp.md, docs/manifest.md).

-- A remote MCP server (Streamable HTTP) declared with POST /api/mcp-config/entries. `spec` is JSON
-- {config: {type, url, headers}, include, exclude, timeout_seconds}; header values are literals,
-- {"env": "VAR"} or {"connection": id} references, never a resolved secret. The listing state
-- rides on the row: a (re)declaration bumps `revision` and resets `status` to pending, and a
-- listing writes its outcome only while the revision it listed is still the row's, so a listing
-- that finished after a newer declaration never overwrites it.
CREATE TABLE mcp_servers (
  title       TEXT PRIMARY KEY,
  description TEXT NOT NULL DEFAULT '',
  spec        TEXT NOT NULL,
  revision    TEXT NOT NULL,
  status      TEXT NOT NULL DEFAULT 'pending',   -- pending | ok | failed | deregistered
  last_error  TEXT,                              -- a label and a status or code, never server text or a secret
  skipped     TEXT NOT NULL DEFAULT '[]',        -- JSON [{name, reason}] of remote tools not registered
  server_info TEXT,                              -- JSON {name, version} the server announced
  checked_at  TEXT,                              -- when the last listing ended
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL
);

-- The tools a server's last good listing registered, as `<server>.<name>`. Dropped with the server,
-- replaced whole by each good listing; a failed listing keeps them.
CREATE TABLE mcp_tools (
  server        TEXT NOT NULL REFERENCES mcp_servers(title) ON DELETE CASCADE,
  name          TEXT NOT NULL,          -- the server's own tool name
  description   TEXT NOT NULL DEFAULT '',
  input_schema  TEXT NOT NULL,          -- JSON Schema (the tool's inputSchema)
  output_schema TEXT,                   -- JSON Schema (outputSchema) or NULL
  PRIMARY KEY (server, name)
);

-- Secret values written with POST /api/mcp-config/secret-env, sealed with SETTINGS_ENCRYPTION_KEY.
-- An MCP server's {"env": "NAME"} header resolves here first, then in the Worker's env.
CREATE TABLE mcp_secret_env (
  name       TEXT PRIMARY KEY,
  sealed     TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

-- HTTP tools made from an OpenAPI operation (POST /api/api-tools). `spec` is JSON
-- {method, url, parameters, body, headers, input_schema, timeout_seconds, operation_id}.
CREATE TABLE api_tools (
  title       TEXT PRIMARY KEY,
  description TEXT NOT NULL DEFAULT '',
  spec        TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL
);

-- Sub-MCP endpoints (POST /api/sub-mcp): a chosen subset of the registry served as an MCP server at
-- /api/sub-mcp/{slug}/mcp. `tools` is a JSON array of tool names.
CREATE TABLE sub_mcp_apps (
  slug       TEXT PRIMARY KEY,
  tools      TEXT NOT NULL,
  transport  TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

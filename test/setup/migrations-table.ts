/**
 * wrangler's default D1 migrations table (wrangler.toml sets no `migrations_table`), as both
 * `wrangler d1 migrations apply` and vitest-pool-workers' `applyD1Migrations` create it. The
 * workers tests' per-file reset and the e2e servers' migrated template each write it themselves,
 * with the migrations, in one step.
 */
export const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS d1_migrations(
		id         INTEGER PRIMARY KEY AUTOINCREMENT,
		name       TEXT UNIQUE,
		applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
);`;

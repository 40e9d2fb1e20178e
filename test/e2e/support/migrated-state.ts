/**
 * Global setup of the e2e and browser projects: a template state directory holding the local D1
 * database with every migration applied, as `wrangler d1 migrations apply --local` (the step
 * scripts/start.mjs runs) leaves it. The harness copies it into each server's fresh persistence
 * directory, and those servers skip the migrations step.
 *
 * `wrangler d1 migrations apply` starts one local runtime to create its table, one to list what is
 * applied and one per migration, about 20 s of CPU before any test of the run may start (vitest
 * runs every project's global setup first). This runs the same statements in one runtime with
 * `wrangler d1 execute`: the migrations table as wrangler creates it, then each migration in
 * wrangler's order followed by the row wrangler records for it. A first application through
 * `npm start` itself is test/e2e/first-start.e2e.test.ts's to check.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MIGRATIONS_TABLE } from "../../setup/migrations-table";
import { MIGRATED_STATE_VAR, ROOT } from "../harness";

/** Every migration with its record, in the order wrangler applies them (by the number before `_`). */
function migrationsScript(): string {
  const dir = join(ROOT, "migrations");
  const names = readdirSync(dir)
    .filter((f) => f.endsWith(".sql"))
    .sort((a, b) => parseInt(a.split("_")[0]) - parseInt(b.split("_")[0]));
  const parts = [MIGRATIONS_TABLE];
  for (const name of names) parts.push(`${readFileSync(join(dir, name), "utf8")}\nINSERT INTO d1_migrations (name)\nvalues ('${name}');\n`);
  return parts.join("\n");
}

export default function setup(): () => void {
  // Both projects list this setup and vitest runs each project's: the second finds the template made.
  if (process.env[MIGRATED_STATE_VAR]) return () => {};
  const dir = mkdtempSync(join(tmpdir(), "bridge-e2e-migrated-"));
  const script = join(dir, "migrations.sql");
  writeFileSync(script, migrationsScript());
  const wrangler = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
  const run = spawnSync(process.execPath, [wrangler, "d1", "execute", "DB", "--local", "--persist-to", dir, "--file", script], {
    cwd: ROOT,
    env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" },
    encoding: "utf8",
  });
  rmSync(script);
  if (run.status !== 0) throw new Error(`applying the migrations for the e2e template failed:\n${run.stdout}\n${run.stderr}`);
  process.env[MIGRATED_STATE_VAR] = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}

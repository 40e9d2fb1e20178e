/**
 * Global setup of the e2e and browser projects: applies the D1 migrations once, the way
 * scripts/start.mjs does (`wrangler d1 migrations apply --local`), into a template state directory.
 * The harness copies it into each server's fresh persistence directory, so that every start still
 * runs the `npm start` path (its migrations step finds them all applied) without paying for a
 * first application, one local runtime per migration, on each of the suites' servers.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MIGRATED_STATE_VAR, ROOT } from "../harness";

export default function setup(): () => void {
  // Both projects list this setup and vitest runs each project's: the second finds the template made.
  if (process.env[MIGRATED_STATE_VAR]) return () => {};
  const dir = mkdtempSync(join(tmpdir(), "bridge-e2e-migrated-"));
  const wrangler = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
  const run = spawnSync(process.execPath, [wrangler, "d1", "migrations", "apply", "DB", "--local", "--persist-to", dir], {
    cwd: ROOT,
    env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" },
    encoding: "utf8",
  });
  if (run.status !== 0) throw new Error(`applying the migrations for the e2e template failed:\n${run.stdout}\n${run.stderr}`);
  process.env[MIGRATED_STATE_VAR] = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}

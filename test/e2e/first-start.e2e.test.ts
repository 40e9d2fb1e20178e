/**
 * A fresh checkout's first `npm start` (docs/deploy.md, README "First walk-through"): with no
 * .dev.vars, scripts/start.mjs writes one with random secrets, says where the bootstrap token is,
 * and the README's way of reading it mints the first admin key. Optional local settings in
 * .dev.vars still reach the Worker although wrangler.toml declares `[secrets]` (wrangler dev then
 * loads only the declared names itself), and a restart keeps the same secrets.
 *
 * It runs against a copy of wrangler.toml in a directory of its own (`npm start -- --config`), so
 * the checkout's own .dev.vars is neither read nor written.
 */
import { execFileSync } from "node:child_process";
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, ROOT, http, startDev } from "./harness";
import { must } from "../../src/platform/must";

let dir = "";
let dev: DevServer | null = null;
let adminKey = "";

/** wrangler.toml with its paths made absolute, so the copy runs the checkout's code from elsewhere. */
function copyConfig(): string {
  let toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
  const swaps: Array<[RegExp, string]> = [
    [/^main = "src\/index\.ts"$/m, `main = ${JSON.stringify(join(ROOT, "src/index.ts"))}`],
    [/^migrations_dir = "migrations"$/m, `migrations_dir = ${JSON.stringify(join(ROOT, "migrations"))}`],
    [/^directory = "\.\/public"$/m, `directory = ${JSON.stringify(join(ROOT, "public"))}`],
  ];
  for (const [pattern, line] of swaps) {
    expect(toml, `wrangler.toml has ${pattern}`).toMatch(pattern);
    toml = toml.replace(pattern, line);
  }
  const path = join(dir, "wrangler.toml");
  writeFileSync(path, toml);
  return path;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "bridge-first-start-"));
  dev = await startDev({ noDefaultVars: true, localSecrets: true, args: ["--config", copyConfig()] });
});

afterAll(async () => {
  await dev?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the first npm start", () => {
  it("writes .dev.vars with random secrets, says where the bootstrap token is, and the README's command reads a token that bootstraps", async () => {
    const logs = must(dev, "dev").logs();
    expect(logs).toContain("with random local secrets");
    expect(logs).toMatch(/the bootstrap token for POST \/api\/keys\/bootstrap is ACCESS_CONTROL_BOOTSTRAP_TOKEN in \S*\.dev\.vars/);
    expect(logs).not.toMatch(/experimental|Missing required secrets/);

    // The README's line, run as written in the directory that holds wrangler.toml.
    const token = execFileSync("sh", ["-c", "sed -n 's/^ACCESS_CONTROL_BOOTSTRAP_TOKEN=//p' .dev.vars"], { cwd: dir, encoding: "utf8" }).trim();
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await http(must(dev, "dev").baseUrl, "GET", "/api/login/methods")).body.data.bootstrap).toBe(true);
    const boot = await http(must(dev, "dev").baseUrl, "POST", "/api/keys/bootstrap", {
      body: { user_id: "root", description: "first admin", bootstrap_token: token },
    });
    expect(boot.status).toBe(200);
    expect(boot.body.data.token).toMatch(/^sk-/);
    adminKey = boot.body.data.token;
  });

  it("keeps the secrets on restart and passes an optional .dev.vars setting to the Worker", async () => {
    const before = readFileSync(join(dir, ".dev.vars"), "utf8");
    appendFileSync(join(dir, ".dev.vars"), "CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR=7\n");
    await must(dev, "dev").restart();
    expect(readFileSync(join(dir, ".dev.vars"), "utf8")).toBe(`${before}CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR=7\n`);
    expect(must(dev, "dev").logs().split("with random local secrets").length - 1).toBe(1);

    const token = must(readFileSync(join(dir, ".dev.vars"), "utf8").match(/^ACCESS_CONTROL_BOOTSTRAP_TOKEN=(.*)$/m), "the match")[1];
    // The same token is still the Worker's: bootstrap is spent (409), not refused (501).
    expect((await http(must(dev, "dev").baseUrl, "POST", "/api/keys/bootstrap", { body: { user_id: "again", bootstrap_token: token } })).status).toBe(409);

    const settings = await http(must(dev, "dev").baseUrl, "GET", "/api/config/env", { key: adminKey });
    expect(settings.status).toBe(200);
    const byName = Object.fromEntries((settings.body.data.settings as Array<{ name: string }>).map((s) => [s.name, s]));
    expect(byName.CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR).toMatchObject({ source: "env", value: "7" });
    for (const name of ["ACCESS_CONTROL_BOOTSTRAP_TOKEN", "SETTINGS_ENCRYPTION_KEY", "CONNECTORS_ENCRYPTION_KEY"])
      expect(byName[name], name).toMatchObject({ source: "env", set: true });
    expect((await http(must(dev, "dev").baseUrl, "GET", "/api/config/mode", { key: adminKey })).body.data).toMatchObject({
      encryption: "configured",
      valid: true,
    });
  });
});

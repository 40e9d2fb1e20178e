/**
 * The local secrets `npm start` writes (scripts/dev-vars.mjs; docs/deploy.md): on first run a
 * git-ignored .dev.vars with random values for every secret wrangler.toml declares; never a change
 * to a value already there; only missing entries added; safe when several servers start at once.
 */
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { unstable_readConfig } from "wrangler";
import { afterEach, describe, expect, it } from "vitest";
import { bootstrapTokenProblem } from "../../src/access-control/bootstrap-token";
import { normalizeKey } from "../../src/platform/settings/sealing-keys";
import { REQUIRED_SECRETS, ensureDevVars, parseDevVars } from "../../scripts/dev-vars.mjs";
import { must } from "../../src/platform/must";

const ROOT = join(import.meta.dirname, "..", "..");
const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "bridge-devvars-"));
  dirs.push(d);
  return d;
}
afterEach(() => {
  while (dirs.length) rmSync(must(dirs.pop(), "dirs.pop()"), { recursive: true, force: true });
});

const NAMES = REQUIRED_SECRETS.map((s) => s.name);

describe("the required secrets", () => {
  it("are the ones wrangler.toml declares in [secrets] required, and none of them is a [vars] entry", () => {
    process.env.WRANGLER_DISABLE_EXPERIMENTAL_WARNING ??= "true";
    const config = unstable_readConfig({ config: join(ROOT, "wrangler.toml") });
    expect(config.secrets?.required).toEqual(NAMES);
    for (const name of NAMES) expect(Object.keys(config.vars ?? {})).not.toContain(name);
  });

  it(".dev.vars stays git-ignored", () => {
    expect(readFileSync(join(ROOT, ".gitignore"), "utf8").split("\n")).toContain(".dev.vars");
  });
});

describe("ensureDevVars", () => {
  it("on first run writes every required secret with a fresh value the Worker and the preflight accept, readable by its owner only", async () => {
    const dir = tempDir();
    const first = await ensureDevVars(dir);
    expect(first).toEqual({ path: join(dir, ".dev.vars"), created: true, added: NAMES });
    const vars = parseDevVars(readFileSync(first.path, "utf8"));
    expect(Object.keys(vars)).toEqual(NAMES);
    expect(bootstrapTokenProblem(vars.ACCESS_CONTROL_BOOTSTRAP_TOKEN)).toBeNull();
    expect(vars.ACCESS_CONTROL_BOOTSTRAP_TOKEN).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(normalizeKey(vars.SETTINGS_ENCRYPTION_KEY)).toBe(vars.SETTINGS_ENCRYPTION_KEY);
    expect(normalizeKey(vars.CONNECTORS_ENCRYPTION_KEY)).toBe(vars.CONNECTORS_ENCRYPTION_KEY);
    expect(vars.SETTINGS_ENCRYPTION_KEY).not.toBe(vars.CONNECTORS_ENCRYPTION_KEY);
    expect(statSync(first.path).mode & 0o077).toBe(0);
    // A second checkout gets other values.
    const other = parseDevVars(readFileSync((await ensureDevVars(tempDir())).path, "utf8"));
    for (const name of NAMES) expect(other[name]).not.toBe(vars[name]);
  });

  it("never changes a value already there: a second run writes nothing", async () => {
    const dir = tempDir();
    const { path } = await ensureDevVars(dir);
    const before = readFileSync(path, "utf8");
    expect(await ensureDevVars(dir)).toEqual({ path, created: false, added: [] });
    expect(readFileSync(path, "utf8")).toBe(before);
  });

  it("adds only the missing entries and keeps every other line, optional settings and comments included", async () => {
    const dir = tempDir();
    const path = join(dir, ".dev.vars");
    const mine =
      "# my local settings\nSETTINGS_ENCRYPTION_KEY=" +
      Buffer.alloc(32, 7).toString("base64") +
      '\nOUTBOUND_ALLOW_PRIVATE_HOSTS=true\nCHANNEL_TELEGRAM_BOT_TOKEN="123:abc # not a comment"';
    writeFileSync(path, mine);
    chmodSync(path, 0o600);
    const r = await ensureDevVars(dir);
    expect(r).toEqual({ path, created: false, added: ["ACCESS_CONTROL_BOOTSTRAP_TOKEN", "CONNECTORS_ENCRYPTION_KEY"] });
    const text = readFileSync(path, "utf8");
    expect(text.startsWith(`${mine}\n`)).toBe(true);
    const vars = parseDevVars(text);
    expect(vars.SETTINGS_ENCRYPTION_KEY).toBe(Buffer.alloc(32, 7).toString("base64"));
    expect(vars.OUTBOUND_ALLOW_PRIVATE_HOSTS).toBe("true");
    expect(vars.CHANNEL_TELEGRAM_BOT_TOKEN).toBe("123:abc # not a comment");
    expect(bootstrapTokenProblem(vars.ACCESS_CONTROL_BOOTSTRAP_TOKEN)).toBeNull();
  });

  it("several processes starting at once agree on one set of values, each written once, and leave no lock or temporary file", async () => {
    const dir = tempDir();
    const module = join(ROOT, "scripts", "dev-vars.mjs");
    const script = `import { ensureDevVars } from ${JSON.stringify(module)}; const r = await ensureDevVars(${JSON.stringify(dir)}); console.log(JSON.stringify(r));`;
    const runs = await Promise.all(
      Array.from({ length: 6 }, () => {
        const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
        let out = "";
        let err = "";
        child.stdout.on("data", (d) => (out += d));
        child.stderr.on("data", (d) => (err += d));
        return new Promise<{ code: number | null; out: string; err: string }>((resolve) => child.on("exit", (code) => resolve({ code, out, err })));
      }),
    );
    for (const r of runs) expect(r, r.err).toMatchObject({ code: 0 });
    const results = runs.map((r) => JSON.parse(r.out) as { created: boolean; added: string[] });
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(results.flatMap((r) => r.added).sort()).toEqual([...NAMES].sort());
    const text = readFileSync(join(dir, ".dev.vars"), "utf8");
    for (const name of NAMES) expect(text.split("\n").filter((l) => l.startsWith(`${name}=`))).toHaveLength(1);
    expect(readdirSync(dir)).toEqual([".dev.vars"]);
    expect(existsSync(join(dir, ".dev.vars.lock"))).toBe(false);
  });
});

describe("parseDevVars", () => {
  it("reads .dev.vars lines as wrangler does: export, quotes, multi-line double quotes, comments; later lines win", () => {
    const text = [
      "# comment",
      "export A=plain # trailing comment",
      "B='single # kept'",
      'C="multi',
      'line"',
      'D="esc\\nline"',
      "E=k=v==",
      "A=again",
      "not a line",
    ].join("\n");
    expect(parseDevVars(text)).toEqual({ A: "again", B: "single # kept", C: "multi\nline", D: "esc\nline", E: "k=v==" });
  });
});

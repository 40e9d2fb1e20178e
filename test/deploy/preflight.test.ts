/**
 * The deploy's preflight (scripts/deploy-preflight.ts, run by `npm run deploy`; docs/deploy.md):
 * it refuses, naming what is wrong and never a value, a required secret that is unset, a
 * development value (the local .dev.vars, or a published one), a malformed one, a secret in
 * [vars], and the placeholder D1 id for a real deploy; and it passes fresh values. The last part
 * runs the command's checks offline: each refusal exits 1 before anything is built or uploaded, a
 * dry run included. One case drives the real command (`npm run deploy` is `tsx scripts/deploy.ts`);
 * the others call the same checks (scripts/deploy-check.ts) in this process, which reads the config
 * with wrangler once instead of once per started command.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PUBLISHED_BOOTSTRAP_TOKENS } from "../../src/access-control/bootstrap-token";
import { normalizeKey } from "../../src/platform/settings/sealing-keys";
import { checkDeploy } from "../../scripts/deploy-check";
import {
  PLACEHOLDER_DATABASE_ID,
  PUBLISHED_SEALING_KEYS,
  type PreflightInput,
  looksLikeSecretValue,
  preflight,
  secretLookingVars,
} from "../../scripts/deploy-preflight";
import { REQUIRED_SECRETS } from "../../scripts/dev-vars.mjs";

const ROOT = join(import.meta.dirname, "..", "..");
const NAMES = REQUIRED_SECRETS.map((s) => s.name);
const REAL_ID = "3f2b9c1e-7a4d-4e5f-9b8a-1c2d3e4f5a6b";

/** Fresh values the preflight must accept. */
function fresh(): Record<string, string> {
  return {
    ACCESS_CONTROL_BOOTSTRAP_TOKEN: randomBytes(32).toString("base64url"),
    SETTINGS_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    CONNECTORS_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
  };
}

function input(over: Partial<PreflightInput> = {}): PreflightInput {
  return {
    config: { vars: { CONVERSATIONS_STORE_URL: "d1://DB" }, secretsRequired: NAMES, d1Databases: [{ binding: "DB", database_id: REAL_ID }] },
    secretsFile: fresh(),
    env: {},
    remoteNames: null,
    devVars: {},
    dryRun: false,
    ...over,
  };
}

/** Every message, joined: what a refusal says must never carry the value it refuses. */
const said = (r: { problems: string[]; warnings: string[] }) => [...r.problems, ...r.warnings].join("\n");

describe("preflight", () => {
  it("passes fresh values from a secrets file and uploads them", () => {
    const secrets = { ...fresh(), CHANNEL_TELEGRAM_BOT_TOKEN: "123:abc" };
    const r = preflight(input({ secretsFile: secrets }));
    expect(r.problems).toEqual([]);
    expect(r.checked).toEqual(NAMES.map((name) => ({ name, source: "file" })));
    expect(r.upload).toEqual(secrets);
  });

  it("passes fresh values from the environment and uploads them with the file's other entries", () => {
    const env = fresh();
    const r = preflight(input({ secretsFile: { CHANNEL_SLACK_BOT_TOKEN: "xoxb-1" }, env }));
    expect(r.problems).toEqual([]);
    expect(r.checked.map((c) => c.source)).toEqual(["env", "env", "env"]);
    expect(r.upload).toEqual({ CHANNEL_SLACK_BOT_TOKEN: "xoxb-1", ...env });
  });

  it("refuses each unset secret by name, a dry run too", () => {
    for (const dryRun of [false, true]) {
      const r = preflight(input({ secretsFile: null, dryRun }));
      expect(r.problems).toHaveLength(3);
      for (const name of NAMES) expect(r.problems.some((p) => p.startsWith(`${name} is not set`))).toBe(true);
    }
    const one = { ...fresh() } as Record<string, string>;
    delete one.CONNECTORS_ENCRYPTION_KEY;
    expect(preflight(input({ secretsFile: one })).problems).toEqual([expect.stringMatching(/^CONNECTORS_ENCRYPTION_KEY is not set/)]);
    // An empty value is unset.
    expect(preflight(input({ secretsFile: { ...fresh(), SETTINGS_ENCRYPTION_KEY: "" } })).problems).toEqual([
      expect.stringMatching(/^SETTINGS_ENCRYPTION_KEY is not set/),
    ]);
  });

  it("takes a secret already set on the Worker (wrangler secret list) for a real deploy, with a warning that only its presence was checked", () => {
    const partial = fresh() as Record<string, string>;
    delete partial.ACCESS_CONTROL_BOOTSTRAP_TOKEN;
    const r = preflight(input({ secretsFile: partial, remoteNames: new Set(["ACCESS_CONTROL_BOOTSTRAP_TOKEN"]) }));
    expect(r.problems).toEqual([]);
    expect(r.checked[0]).toEqual({ name: "ACCESS_CONTROL_BOOTSTRAP_TOKEN", source: "worker" });
    expect(r.warnings.join()).toContain("only its presence was checked");
    expect(r.upload).not.toHaveProperty("ACCESS_CONTROL_BOOTSTRAP_TOKEN");
  });

  it("refuses every published value: the bootstrap token and sealing keys once committed, also written url-safe", () => {
    const published = [
      ...PUBLISHED_BOOTSTRAP_TOKENS.map((v) => ["ACCESS_CONTROL_BOOTSTRAP_TOKEN", v] as const),
      ...PUBLISHED_SEALING_KEYS.flatMap((v) => [
        ["SETTINGS_ENCRYPTION_KEY", v] as const,
        ["CONNECTORS_ENCRYPTION_KEY", v] as const,
        ["SETTINGS_ENCRYPTION_KEY", v.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")] as const,
      ]),
    ];
    expect(published).toContainEqual(["ACCESS_CONTROL_BOOTSTRAP_TOKEN", "local-dev-bootstrap-token"]);
    expect(published).toContainEqual(["SETTINGS_ENCRYPTION_KEY", "3XhHnBmwYdkJbA9QQXWUvdhCK4AaqxkeK4K/RPEp44w="]);
    expect(published).toContainEqual(["CONNECTORS_ENCRYPTION_KEY", "zz5k0PF+v9BM+Tr542g390zL1PlhPNyXeWZFw2SMiDc="]);
    for (const [name, value] of published) {
      for (const via of ["file", "env"] as const) {
        const secrets = { ...fresh(), [name]: value };
        const r = preflight(via === "file" ? input({ secretsFile: secrets }) : input({ secretsFile: null, env: secrets }));
        expect(r.problems, `${name} via ${via}`).toEqual([
          `${name} is a published development value (committed in the repository or printed in its docs); generate a fresh one`,
        ]);
        expect(said(r)).not.toContain(value);
      }
    }
  });

  it("refuses a value found in the local .dev.vars, under any name there", () => {
    const local = fresh();
    for (const name of NAMES) {
      const r = preflight(input({ secretsFile: { ...fresh(), [name]: local[name] }, devVars: { ...local, OUTBOUND_ALLOW_PRIVATE_HOSTS: "true" } }));
      expect(r.problems).toEqual([`${name} equals a value in the local .dev.vars (${name}), a development value; generate a fresh one`]);
      expect(said(r)).not.toContain(local[name]);
    }
    // Copied across names: the local settings key deployed as the connectors key.
    const crossed = preflight(input({ secretsFile: { ...fresh(), CONNECTORS_ENCRYPTION_KEY: local.SETTINGS_ENCRYPTION_KEY }, devVars: local }));
    expect(crossed.problems).toEqual([
      "CONNECTORS_ENCRYPTION_KEY equals a value in the local .dev.vars (SETTINGS_ENCRYPTION_KEY), a development value; generate a fresh one",
    ]);
  });

  it("refuses malformed values: a sealing key that is not 32 bytes of base64, a bootstrap token under 32 characters, one key for both", () => {
    const cases: Array<[string, string, string]> = [
      ["SETTINGS_ENCRYPTION_KEY", randomBytes(16).toString("base64"), "SETTINGS_ENCRYPTION_KEY must be 32 random bytes in base64"],
      ["CONNECTORS_ENCRYPTION_KEY", "not base64 at all!!", "CONNECTORS_ENCRYPTION_KEY must be 32 random bytes in base64"],
      ["ACCESS_CONTROL_BOOTSTRAP_TOKEN", "x".repeat(31), "ACCESS_CONTROL_BOOTSTRAP_TOKEN is shorter than 32 characters"],
    ];
    for (const [name, value, message] of cases) {
      const r = preflight(input({ secretsFile: { ...fresh(), [name]: value } }));
      expect(r.problems, name).toEqual([expect.stringContaining(message)]);
      expect(said(r)).not.toContain(value);
    }
    const same = fresh();
    same.CONNECTORS_ENCRYPTION_KEY = same.SETTINGS_ENCRYPTION_KEY;
    expect(preflight(input({ secretsFile: same })).problems).toEqual([
      "SETTINGS_ENCRYPTION_KEY and CONNECTORS_ENCRYPTION_KEY are the same key; generate one for each",
    ]);
  });

  it("refuses the placeholder D1 id for a real deploy and only warns on a dry run", () => {
    const db = { d1Databases: [{ binding: "DB", database_id: PLACEHOLDER_DATABASE_ID }] };
    const real = preflight(input({ config: { ...input().config, ...db } }));
    expect(real.problems).toEqual([expect.stringContaining("the D1 database DB has the placeholder id")]);
    const dry = preflight(input({ config: { ...input().config, ...db }, dryRun: true }));
    expect(dry.problems).toEqual([]);
    expect(dry.warnings).toEqual([expect.stringContaining("a real deploy stops here")]);
  });

  it("refuses a required secret written in [vars], and a wrangler.toml that declares no [secrets]", () => {
    const inVars = preflight(input({ config: { ...input().config, vars: { SETTINGS_ENCRYPTION_KEY: "x" } } }));
    expect(inVars.problems).toEqual([expect.stringContaining("wrangler.toml [vars] sets SETTINGS_ENCRYPTION_KEY")]);
    const undeclared = preflight(input({ config: { ...input().config, secretsRequired: undefined } }));
    expect(undeclared.problems).toEqual([expect.stringContaining("no [secrets] required list")]);
  });
});

describe("what looks like a secret in [vars]", () => {
  it("flags the values once committed and secret-named variables; leaves this repository's [vars] alone", () => {
    for (const v of [...PUBLISHED_SEALING_KEYS, randomBytes(16).toString("hex"), randomBytes(24).toString("base64url")])
      expect(looksLikeSecretValue(v), v).toBe(true);
    for (const v of [
      "d1://DB",
      "builtin:",
      "STORAGE",
      "http://127.0.0.1:8787/oauth/callback",
      "https://github.githubassets.com/favicons/favicon.png",
      "client_secret_post",
      "local-dev-bootstrap-token",
    ])
      expect(looksLikeSecretValue(v), v).toBe(false);
    expect(
      secretLookingVars({
        ACCESS_CONTROL_BOOTSTRAP_TOKEN: "local-dev-bootstrap-token",
        API_PASSWORD: "hunter2",
        EMPTY_TOKEN: "",
        URL: "d1://DB",
        SOME: PUBLISHED_SEALING_KEYS[0],
      }),
    ).toEqual(["ACCESS_CONTROL_BOOTSTRAP_TOKEN", "API_PASSWORD", "SOME"]);
  });

  it("judges the secret-reference settings by their value only: they name variables and origins, never hold a secret", () => {
    const plain = {
      SECRET_REFERENCE_ALLOWLIST: "WEATHER_TOKEN,CRM_TOKEN",
      SECRET_REFERENCE_ORIGINS: JSON.stringify({ SECRET_WEATHER_TOKEN: ["https://weather.example.com"] }),
    };
    expect(secretLookingVars(plain)).toEqual([]);
    expect(secretLookingVars({ SECRET_REFERENCE_ORIGINS: PUBLISHED_SEALING_KEYS[0], SECRET_WEATHER_TOKEN: "https://weather.example.com" })).toEqual([
      "SECRET_REFERENCE_ORIGINS",
      "SECRET_WEATHER_TOKEN",
    ]);
  });
});

describe("the docs", () => {
  /** README.md and every page under docs/. */
  function pages(): Array<{ path: string; text: string }> {
    const out = [{ path: "README.md", text: readFileSync(join(ROOT, "README.md"), "utf8") }];
    const walk = (rel: string) => {
      for (const e of readdirSync(join(ROOT, rel), { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(rel, e.name));
        else if (e.name.endsWith(".md")) out.push({ path: join(rel, e.name), text: readFileSync(join(ROOT, rel, e.name), "utf8") });
      }
    };
    walk("docs");
    return out;
  }

  it("print no bootstrap token or sealing key that the published lists lack (an example value would be public)", () => {
    const published = new Set<string>([...PUBLISHED_BOOTSTRAP_TOKENS, ...PUBLISHED_SEALING_KEYS]);
    const found: string[] = [];
    for (const { path, text } of pages()) {
      // A bootstrap body, plain or shell-escaped: "bootstrap_token":"…" (a $VARIABLE reads it from elsewhere).
      for (const m of text.matchAll(/\\?"bootstrap_token\\?"\s*:\s*\\?"([^"\\$]+)\\?"/g)) found.push(`${path}: ${m[1]}`);
      // NAME=value or NAME: value for the required secrets and their previous keys.
      for (const m of text.matchAll(
        /(?:ACCESS_CONTROL_BOOTSTRAP_TOKEN|(?:SETTINGS|CONNECTORS)_ENCRYPTION_KEY(?:_PREVIOUS)?)\s*[=:]\s*["']?([A-Za-z0-9+/=_-]{8,})/g,
      ))
        found.push(`${path}: ${m[1]}`);
      // Anything shaped like a 32-byte key: a whole run of 43 base64 characters (and its padding) that looks random.
      for (const m of text.matchAll(/(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{43}=?(?![A-Za-z0-9+/=_-])/g))
        if (normalizeKey(m[0]) && looksLikeSecretValue(m[0])) found.push(`${path}: ${m[0]}`);
    }
    expect(found.filter((f) => !published.has(f.slice(f.indexOf(": ") + 2)))).toEqual([]);
  });
});

describe("npm run deploy refuses before building or uploading", () => {
  const dir = mkdtempSync(join(tmpdir(), "bridge-deploy-refusal-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** The environment of a person with no Cloudflare credentials and none of the secrets set, plus `env`. */
  function deployEnv(env: Record<string, string>): Record<string, string> {
    const clean: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !NAMES.includes(k) && !/^CLOUDFLARE_API/.test(k)) clean[k] = v;
    return { ...clean, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", ...env };
  }
  /** `npm run deploy -- …` as a person runs it. */
  function deploy(args: string[], env: Record<string, string> = {}) {
    const r = spawnSync(process.execPath, [join(ROOT, "node_modules", "tsx", "dist", "cli.mjs"), join(ROOT, "scripts", "deploy.ts"), ...args], {
      cwd: ROOT,
      encoding: "utf8",
      env: deployEnv(env),
      timeout: 60_000,
    });
    return { status: r.status, out: `${r.stdout}${r.stderr}` };
  }
  /** The same command's checks in this process: its exit status if it stops there, and what it said. */
  function deployChecks(args: string[], env: Record<string, string> = {}) {
    const lines: string[] = [];
    const say = (...parts: unknown[]) => lines.push(`${parts.join(" ")}\n`);
    const plan = checkDeploy({ argv: args, env: deployEnv(env), cwd: ROOT, out: { log: say, warn: say, error: say } });
    return { status: plan ? null : 1, out: lines.join("") };
  }
  /** Writes NAME=value lines (a secrets file, or a .dev.vars) and returns the path. */
  const envFile = (path: string, values: Record<string, string>) => {
    writeFileSync(
      path,
      Object.entries(values)
        .map(([k, v]) => `${k}=${v}\n`)
        .join(""),
    );
    return path;
  };

  it("a dry run with no secrets names each missing one", () => {
    const r = deploy(["--dry-run"]);
    expect(r.status).toBe(1);
    expect(r.out).toContain("refused before anything was built or uploaded");
    for (const name of NAMES) expect(r.out).toContain(`${name} is not set`);
    expect(r.out).not.toContain("Total Upload");
  });

  it("a dry run with the values once committed names each as published, and prints none of them", () => {
    const old = {
      ACCESS_CONTROL_BOOTSTRAP_TOKEN: "local-dev-bootstrap-token",
      SETTINGS_ENCRYPTION_KEY: PUBLISHED_SEALING_KEYS[1],
      CONNECTORS_ENCRYPTION_KEY: PUBLISHED_SEALING_KEYS[0],
    };
    const r = deployChecks(["--dry-run", "--secrets-file", envFile(join(dir, "old.env"), old)]);
    expect(r.status).toBe(1);
    for (const name of NAMES) expect(r.out).toContain(`${name} is a published development value`);
    for (const value of Object.values(old)) expect(r.out).not.toContain(value);
  });

  it("a dry run with the local .dev.vars values (from the environment) refuses them as development values", () => {
    // A checkout of its own: wrangler.toml beside a .dev.vars as `npm start` writes it.
    const checkout = mkdtempSync(join(dir, "checkout-"));
    writeFileSync(join(checkout, "wrangler.toml"), readFileSync(join(ROOT, "wrangler.toml")));
    const local = fresh();
    envFile(join(checkout, ".dev.vars"), local);
    const r = deployChecks(["--dry-run", "--config", join(checkout, "wrangler.toml")], local);
    expect(r.status).toBe(1);
    for (const name of NAMES) expect(r.out).toContain(`${name} equals a value in the local .dev.vars (${name})`);
    for (const value of Object.values(local)) expect(r.out).not.toContain(value);
  });

  it("a real deploy with fresh secrets stops at the placeholder D1 id, before any network", () => {
    const r = deployChecks(["--secrets-file", envFile(join(dir, "fresh.env"), fresh())]);
    expect(r.status).toBe(1);
    expect(r.out).toContain("the D1 database DB has the placeholder id");
    expect(r.out).not.toContain("Total Upload");
  });
});

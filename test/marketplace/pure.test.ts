/**
 * The marketplace's pure policy: semantic versions, compatibility selection and the
 * upgrade-all decision (platform-facts A6 vocabulary and detail patterns), the bundle's own
 * consistency, the index format (including the built-in catalog), the lease policy of the fleet
 * lock and the settings.
 */
import { describe, expect, it } from "vitest";
import { decideUpgrade, latestCompatible, newestIncompatibleAbove } from "../../src/marketplace/compat";
import { DeclarationBundle, supportsContract } from "../../src/marketplace/contract";
import { BUILTIN_INDEX } from "../../src/marketplace/builtin-catalog";
import { RegistryIndex, type RegistryPlugin, refOf } from "../../src/marketplace/index-format";
import { decideAcquire, decideRenew, mayRelease, retryAfterSeconds } from "../../src/marketplace/lease";
import { validateIndex } from "../../src/marketplace/registry";
import { compareVersions, isPrerelease, isSemver, parseSemver } from "../../src/marketplace/semver";
import { parseSettings } from "../../src/platform/settings/settings";
import { HttpError } from "../../src/platform/http/errors";

describe("semantic versions", () => {
  it("parses SemVer 2.0.0 and refuses what is not", () => {
    for (const v of [
      "0.0.0",
      "1.2.3",
      "10.20.30",
      "1.0.0-alpha",
      "1.0.0-alpha.1",
      "1.0.0-0.3.7",
      "1.0.0-x.7.z.92",
      "1.0.0+20130313144700",
      "1.0.0-beta+exp.sha.5114f85",
      "99999999999999999999.0.0",
    ]) {
      expect(isSemver(v), v).toBe(true);
    }
    for (const v of [
      "1",
      "1.2",
      "01.2.3",
      "1.02.3",
      "1.2.03",
      "v1.2.3",
      "1.2.3-",
      "1.2.3-01",
      "1.2.3+",
      "1.2.3 ",
      "",
      "1.2.3-a..b",
      `1.0.0-${"a".repeat(200)}`,
    ]) {
      expect(isSemver(v), v).toBe(false);
    }
    expect(parseSemver("1.2.3-rc.1+b")).toEqual({ major: "1", minor: "2", patch: "3", prerelease: ["rc", "1"] });
  });

  it("orders by the spec's precedence, ignoring build metadata", () => {
    const ordered = [
      "1.0.0-alpha",
      "1.0.0-alpha.1",
      "1.0.0-alpha.beta",
      "1.0.0-beta",
      "1.0.0-beta.2",
      "1.0.0-beta.11",
      "1.0.0-rc.1",
      "1.0.0",
      "1.0.1",
      "1.1.0",
      "2.0.0",
      "10.0.0",
      "99999999999999999999.0.0",
    ];
    for (let i = 0; i < ordered.length - 1; i += 1) {
      expect(compareVersions(ordered[i], ordered[i + 1]), `${ordered[i]} < ${ordered[i + 1]}`).toBeLessThan(0);
      expect(compareVersions(ordered[i + 1], ordered[i])).toBeGreaterThan(0);
    }
    expect(compareVersions("1.0.0+a", "1.0.0+b")).toBe(0);
    expect(isPrerelease("1.0.0-rc.1")).toBe(true);
    expect(isPrerelease("1.0.0+rc")).toBe(false);
  });
});

const v = (version: string, contracts: Record<string, number[]> = { "bridge-declarations": [1] }) => ({ version, contracts, declarations: {} });
const plugin = (versions: Array<ReturnType<typeof v>>): RegistryPlugin => ({
  namespace: "Acme",
  name: "Tools",
  description: "",
  categories: [],
  kinds: ["http_tool"],
  advisories: [],
  versions,
});
const V2 = { "bridge-declarations": [2] };

describe("compatibility selection", () => {
  it("a version is compatible when it lists bridge-declarations 1", () => {
    expect(supportsContract({ "bridge-declarations": [1] })).toBe(true);
    expect(supportsContract({ "bridge-declarations": [1, 2] })).toBe(true);
    expect(supportsContract({ "bridge-declarations": [2] })).toBe(false);
    expect(supportsContract({ "other-contract": [1] })).toBe(false);
    expect(supportsContract({})).toBe(false);
  });

  it("latest compatible: the highest compatible release; prereleases only for themselves", () => {
    const p = plugin([v("1.0.0"), v("1.2.0"), v("1.10.0"), v("2.0.0", V2), v("1.11.0-rc.1")]);
    expect(latestCompatible(p)?.version).toBe("1.10.0");
    expect(latestCompatible(p, "1.11.0-rc.1")?.version).toBe("1.11.0-rc.1");
    expect(latestCompatible(plugin([v("2.0.0", V2)]))).toBeNull();
    expect(newestIncompatibleAbove(p, "1.10.0")?.version).toBe("2.0.0");
    expect(newestIncompatibleAbove(p, "2.0.0")).toBeNull();
    expect(refOf(p)).toBe("acme/tools");
  });

  it("upgrade-all decides every outcome with A6's detail patterns", () => {
    expect(decideUpgrade("1.0.0", plugin([v("1.0.0"), v("1.1.0")]))).toEqual({ outcome: "upgrade", from: "1.0.0", to: "1.1.0" });
    expect(decideUpgrade("1.1.0", plugin([v("1.0.0"), v("1.1.0")]))).toEqual({ outcome: "up-to-date", detail: "1.1.0 is the latest compatible version" });
    expect(decideUpgrade("1.1.0", plugin([v("1.1.0"), v("2.0.0", V2), v("3.0.0", V2)]))).toEqual({
      outcome: "up-to-date",
      detail: "1.1.0 is the latest compatible version (3.0.0 exists but does not support bridge-declarations 1)",
    });
    // An upgrade skips the incompatible newest and takes the newest compatible.
    expect(decideUpgrade("1.0.0", plugin([v("1.0.0"), v("1.5.0"), v("2.0.0", V2)]))).toEqual({ outcome: "upgrade", from: "1.0.0", to: "1.5.0" });
    expect(decideUpgrade("1.0.0", plugin([v("1.0.0", V2)]))).toEqual({
      outcome: "no-compatible-version",
      detail: "no published version supports bridge-declarations 1",
    });
    expect(decideUpgrade("1.0.0", plugin([v("1.0.0", V2), v("2.0.0", V2)]))).toEqual({
      outcome: "no-compatible-version",
      detail: "no published version supports bridge-declarations 1 (2.0.0 exists but does not support bridge-declarations 1)",
    });
    expect(decideUpgrade("1.0.0", undefined)).toEqual({ outcome: "failed", detail: "the plugin is no longer published in the registry" });
    // Never downward: a registry that withdrew the installed version leaves it in place.
    expect(decideUpgrade("1.2.0", plugin([v("1.0.0")])).outcome).toBe("up-to-date");
  });
});

describe("the declarations bundle (bridge-declarations 1)", () => {
  const tool = (title: string) => ({ title, kind: "http", url: "https://example.com/t" });
  const preset = (name: string, base_tool: string) => ({ name, base_tool });

  it("takes each kind's own door body, with defaults", () => {
    const b = DeclarationBundle.parse({
      http_tools: [tool("t1")],
      agents: [{ title: "a1", kind: "http", config: { url: "https://example.com/a" } }],
      presets: [preset("p1", "t1")],
    });
    expect(b.http_tools[0]).toMatchObject({ title: "t1", method: "POST", headers: {}, timeout_seconds: 30, description: "" });
    expect(b.presets[0]).toMatchObject({ name: "p1", base_tool: "t1", fixed_kwargs: {} });
  });

  it.each([
    ["nothing declared", {}, "declares nothing"],
    ["an unknown section", { http_tools: [tool("t")], state_templates: [] }, "state_templates"],
    ["a name twice", { http_tools: [tool("t"), tool("t")] }, "declares a name twice"],
    ["a tool and a preset of one name", { http_tools: [tool("x")], presets: [preset("x", "echo")] }, "also the title"],
    ["a preset over a preset", { presets: [preset("p", "echo"), preset("q", "p")] }, "a preset stands on a tool"],
    [
      "a preset with a state binding",
      { presets: [{ ...preset("p", "echo"), state_binding: { states: [{ state: "s", subject_expr: { content: "." } }] } }] },
      "state_binding",
    ],
    ["an invalid tool", { http_tools: [{ title: "bad title!", kind: "http", url: "https://example.com" }] }, "title"],
  ])("refuses %s", (_what, bundle, message) => {
    const r = DeclarationBundle.safeParse(bundle);
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toContain(message);
  });
});

const plugins = (list: unknown[]) => ({ format: "bridge-marketplace-index/1", plugins: list });
const entry = (over: Record<string, unknown> = {}) => ({ namespace: "acme", name: "tools", kinds: ["http_tool"], versions: [v("1.0.0")], ...over });

describe("the index format", () => {
  it("the built-in catalog is a valid index", () => {
    const index = validateIndex(BUILTIN_INDEX, 1024 * 1024);
    expect(index.plugins.map(refOf)).toEqual(["examples/greetings", "examples/weather", "examples/support-desk", "examples/profile-memory"]);
    // Every compatible version of the catalog holds a valid bundle.
    for (const p of index.plugins)
      for (const ver of p.versions)
        if (supportsContract(ver.contracts)) expect(DeclarationBundle.safeParse(ver.declarations).success, `${refOf(p)} ${ver.version}`).toBe(true);
  });

  it("accepts a minimal index and keeps incompatible bundles opaque", () => {
    const index = RegistryIndex.parse(
      plugins([entry({ versions: [v("1.0.0"), { version: "2.0.0", contracts: V2, declarations: { future_kind: [{ anything: true }] } }] })]),
    );
    expect(index.plugins[0]).toMatchObject({ description: "", categories: [], advisories: [] });
  });

  it.each([
    ["a wrong format", { format: "other", plugins: [] }, "format"],
    ["an unknown top-level field", { ...plugins([]), extra: 1 }, "extra"],
    ["a plugin twice, in other case", plugins([entry(), entry({ namespace: "ACME" })]), "lists a plugin twice"],
    ["a version twice (build metadata)", plugins([entry({ versions: [v("1.0.0+a"), v("1.0.0+b")] })]), "lists a version twice"],
    ["a bad version", plugins([entry({ versions: [v("1.0")] })]), "semantic version"],
    ["no versions", plugins([entry({ versions: [] })]), "versions"],
    ["a bad namespace", plugins([entry({ namespace: "-x" })]), "namespace"],
    [
      "an advisory id twice",
      plugins([entry({ advisories: [1, 2].map(() => ({ id: "A-1", severity: "low", summary: "s", affected_versions: ["1.0.0"] })) })]),
      "advisory id twice",
    ],
    [
      "an http advisory url",
      plugins([entry({ advisories: [{ id: "A-1", severity: "low", summary: "s", affected_versions: ["1.0.0"], url: "http://x.example" }] })]),
      "https",
    ],
    ["a contract version 0", plugins([entry({ versions: [v("1.0.0", { "bridge-declarations": [0] })] })]), "contracts"],
  ])("refuses %s with 502 marketplace-registry-invalid", (_what, doc, message) => {
    let err: unknown;
    try {
      validateIndex(doc, 1024 * 1024);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).status).toBe(502);
    expect((err as HttpError).code).toBe("marketplace-registry-invalid");
    expect((err as HttpError).message).toContain(message);
  });

  it("refuses a document nested too deep or larger than the byte cap", () => {
    let deep: unknown = "x";
    for (let i = 0; i < 80; i += 1) deep = [deep];
    expect(() => validateIndex({ format: "bridge-marketplace-index/1", plugins: [], deep }, 1024 * 1024)).toThrow(/nest at most/);
    expect(() => validateIndex(plugins([entry({ description: "d".repeat(3000) })]), 1024)).toThrow(/at most 1024 bytes/);
  });
});

describe("the fleet lock's lease", () => {
  it("one holder at a time; a lapsed lease is free; the holder extends its own", () => {
    const first = decideAcquire(null, "a", "install x", 1000, 0);
    expect(first).toEqual({ ok: true, lease: { holder: "a", operation: "install x", acquired_at: 0, expires_at: 1000 } });
    const lease = first.ok ? first.lease : null;
    expect(decideAcquire(lease, "b", "update y", 1000, 400)).toEqual({ ok: false, retry_after_ms: 600 });
    expect(decideAcquire(lease, "a", "install x", 1000, 400)).toMatchObject({ ok: true, lease: { acquired_at: 0, expires_at: 1400 } });
    expect(decideAcquire(lease, "b", "update y", 1000, 1000)).toMatchObject({ ok: true, lease: { holder: "b", acquired_at: 1000 } });
  });

  it("only the live holder renews; only the holder releases", () => {
    const lease = { holder: "a", operation: "x", acquired_at: 0, expires_at: 1000 };
    expect(decideRenew(lease, "a", 1000, 500)).toEqual({ ...lease, expires_at: 1500 });
    expect(decideRenew(lease, "b", 1000, 500)).toBeNull();
    expect(decideRenew(lease, "a", 1000, 1000)).toBeNull();
    expect(mayRelease(lease, "a")).toBe(true);
    expect(mayRelease(lease, "b")).toBe(false);
    expect(mayRelease(null, "a")).toBe(false);
    expect(retryAfterSeconds(1)).toBe(1);
    expect(retryAfterSeconds(1001)).toBe(2);
    expect(retryAfterSeconds(-5)).toBe(1);
  });
});

describe("marketplace settings", () => {
  const base = { DB: {}, MARKETPLACE_STORE_URL: "d1://DB" };
  const parse = (vars: Record<string, unknown>) => parseSettings({ ...base, ...vars });

  it("defaults, the built-in catalog and an https registry", () => {
    const none = parse({});
    expect(none.ok && none.settings.marketplace).toEqual({
      storeUrl: "d1://DB",
      registry: null,
      registryTimeoutSeconds: 10,
      registryMaxBytes: 4194304,
      lockLeaseSeconds: 60,
    });
    const builtin = parse({ MARKETPLACE_REGISTRY_URL: "builtin:" });
    expect(builtin.ok && builtin.settings.marketplace.registry).toEqual({ kind: "builtin" });
    const https = parse({ MARKETPLACE_REGISTRY_URL: " https://registry.example/index.json ", MARKETPLACE_LOCK_LEASE_SECONDS: "30" });
    expect(https.ok && https.settings.marketplace).toMatchObject({
      registry: { kind: "https", url: "https://registry.example/index.json" },
      lockLeaseSeconds: 30,
    });
  });

  it.each([
    ["MARKETPLACE_REGISTRY_URL", "http://registry.example/index.json"],
    ["MARKETPLACE_REGISTRY_URL", "https://user:secret-token@registry.example/"],
    ["MARKETPLACE_REGISTRY_URL", "not a url"],
    ["MARKETPLACE_REGISTRY_TIMEOUT_SECONDS", "0"],
    ["MARKETPLACE_REGISTRY_MAX_BYTES", "10"],
    ["MARKETPLACE_LOCK_LEASE_SECONDS", "1.5"],
  ])("refuses %s=%s, naming the variable, never the value", (name, value) => {
    const r = parse({ [name]: value });
    expect(r.ok).toBe(false);
    const errors = r.ok ? [] : r.errors;
    expect(errors.join(" ")).toContain(name);
    expect(errors.join(" ")).not.toContain("secret-token");
  });
});

/**
 * Settings profiles: named, versioned snapshots `{description, env,
 * secret_keys}`; versions, diff against the live overlay, apply (replaces the overlay), rollback
 * (appends a copy), delete; `@` names reserved; secrets masked and sealed.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { postTelegram } from "../helpers/webhooks";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { must } from "../../src/platform/must";

const CAP = "CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR";
const DEPTH = "CONVERSATIONS_THREAD_QUEUE_DEPTH";
const PREFIX = "CONVERSATIONS_PREFIX";
const WEBHOOK = "CHANNEL_TELEGRAM_WEBHOOK_SECRET";

const put = async (name: string, body: unknown) => call("PUT", `/api/config/profiles/${name}`, { key: await admin(), body });
const get = async (path: string) => call("GET", path, { key: await admin() });
const post = async (path: string, body?: unknown) => call("POST", path, { key: await admin(), body });

async function overlay() {
  return (await env.DB.prepare("SELECT name, value, secret FROM settings_overlay ORDER BY name").all<{ name: string; value: string; secret: number }>())
    .results;
}
async function storedGeneration(): Promise<number> {
  return must(await env.DB.prepare("SELECT generation FROM settings_generation WHERE id = 1").first<number>("generation"), "the row");
}

afterEach(async () => {
  await env.DB.prepare("DELETE FROM settings_overlay").run();
  expect((await post("/api/config/reload")).status).toBe(200);
});

describe("profile lifecycle", () => {
  it("versions every PUT, reads any version, rolls back by appending, and deletes every version", async () => {
    const name = uniq("prod");
    const v1 = await put(name, { description: "first", env: { [CAP]: "5" } });
    expect(v1.status, JSON.stringify(v1.body)).toBe(200);
    expect(v1.body.data).toMatchObject({ created: true, profile: { name, version: 1, description: "first", env: { [CAP]: "5" }, secret_keys: [] } });
    const v2 = await put(name, { description: "second", env: { [CAP]: 6, [DEPTH]: "9" } });
    expect(v2.body.data).toMatchObject({ created: false, profile: { version: 2, description: "second", env: { [CAP]: "6", [DEPTH]: "9" } } });

    expect((await get(`/api/config/profiles/${name}`)).body.data).toMatchObject({ version: 2, description: "second" });
    const versions = await get(`/api/config/profiles/${name}/versions`);
    expect(versions.body.data).toMatchObject({ total: 2, page: 1, next_page: null, truncated: false });
    expect(versions.body.data.items.map((v: { version: number; names: string[] }) => [v.version, v.names])).toEqual([
      [2, [CAP, DEPTH]],
      [1, [CAP]],
    ]);
    expect((await get(`/api/config/profiles/${name}/versions/1`)).body.data).toMatchObject({ version: 1, description: "first", env: { [CAP]: "5" } });

    const rb = await post(`/api/config/profiles/${name}/rollback`, { version: 1 });
    expect(rb.status).toBe(200);
    expect(rb.body.data).toMatchObject({ version: 3, description: "first", env: { [CAP]: "5" } });
    expect((await get(`/api/config/profiles/${name}`)).body.data.version).toBe(3);

    const list = await get("/api/config/profiles");
    expect(list.body.data.items.find((p: { name: string }) => p.name === name)).toMatchObject({ version: 3, names: [CAP] });

    const del = await call("DELETE", `/api/config/profiles/${name}`, { key: await admin() });
    expect(del.body.data).toEqual({ name, deleted: true, versions: 3 });
    expect((await get(`/api/config/profiles/${name}`)).status).toBe(404);
    expect((await call("DELETE", `/api/config/profiles/${name}`, { key: await admin() })).status).toBe(404);
  });

  it("answers 404 for a missing profile or version", async () => {
    const name = uniq("p");
    expect((await get(`/api/config/profiles/${name}/versions`)).status).toBe(404);
    expect((await post(`/api/config/profiles/${name}/apply`)).status).toBe(404);
    expect((await post(`/api/config/profiles/${name}/diff`)).status).toBe(404);
    await put(name, { env: {} });
    const missing = await get(`/api/config/profiles/${name}/versions/7`);
    expect(missing.status).toBe(404);
    expect(missing.body.error).toBe("profile version not found");
    expect((await post(`/api/config/profiles/${name}/rollback`, { version: 7 })).status).toBe(404);
    expect((await post(`/api/config/profiles/${name}/apply`, { version: 7 })).status).toBe(404);
  });

  it.each(["@live", "@", "@previous"])("refuses the reserved name %s on every door (400)", async (name) => {
    const enc = encodeURIComponent(name);
    for (const [method, path, body] of [
      ["PUT", `/api/config/profiles/${enc}`, { env: {} }],
      ["GET", `/api/config/profiles/${enc}`, undefined],
      ["DELETE", `/api/config/profiles/${enc}`, undefined],
      ["POST", `/api/config/profiles/${enc}/apply`, undefined],
      ["GET", `/api/config/profiles/${enc}/versions`, undefined],
    ] as const) {
      const r = await call(method, path, { key: await admin(), body });
      expect(r.status, `${method} ${path}`).toBe(400);
      expect(r.body.error).toContain("reserved");
    }
  });
});

describe("profile validation writes nothing", () => {
  it.each([
    ["an unknown name", { env: { NOT_A_SETTING_fzqmark: "1" } }, "env"],
    ["an env-only setting", { env: { ACCESS_CONTROL_BOOTSTRAP_TOKEN: "x" } }, "env"],
    ["secret_keys naming no entry", { env: { [CAP]: "3" }, secret_keys: [PREFIX] }, "secret_keys"],
    ["an invalid combination", { env: { CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS: "777777" } }, "CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS"],
    ["a bad value", { env: { [CAP]: "-1" } }, CAP],
    ["null for a secret never stored", { env: { [WEBHOOK]: null } }, WEBHOOK],
    ["null for a non-secret", { env: { [CAP]: null } }, CAP],
    ["an unknown field", { env: {}, extra: 1 }, "extra"],
    ["a value nested past the JSON bound", { env: { CONNECTORS_PROVIDERS: JSON.parse("[".repeat(5000) + "]".repeat(5000)) } }, "nest"],
  ])("400 for %s", async (_what, body, names) => {
    const name = uniq("bad");
    const r = await put(name, body);
    expect(r.status).toBe(400);
    expect(r.body.error).toContain(names);
    expect(r.body.error).not.toContain("777777");
    expect(r.body.error.toLowerCase()).not.toContain("fzqmark");
    expect((await get(`/api/config/profiles/${name}`)).status).toBe(404);
  });
});

describe("secrets in profiles", () => {
  it("are null in every view, sealed at rest, and kept by a PUT that sends null", async () => {
    const name = uniq("sec");
    const r = await put(name, { env: { [WEBHOOK]: "profile-webhook-secret", [PREFIX]: "hidden-prefix", [CAP]: "7" }, secret_keys: [PREFIX] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.profile).toMatchObject({ env: { [WEBHOOK]: null, [PREFIX]: null, [CAP]: "7" }, secret_keys: [WEBHOOK, PREFIX] });
    const row = await env.DB.prepare("SELECT env, sealed FROM config_profiles WHERE name = ?").bind(name).first<{ env: string; sealed: string }>();
    expect(JSON.parse(must(row, "row").env)).toEqual({ [CAP]: "7" });
    expect(Object.keys(JSON.parse(must(row, "row").sealed)).sort()).toEqual([WEBHOOK, PREFIX]);
    expect(must(row, "row").sealed).not.toContain("profile-webhook-secret");
    expect(must(row, "row").sealed).not.toContain("hidden-prefix");
    for (const path of [
      `/api/config/profiles/${name}`,
      `/api/config/profiles/${name}/versions`,
      `/api/config/profiles/${name}/versions/1`,
      "/api/config/profiles",
    ]) {
      const text = JSON.stringify((await get(path)).body);
      expect(text).not.toContain("profile-webhook-secret");
      expect(text).not.toContain("hidden-prefix");
    }

    // Round trip: what GET shows, PUT back with one change; the secrets keep their values.
    const view = (await get(`/api/config/profiles/${name}`)).body.data;
    const v2 = await put(name, { description: "edited", env: { ...view.env, [CAP]: "8" }, secret_keys: view.secret_keys });
    expect(v2.status, JSON.stringify(v2.body)).toBe(200);
    const applied = await post(`/api/config/profiles/${name}/apply`);
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    // The kept webhook secret is the one in force.
    const update = { update_id: Math.floor(Math.random() * 1e9), message: { message_id: 1, chat: { id: 7, type: "private" }, from: { id: 7 }, text: "hi" } };
    expect((await postTelegram(update, { secret: "profile-webhook-secret" })).status).toBe(200);
    expect((await postTelegram({ ...update, update_id: update.update_id + 1 })).status).toBe(401);
    const rows = await overlay();
    expect(rows.map((x) => [x.name, x.secret])).toEqual(
      [
        [WEBHOOK, 1],
        [PREFIX, 1],
        [CAP, 0],
      ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
    expect(JSON.stringify(rows)).not.toContain("profile-webhook-secret");
  });
});

describe("diff and apply", () => {
  it("diffs a profile against the live overlay: added, removed, changed, unchanged; secrets without values", async () => {
    const key = await admin();
    expect(
      (await call("POST", "/api/config/env", { key, body: { set: { [CAP]: "5", [PREFIX]: "live", CONVERSATIONS_MAX_OUTBOUND_CHUNKS: "4" } } })).status,
    ).toBe(200);
    const name = uniq("diff");
    await put(name, { env: { [CAP]: "3", [DEPTH]: "9", [WEBHOOK]: "diff-secret", CONVERSATIONS_MAX_OUTBOUND_CHUNKS: 4 } });
    const d = await post(`/api/config/profiles/${name}/diff`);
    expect(d.status, JSON.stringify(d.body)).toBe(200);
    expect(d.body.data).toEqual({
      name,
      version: 1,
      generation: await storedGeneration(),
      added: [
        { name: WEBHOOK, secret: true },
        { name: DEPTH, secret: false, value: "9" },
      ],
      removed: [{ name: PREFIX, secret: false, value: "live" }],
      changed: [{ name: CAP, secret: false, from: "5", to: "3" }],
      unchanged: ["CONVERSATIONS_MAX_OUTBOUND_CHUNKS"],
    });
    expect(JSON.stringify(d.body)).not.toContain("diff-secret");
    // A read: config:read may diff.
    const reader = await mintKey({ scopes: ["config:read"] });
    expect((await call("POST", `/api/config/profiles/${name}/diff`, { key: reader.key, body: { version: 1 } })).status).toBe(200);
    expect((await call("POST", `/api/config/profiles/${name}/apply`, { key: reader.key })).status).toBe(403);
  });

  it("applies a profile (or one of its versions) as the whole overlay, bumping the generation", async () => {
    const key = await admin();
    await call("POST", "/api/config/env", { key, body: { set: { [PREFIX]: "gone-after-apply" } } });
    const name = uniq("apply");
    await put(name, { env: { [CAP]: "3" } });
    await put(name, { env: { [CAP]: "4", [DEPTH]: "11" } });
    const g = await storedGeneration();
    const a = await post(`/api/config/profiles/${name}/apply`, { version: 1 });
    expect(a.body.data).toEqual({ name, version: 1, generation: g + 1, names: [CAP] });
    expect(await overlay()).toEqual([{ name: CAP, value: "3", secret: 0 }]);
    const view = (await get("/api/config/env")).body.data;
    expect(view.in_force_generation).toBe(g + 1);
    expect(view.settings.find((s: { name: string }) => s.name === CAP)).toMatchObject({ source: "overlay", value: "3" });
    expect(view.settings.find((s: { name: string }) => s.name === PREFIX)).toMatchObject({ source: "default", value: "conversations" });

    const b = await post(`/api/config/profiles/${name}/apply`);
    expect(b.body.data).toMatchObject({ version: 2, generation: g + 2, names: [CAP, DEPTH] });
    expect((await overlay()).map((r) => r.name)).toEqual([CAP, DEPTH]);
  });

  it("refuses to apply a version that is invalid now, leaving the overlay as it was", async () => {
    const key = await admin();
    await call("POST", "/api/config/env", { key, body: { set: { [CAP]: "5" } } });
    const name = uniq("stale");
    // A version stored when the env allowed it (written directly: the PUT would refuse it today).
    await env.DB.prepare("INSERT INTO config_profiles (name, version, description, env, sealed, secret_keys, created_at) VALUES (?, 1, '', ?, '{}', '[]', 'x')")
      .bind(name, JSON.stringify({ CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS: "600" }))
      .run();
    const g = await storedGeneration();
    const r = await post(`/api/config/profiles/${name}/apply`);
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS");
    expect(await overlay()).toEqual([{ name: CAP, value: "5", secret: 0 }]);
    expect(await storedGeneration()).toBe(g);
  });
});

/**
 * The states doors: declarations, records, deltas, fold, the audit trail, search and
 * subjects, through the Worker against real StateStore objects and D1.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, admin, call, fetchWithEnv, mintKey, uniq } from "../helpers/http";

const PROFILE = { type: "object", properties: { name: { type: "string" }, tags: { type: "array", items: { type: "string" } } }, additionalProperties: false };

async function declare(body: Record<string, unknown> = {}, name = uniq("st").toLowerCase()) {
  const res = await call("PUT", `/api/states/${name}`, { key: await admin(), body: { schema: PROFILE, subject_kinds: ["thread", "customer"], ...body } });
  return { name, res };
}

const rec = (state: string, key: string, kind = "customer", target = "tool/echo") =>
  `/api/states/${state}/records/${target}/${kind}/${encodeURIComponent(key)}`;

describe("state declarations", () => {
  it("declares, reads back with computed parts, lists, and deletes", async () => {
    const key = await admin();
    const { name, res } = await declare({ description: "who they are", retention_days: 30 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({
      name,
      description: "who they are",
      schema: PROFILE,
      effective_schema: PROFILE,
      subject_kinds: ["thread", "customer"],
      default_subject_kind: "thread",
      retention_days: 30,
      attachments: [],
      regimes: [],
      updated_at: expect.stringMatching(/Z$/),
    });
    const { held, ...view } = res.body.data;
    expect(held).toEqual([]);
    expect((await call("GET", `/api/states/${name}`, { key })).body.data).toEqual(view);
    const list = await call("GET", "/api/states?pageSize=200", { key });
    expect(list.body.data.items.map((s: any) => s.name)).toContain(name);
    const del = await call("DELETE", `/api/states/${name}`, { key });
    expect(del.body.data).toEqual({ name, deleted: true, records: 0 });
    expect((await call("GET", `/api/states/${name}`, { key })).status).toBe(404);
    expect((await call("DELETE", `/api/states/${name}`, { key })).status).toBe(404);
  });

  it("a TemplatedText schema renders with mustache and is served back as given", async () => {
    const schema = { content: '{"type":"object","properties":{"{{field}}":{"type":"string"}}}', kwargs: { field: "nickname" } };
    const { res } = await declare({ schema });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.schema).toEqual(schema);
    expect(res.body.data.effective_schema).toEqual({ type: "object", properties: { nickname: { type: "string" } } });
  });

  it.each([
    ["an unknown field", { colour: "red" }, "colour"],
    ["a computed field", { effective_schema: {} }, "effective_schema"],
    ["a bad subject kind", { subject_kinds: ["Thread"] }, "subject_kinds"],
    ["a duplicate subject kind", { subject_kinds: ["a", "a"] }, "subject_kinds"],
    ["a default outside the kinds", { default_subject_kind: "person" }, "default_subject_kind"],
    ["retention 0", { retention_days: 0 }, "retention_days"],
    ["retention past the bound", { retention_days: 1073741824 }, "retention_days"],
    ["a schema not rooted in an object", { schema: { type: "array" } }, "schema"],
    ["a schema without properties", { schema: { type: "object", properties: {} } }, "schema"],
    ["a remote $ref", { schema: { type: "object", properties: { a: { $ref: "https://x.example/s.json" } } } }, "schema"],
  ])("400 for %s", async (_what, body, field) => {
    const { res } = await declare(body);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error).toContain(field);
  });

  it("once records exist a re-declare may only add properties, and a kind in use stays (409)", async () => {
    const key = await admin();
    const { name } = await declare();
    // No records yet: anything goes.
    expect((await declare({ schema: { type: "object", properties: { name: { type: "string" } } } }, name)).res.status).toBe(200);
    expect((await declare({}, name)).res.status).toBe(200);
    expect((await call("PUT", rec(name, "c1"), { key, body: { name: "Ann" } })).status).toBe(200);
    const narrowing = await declare({ schema: { type: "object", properties: { name: { type: "string" } } } }, name);
    expect(narrowing.res.status).toBe(409);
    const changed = await declare({ schema: { ...PROFILE, properties: { ...PROFILE.properties, name: { type: "integer" } } } }, name);
    expect(changed.res.status).toBe(409);
    const added = await declare({ schema: { ...PROFILE, properties: { ...PROFILE.properties, age: { type: "integer" } } } }, name);
    expect(added.res.status, JSON.stringify(added.res.body)).toBe(200);
    const dropKind = await declare({ schema: added.res.body.data.schema, subject_kinds: ["thread"] }, name);
    expect(dropKind.res.status).toBe(409);
    expect((await declare({ schema: added.res.body.data.schema, subject_kinds: ["customer"], retention_days: 7 }, name)).res.status).toBe(200);
  });

  it("stats and consumers", async () => {
    const key = await admin();
    const { name } = await declare();
    await call("PUT", rec(name, "a"), { key, body: { name: "A" } });
    await call("PUT", rec(name, "t1", "thread"), { key, body: {} });
    const stats = await call("GET", `/api/states/${name}/stats`, { key });
    expect(stats.body.data).toMatchObject({ name, records: 2, by_kind: { customer: 1, thread: 1 }, writes: 2 });
    expect((await call("GET", `/api/states/${name}/consumers`, { key })).body.data).toEqual({ items: [], total: 0 });
    expect((await call("GET", `/api/states/nope-${name}/stats`, { key })).status).toBe(404);
  });

  it("grants: reads need states:read, writes states:write; 501 states-not-configured without a store", async () => {
    const { name } = await declare();
    const reader = await mintKey({ scopes: ["states:read"] });
    expect((await call("GET", `/api/states/${name}`, { key: reader.key })).status).toBe(200);
    expect((await call("PUT", `/api/states/${name}`, { key: reader.key, body: { schema: PROFILE, subject_kinds: ["thread"] } })).status).toBe(403);
    const res = await fetchWithEnv({ ...env, STATES_STORE_URL: "" }, new Request(`${BASE}/api/states/${name}`, { headers: { "x-api-key": await admin() } }));
    expect(res.status).toBe(501);
    expect(await res.json()).toMatchObject({ code: "states-not-configured" });
  });
});

describe("state records", () => {
  it("replace, read, merge, erase; the effective schema guards every write", async () => {
    const key = await admin();
    const { name } = await declare();
    expect((await call("GET", rec(name, "c1"), { key })).body).toEqual({ data: null });
    const put = await call("PUT", rec(name, "c1"), { key, body: { name: "Ann", tags: ["vip"] } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const subject = { target_kind: "tool", target_name: "echo", kind: "customer", key: "c1" };
    expect(put.body.data).toEqual({ state: name, subject, data: { name: "Ann", tags: ["vip"] }, seq: 1, canonical_subject: subject, folded_from: [] });
    const patched = await call("PATCH", rec(name, "c1"), { key, body: { name: "Anne" } });
    expect(patched.body.data).toMatchObject({ data: { name: "Anne", tags: ["vip"] }, seq: 2 });
    const bad = await call("PUT", rec(name, "c1"), { key, body: { name: 5, secret: "s3cr3t-value" } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).not.toContain("s3cr3t-value");
    expect((await call("GET", rec(name, "c1"), { key })).body.data.data).toEqual({ name: "Anne", tags: ["vip"] });
    expect((await call("DELETE", rec(name, "c1"), { key })).body.data).toEqual({ erased: true });
    expect((await call("DELETE", rec(name, "c1"), { key })).body.data).toEqual({ erased: false });
    expect((await call("GET", rec(name, "c1"), { key })).body.data).toBeNull();
  });

  it("refuses: unknown state 404, undeclared kind 400, bad segments 400, an unknown person 404", async () => {
    const key = await admin();
    const { name } = await declare();
    expect((await call("PUT", rec(`no-${name}`, "c1"), { key, body: {} })).status).toBe(404);
    expect((await call("PUT", rec(name, "c1", "order"), { key, body: {} })).status).toBe(400);
    expect((await call("PUT", rec(name, "c1", "customer", "robot/echo"), { key, body: {} })).status).toBe(400);
    expect((await call("PUT", `/api/states/${name}/records/tool/echo/customer/%20`, { key, body: {} })).status).toBe(400);
    const persons = await declare({ subject_kinds: ["person"] });
    expect((await call("PUT", rec(persons.name, crypto.randomUUID(), "person"), { key, body: {} })).status).toBe(404);
  });

  it("a key with / routes as one segment, even when its tail looks like a sub-action", async () => {
    const key = await admin();
    const { name } = await declare();
    const threadKey = "bridge:web:root/writes";
    expect((await call("PUT", rec(name, threadKey, "thread"), { key, body: { name: "T" } })).status).toBe(200);
    const read = await call("GET", rec(name, threadKey, "thread"), { key });
    expect(read.body.data.subject.key).toBe(threadKey);
    const writes = await call("GET", `${rec(name, threadKey, "thread")}/writes`, { key });
    expect(writes.body.data.items).toHaveLength(1);
  });

  it("deltas: ops apply in order; a replayed op_id or an empty batch answers applied: false", async () => {
    const key = await admin();
    const { name } = await declare();
    const url = `${rec(name, "c2")}/deltas`;
    const first = await call("POST", url, {
      key,
      body: {
        op_id: "op-1",
        ops: [
          { op: "set", path: ["name"], value: "Bo" },
          { op: "set", path: ["tags"], value: [] },
          { op: "set", path: ["tags", "-"], value: "new" },
        ],
      },
    });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.data).toEqual({ applied: true, data: { name: "Bo", tags: ["new"] }, seq: 1, skipped: [] });
    const replay = await call("POST", url, { key, body: { op_id: "op-1", ops: [{ op: "set", path: ["name"], value: "Other" }] } });
    expect(replay.body.data).toMatchObject({ applied: false, data: { name: "Bo" }, seq: 1 });
    expect((await call("POST", url, { key, body: { ops: [] } })).body.data).toMatchObject({ applied: false, seq: 1 });
    const absent = await call("POST", url, { key, body: { ops: [{ op: "remove", path: ["nothing"] }] } });
    expect(absent.body.data).toMatchObject({ applied: true, skipped: [0] });
    expect((await call("POST", url, { key, body: { ops: [{ op: "set", path: ["name"], value: 7 }] } })).status).toBe(400);
    expect((await call("POST", url, { key, body: { ops: [{ op: "explode", path: [] }] } })).status).toBe(400);
    const audit = await call("GET", `${rec(name, "c2")}/writes?limit=1`, { key });
    // The all-skipped batch still counts as a write (seq 2); its audit row names no changed path.
    expect(audit.body.data.items[0]).toMatchObject({ seq: 2, origin: { door: "api", actor: "root" }, paths: [] });
    expect(audit.body.data.next_cursor).toBe("2");
    const older = await call("GET", `${rec(name, "c2")}/writes?limit=5&cursor=2`, { key });
    expect(older.body.data.items.map((w: any) => w.seq)).toEqual([1]);
    expect(older.body.data.items[0].origin.op_id).toBe("op-1");
  });

  it("fold: switch drops the folded record; merge keeps the target's fields and gains the rest; followers flatten", async () => {
    const key = await admin();
    const { name } = await declare();
    await call("PUT", rec(name, "old"), { key, body: { name: "Old", tags: ["a"] } });
    await call("PUT", rec(name, "new"), { key, body: { name: "New" } });
    const into = { target_kind: "tool", target_name: "echo", kind: "customer", key: "new" };
    const merged = await call("POST", `${rec(name, "old")}/fold`, { key, body: { into, mode: "merge" } });
    expect(merged.status, JSON.stringify(merged.body)).toBe(200);
    expect(merged.body.data).toMatchObject({ mode: "merge", already: false, flattened: 0, merged_members: 1 });
    const viaOld = await call("GET", rec(name, "old"), { key });
    expect(viaOld.body.data).toMatchObject({ data: { name: "New", tags: ["a"] }, canonical_subject: into, subject: { key: "old" } });
    expect(viaOld.body.data.folded_from.map((s: any) => s.key)).toEqual(["old"]);
    // Writing through the folded subject writes the canonical record.
    await call("PATCH", rec(name, "old"), { key, body: { name: "Both" } });
    expect((await call("GET", rec(name, "new"), { key })).body.data.data.name).toBe("Both");
    expect((await call("POST", `${rec(name, "old")}/fold`, { key, body: { into, mode: "switch" } })).body.data.already).toBe(true);

    // Fold the canonical one onward: its follower comes along.
    await call("PUT", rec(name, "newest"), { key, body: { name: "Newest" } });
    const onward = await call("POST", `${rec(name, "new")}/fold`, { key, body: { into: { ...into, key: "newest" }, mode: "switch" } });
    expect(onward.body.data).toMatchObject({ mode: "switch", flattened: 1 });
    expect((await call("GET", rec(name, "old"), { key })).body.data.data).toEqual({ name: "Newest" });
    expect((await call("POST", `${rec(name, "x")}/fold`, { key, body: { into: { ...into, target_name: "other" }, mode: "switch" } })).status).toBe(400);
  });

  it("search by containment and list subjects, paged by cursor", async () => {
    const key = await admin();
    const { name } = await declare();
    for (const [k, tags] of [
      ["s1", ["vip", "eu"]],
      ["s2", ["eu"]],
      ["s3", ["vip"]],
    ] as const)
      await call("PUT", rec(name, k), { key, body: { name: k, tags: [...tags] } });
    await call("PUT", rec(name, "t", "thread"), { key, body: { tags: ["vip"] } });
    const found = await call("POST", `/api/states/${name}/records/search`, { key, body: { filters: { tags: ["vip"] }, limit: 2 } });
    expect(found.status, JSON.stringify(found.body)).toBe(200);
    expect(found.body.data.matches.map((m: any) => m.subject.key)).toEqual(["s1", "s3"]);
    expect(found.body.data.next_cursor).not.toBeNull();
    const rest = await call("POST", `/api/states/${name}/records/search`, {
      key,
      body: { filters: { tags: ["vip"] }, limit: 2, cursor: found.body.data.next_cursor },
    });
    expect(rest.body.data.matches.map((m: any) => m.subject.key)).toEqual(["t"]);
    expect(rest.body.data.next_cursor).toBeNull();
    const customers = await call("GET", `/api/states/${name}/subjects?kind=customer&limit=2`, { key });
    expect(customers.body.data.subjects.map((s: any) => s.key)).toEqual(["s1", "s2"]);
    const next = await call("GET", `/api/states/${name}/subjects?kind=customer&limit=2&cursor=${encodeURIComponent(customers.body.data.next_cursor)}`, { key });
    expect(next.body.data).toMatchObject({ subjects: [{ key: "s3" }], next_cursor: null, held: [] });
    expect((await call("POST", `/api/states/no-${name}/records/search`, { key, body: { filters: {} } })).status).toBe(404);
  });
});

/**
 * The states sections of a backup: templates and state declarations with
 * their attachments survive export, a wipe (D1 rows deleted and the StateStore objects dropped)
 * and import; a target config binding them comes back and still validates; a state the object
 * refuses stops the import at that row with the rows before it applied, and the same import run
 * again converges.
 */
import { env } from "cloudflare:workers";
import { publishAccessChanges } from "../../src/platform/epochs/publish";
import { describe, expect, it } from "vitest";
import { stateStoreStub } from "../../src/states/rpc";
import { BASE, admin, call, fetchWithEnv, uniq } from "../helpers/http";
import { count, exported, importDoc } from "./helpers";

const BASE_SCHEMA = { type: "object", properties: { name: { type: "string" } } };

function template() {
  return {
    kind: "state-template",
    description: "orders",
    parameters: { max: { schema: { type: "integer", minimum: 1 }, default: 10 } },
    schema: { type: "object", properties: { items: { type: "array", maxItems: { $parameter: "max" }, items: { type: "object" } } } },
    regimes: [{ path: ["items"], regime: "composing" }],
    declarations: { schema: { type: "object", properties: { currency: { type: "string" } }, additionalProperties: false } },
    template_jq: { count: { purpose: "input", params: [], jq: { content: "(.items // []) | length" } } },
  };
}

async function ok(r: { status: number; body: any }, what: string) {
  if (r.status !== 200) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data;
}

/** Forgets the states of this test in D1 and in their objects, as a fresh deployment would not have them. */
async function forget(states: string[], templates: string[]) {
  for (const s of states) await stateStoreStub(env, s).drop();
  await env.DB.batch([
    ...states.map((s) => env.DB.prepare("DELETE FROM states WHERE name = ?").bind(s)),
    ...templates.map((t) => env.DB.prepare("DELETE FROM state_templates WHERE name = ?").bind(t)),
    env.DB.prepare("DELETE FROM conversation_configs"),
  ]);
  await publishAccessChanges(env);
}

describe("states in a backup", () => {
  it("templates, declarations and attachments come back after the objects are gone; a binding on them still validates", async () => {
    const key = await admin();
    const tpl = `orders-${crypto.randomUUID().slice(0, 8)}`;
    const plain = uniq("st").toLowerCase();
    const templated = uniq("st").toLowerCase();
    await ok(await call("PUT", `/api/state-templates/${tpl}`, { key, body: template() }), "template");
    await ok(
      await call("PUT", `/api/states/${plain}`, {
        key,
        body: { description: "customers", schema: BASE_SCHEMA, subject_kinds: ["customer", "thread"], retention_days: 30 },
      }),
      "state",
    );
    await ok(
      await call("PUT", `/api/states/${plain}/attachments/${tpl}`, {
        key,
        body: { path: ["orders"], parameters: { max: 3 }, declarations: { currency: "EUR" } },
      }),
      "attach",
    );
    const schema = { content: '{"type":"object","properties":{"{{field}}":{"type":"string"}}}', kwargs: { field: "nickname" } };
    await ok(await call("PUT", `/api/states/${templated}`, { key, body: { schema, subject_kinds: ["thread"] } }), "templated state");
    const binding = { states: [{ state: plain, subject_expr: { content: ".thread" }, input_injections: [{ into: "count", template_jq: `${tpl}.count` }] }] };
    await ok(
      await call("PUT", "/api/conversation-configs/tool/echo", { key, body: { target_kind: "tool", target_name: "echo", state_binding: binding } }),
      "config",
    );

    const views = async () => Promise.all([plain, templated].map(async (s) => (await call("GET", `/api/states/${s}`, { key })).body.data));
    const before = await views();
    const document = await exported(["state-templates", "states", "target-configs"]);
    expect(document.sections.states.find((s: any) => s.name === plain)).toEqual({
      name: plain,
      description: "customers",
      schema: BASE_SCHEMA,
      subject_kinds: ["customer", "thread"],
      default_subject_kind: "customer",
      retention_days: 30,
      attachments: [{ template: tpl, path: ["orders"], parameters: { max: 3 }, declarations: { currency: "EUR" }, options: {} }],
    });
    expect(document.sections.states.find((s: any) => s.name === templated).schema).toEqual(schema);

    await forget([plain, templated], [tpl]);
    expect((await call("GET", `/api/states/${plain}`, { key })).status).toBe(404);
    expect((await call("GET", `/api/state-templates/${tpl}`, { key })).status).toBe(404);

    const r = await importDoc(document);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.sections.map((s: any) => s.name)).toEqual(["state-templates", "states", "target-configs"]);
    const after = await views();
    const withoutTime = (v: any) => ({ ...v, updated_at: undefined });
    expect(after.map(withoutTime)).toEqual(before.map(withoutTime));
    expect((await call("GET", `/api/state-templates/${tpl}`, { key })).body.data).toEqual({
      ...template(),
      name: tpl,
      trace: {},
      reconcile: {},
      declarations: template().declarations,
      template_jq: { count: { purpose: "input", description: "", params: [], jq: { content: "(.items // []) | length", kwargs: {} } } },
    });
    expect((await call("GET", "/api/conversation-configs/tool/echo", { key })).body.data.state_binding.states[0].state).toBe(plain);
    // Records are data, not configuration: none travelled.
    expect((await call("GET", `/api/states/${plain}/stats`, { key })).body.data.records).toBe(0);
  });

  it("a state the object refuses stops the import at that row; earlier rows stay; fixed, the same import converges", async () => {
    const key = await admin();
    const fresh = uniq("st").toLowerCase();
    const held = uniq("st").toLowerCase();
    await ok(await call("PUT", `/api/states/${held}`, { key, body: { schema: BASE_SCHEMA, subject_kinds: ["customer"] } }), "state");
    await ok(await call("PUT", `/api/states/${held}/records/tool/echo/customer/c1`, { key, body: { data: { name: "Ann" } } }), "record");
    const decl = (name: string, schema: object) => ({
      name,
      description: "",
      schema,
      subject_kinds: ["customer"],
      default_subject_kind: "customer",
      retention_days: null,
      attachments: [],
    });
    const narrowing = { type: "object", properties: { other: { type: "string" } } };
    const document = { version: 1, exported_at: "x", sections: { "text-resources": [], states: [decl(fresh, BASE_SCHEMA), decl(held, narrowing)] } };
    const r = await importDoc(document);
    expect(r.status, JSON.stringify(r.body)).toBe(409);
    expect(r.body.error).toContain("import stopped at section states");
    expect(r.body.error).toContain("sections.states.1");
    expect(r.body.applied).toEqual([{ name: "text-resources", applied: 0 }]);
    expect((await call("GET", `/api/states/${fresh}`, { key })).status).toBe(200);
    expect((await call("GET", `/api/states/${held}`, { key })).body.data.schema).toEqual(BASE_SCHEMA);

    document.sections.states[1] = decl(held, { type: "object", properties: { name: { type: "string" }, other: { type: "string" } } });
    const again = await importDoc(document);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect((await call("GET", `/api/states/${held}`, { key })).body.data.schema.properties).toHaveProperty("other");
    expect(await count("SELECT COUNT(*) AS n FROM states WHERE name IN (?, ?)", fresh, held)).toBe(2);
  });

  it("a states section without the states store is 501, and nothing is written", async () => {
    const key = await admin();
    const name = uniq("st").toLowerCase();
    const body = {
      document: {
        version: 1,
        exported_at: "x",
        sections: {
          "text-resources": [{ id: name, content: "x", created_at: "x", updated_at: "x" }],
          states: [
            { name, description: "", schema: BASE_SCHEMA, subject_kinds: ["thread"], default_subject_kind: "thread", retention_days: null, attachments: [] },
          ],
        },
      },
    };
    const res = await fetchWithEnv(
      { ...env, STATES_STORE_URL: "" },
      new Request(`${BASE}/api/backup/import`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
    expect(res.status).toBe(501);
    expect(await res.json()).toMatchObject({ code: "states-not-configured" });
    expect(await count("SELECT COUNT(*) AS n FROM text_resources WHERE id = ?", name)).toBe(0);
  });
});

/**
 * State templates: create, replace, read, list and delete through the
 * Worker against real D1, and every refusal of the document.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, admin, call, fetchWithEnv, mintKey, uniq } from "../helpers/http";

const MARK = "zqmarkq";

/** A full template touching every part of the document. */
const FULL = {
  kind: "state-template",
  description: "orders a customer placed",
  parameters: {
    max_items: { schema: { type: "integer", minimum: 1 }, default: 10 },
    item_type: { schema: { type: "object" } },
  },
  schema: {
    type: "object",
    properties: { items: { type: "array", maxItems: { $parameter: "max_items" }, items: { $parameter: "item_type" } } },
  },
  regimes: [{ path: ["items"], regime: "composing" }],
  declarations: { schema: { type: "object" }, check: { content: ".items | length >= 0" } },
  trace: { enabled: true },
  template_jq: {
    pick: {
      purpose: "input",
      description: "what the turn reads",
      params: ["limit"],
      jq: { content: ".items[:($params.limit // {{limit}})]", kwargs: { limit: 3 } },
    },
    add_item: {
      purpose: "update",
      reads: [["items"]],
      writes: [["items"]],
      jq: { content: '[{op: "set_by_key", path: ["items"], key: "id", items: [.input]}]' },
    },
    stored: { purpose: "update", jq: { id: "some-resource" } },
  },
  reconcile: { every: "1h" },
};

const MINIMAL = { kind: "state-template", schema: { type: "object", properties: { a: { type: "string" } } } };

const tplName = () => uniq("tpl").toLowerCase();
const path = (name: string) => `/api/state-templates/${name}`;

async function put(name: string, body: unknown, query = "") {
  return call("PUT", `${path(name)}${query}`, { key: await admin(), body });
}

describe("state templates", () => {
  it("creates, reads back with defaults filled in, lists, replaces and deletes", async () => {
    const key = await admin();
    const name = tplName();
    const created = await put(name, FULL);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.data.name).toBe(name);
    expect(created.body.data.created).toBe(true);
    const doc = created.body.data.template;
    expect(doc).toMatchObject({ ...FULL, name });
    // Defaults of the programs are filled in; each purpose keeps only its own fields.
    expect(doc.template_jq.stored).toEqual({ purpose: "update", description: "", reads: [], writes: [], jq: { id: "some-resource", kwargs: {} } });
    expect(doc.template_jq.pick).not.toHaveProperty("reads");
    expect(doc.template_jq.add_item).not.toHaveProperty("params");

    const read = await call("GET", path(name), { key });
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(doc);

    const minimal = tplName();
    const m = await put(minimal, MINIMAL);
    expect(m.status, JSON.stringify(m.body)).toBe(200);
    expect(m.body.data.template).toEqual({
      kind: "state-template",
      name: minimal,
      description: "",
      parameters: {},
      schema: MINIMAL.schema,
      regimes: [],
      declarations: {},
      trace: {},
      template_jq: {},
      reconcile: {},
    });

    const list = await call("GET", "/api/state-templates?pageSize=200", { key });
    expect(list.status).toBe(200);
    const names = list.body.data.items.map((t: any) => t.name);
    expect(names).toEqual(expect.arrayContaining([name, minimal]));
    expect(names).toEqual([...names].sort());
    expect(list.body.data.total).toBeGreaterThanOrEqual(2);

    // A read-back document (with its name) is a valid body; replacing needs ?replace=true.
    const again = await put(name, { ...read.body.data, description: "changed" });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe("state template already exists; PUT with ?replace=true to replace it");
    expect((await put(name, MINIMAL, "?replace=false")).status).toBe(409);
    const replaced = await put(name, { ...read.body.data, description: "changed" }, "?replace=true");
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
    expect(replaced.body.data.created).toBe(false);
    expect((await call("GET", path(name), { key })).body.data.description).toBe("changed");
    // replace=true on a new name creates it.
    const fresh = tplName();
    expect((await put(fresh, MINIMAL, "?replace=true")).body.data.created).toBe(true);

    const del = await call("DELETE", path(name), { key });
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ name, deleted: true });
    const gone = await call("GET", path(name), { key });
    expect(gone.status).toBe(404);
    expect(gone.body.error).toBe("state template not found");
    const delAgain = await call("DELETE", path(name), { key });
    expect(delAgain.status).toBe(404);
    expect(delAgain.body.error).toBe("state template not found");
  });

  it("pages the listing", async () => {
    const key = await admin();
    await put(tplName(), MINIMAL);
    await put(tplName(), MINIMAL);
    const page = await call("GET", "/api/state-templates?pageSize=1&page=1", { key });
    expect(page.status).toBe(200);
    expect(page.body.data.items).toHaveLength(1);
    expect(page.body.data).toMatchObject({ page: 1, page_size: 1, next_page: 2, truncated: false });
    expect((await call("GET", "/api/state-templates?page=0", { key })).status).toBe(400);
  });

  it("a name in the body must equal the path's", async () => {
    const name = tplName();
    expect((await put(name, { ...MINIMAL, name })).status).toBe(200);
    const res = await put(tplName(), { ...MINIMAL, name: `other${MARK}` });
    expect(res.status).toBe(400);
    expect(res.body.error).toContain("name");
    expect(res.body.error).not.toContain(MARK);
  });

  it.each([
    ["a-", "a trailing hyphen"],
    ["a--b", "a double hyphen"],
    ["-a", "a leading hyphen"],
    ["1a", "a leading digit"],
    ["Abc", "capitals"],
    ["a_b", "an underscore"],
    [`a${"b".repeat(63)}`, "64 characters"],
  ])("400 for the name %s (%s)", async (name) => {
    const res = await put(encodeURIComponent(name), MINIMAL);
    expect(res.status).toBe(400);
    expect(res.body.error).toContain("name");
    expect((await call("GET", path(encodeURIComponent(name)), { key: await admin() })).status).toBe(400);
  });

  it("accepts the longest name (63 characters)", async () => {
    const name = `a${"b".repeat(62)}`;
    expect((await put(name, MINIMAL, "?replace=true")).status).toBe(200);
  });

  const prog = (p: Record<string, unknown>) => ({ ...MINIMAL, template_jq: { p } });

  it.each([
    ["kind missing", { schema: MINIMAL.schema }, "kind"],
    ["kind wrong", { ...MINIMAL, kind: `state${MARK}` }, "kind"],
    ["schema missing", { kind: "state-template" }, "schema"],
    ["an unknown key", { ...MINIMAL, [`colour${MARK}`]: "red" }, "does not take"],
    ["an unknown key in a parameter", { ...MINIMAL, parameters: { p: { schema: {}, [`x${MARK}`]: 1 } } }, "parameters.0"],
    ["an unknown key in a regime", { ...MINIMAL, regimes: [{ path: [], regime: "single", [`x${MARK}`]: 1 }] }, "regimes.0"],
    ["an unknown key in declarations", { ...MINIMAL, declarations: { [`x${MARK}`]: 1 } }, "declarations"],
    ["an unknown key in a program's jq", prog({ purpose: "input", jq: { content: ".", [`x${MARK}`]: 1 } }), "template_jq.0.jq"],
    ["a bad regime", { ...MINIMAL, regimes: [{ path: ["a"], regime: "mixed" }] }, "regimes.0.regime"],
    ["a bad parameter name", { ...MINIMAL, parameters: { [`Bad${MARK}`]: { schema: {} } } }, "parameters.0"],
    ["a parameter without a schema", { ...MINIMAL, parameters: { p: { default: 1 } } }, "parameters.0.schema"],
    ["a bad program name", { ...MINIMAL, template_jq: { [`bad-name${MARK}`]: { purpose: "input", jq: { content: "." } } } }, "template_jq.0"],
    ["a description too long", { ...MINIMAL, description: "x".repeat(2001) }, "description"],
    ["trace not an object", { ...MINIMAL, trace: [MARK] }, "trace"],
    ["reconcile not an object", { ...MINIMAL, reconcile: MARK }, "reconcile"],
    [
      "a $parameter naming an undeclared parameter",
      {
        ...MINIMAL,
        parameters: { known: { schema: {} } },
        schema: { type: "object", properties: { a: { type: "array", items: { $parameter: `unknown${MARK}` } } } },
      },
      "schema",
    ],
    [
      "a $parameter node deep in an array",
      { ...MINIMAL, schema: { type: "object", anyOf: [{}, { properties: { a: { $parameter: `p${MARK}` } } }] } },
      "schema",
    ],
    [
      "a $parameter node with other keys",
      { ...MINIMAL, parameters: { p: { schema: {} } }, schema: { type: "object", properties: { a: { $parameter: "p", type: "string" } } } },
      "schema",
    ],
    ["a program without a purpose", prog({ jq: { content: "." } }), "template_jq.0.purpose"],
    ["a program with an unknown purpose", prog({ purpose: `both${MARK}`, jq: { content: "." } }), "template_jq.0.purpose"],
    ["params on an update program", prog({ purpose: "update", params: ["a"], jq: { content: "." } }), "params: taken only by an input program"],
    ["writes on an input program", prog({ purpose: "input", writes: [["a"]], jq: { content: "." } }), "writes: taken only by an update program"],
    ["reads on an input program", prog({ purpose: "input", reads: [["a"]], jq: { content: "." } }), "reads: taken only by an update program"],
    ["a program with neither content nor id", prog({ purpose: "input", jq: { kwargs: {} } }), "template_jq.0.jq"],
    ["a program without jq", prog({ purpose: "input" }), "template_jq.0.jq"],
    ["a jq program that does not compile", prog({ purpose: "update", jq: { content: `.items |||| ${MARK}` } }), "template_jq.0.jq: does not compile as jq"],
    [
      "a jq program that does not compile once rendered",
      prog({ purpose: "input", jq: { content: ".a | {{op}} .b", kwargs: { op: `${MARK} ]` } } }),
      "template_jq.0.jq: does not compile as jq",
    ],
    [
      "an update program using $params (bound only for input programs)",
      prog({ purpose: "update", jq: { content: "$params" } }),
      "template_jq.0.jq: does not compile as jq",
    ],
    ["an input program using an unbound variable", prog({ purpose: "input", jq: { content: "$nope" } }), "template_jq.0.jq: does not compile as jq"],
    ["a program that is not mustache", prog({ purpose: "input", jq: { content: `{{#a}}${MARK}` } }), "template_jq.0.jq: does not parse as mustache"],
    [
      "a declarations check that does not compile",
      { ...MINIMAL, declarations: { check: { content: `if ${MARK}` } } },
      "declarations.check.content: does not compile as jq",
    ],
    ["a declarations check without content", { ...MINIMAL, declarations: { check: {} } }, "declarations.check.content"],
  ])("400 for %s", async (_what, body, where) => {
    const res = await put(tplName(), body);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error).toContain(where);
    expect(res.body.error).not.toContain(MARK);
    expect(res.body.error).not.toMatch(/bad-name|Bad|unknown|colour/);
  });

  it("the second program is named by its position, and only content programs are compiled after rendering", async () => {
    const body = {
      ...MINIMAL,
      template_jq: {
        fine: { purpose: "input", jq: { content: ".{{field}}", kwargs: { field: "a" } } },
        broken: { purpose: "update", jq: { content: "{{field}} |", kwargs: { field: ".a" } } },
      },
    };
    const res = await put(tplName(), body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid body: template_jq.1.jq: does not compile as jq");
    // Unrendered, `.{{field}}` would not compile; rendered with its kwargs it does.
    const ok = await put(tplName(), { ...body, template_jq: { fine: body.template_jq.fine } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  });

  it("refuses a bad replace query, a non-JSON body and a non-object body", async () => {
    const key = await admin();
    expect((await put(tplName(), MINIMAL, "?replace=yes")).status).toBe(400);
    expect((await call("PUT", path(tplName()), { key, rawBody: "{", headers: { "content-type": "application/json" } })).status).toBe(400);
    expect((await put(tplName(), [MINIMAL])).status).toBe(400);
  });

  it("grants: reads need states:read, writes states:write", async () => {
    const name = tplName();
    expect((await put(name, MINIMAL)).status).toBe(200);
    const reader = await mintKey({ scopes: ["states:read"] });
    expect((await call("GET", path(name), { key: reader.key })).status).toBe(200);
    expect((await call("GET", "/api/state-templates", { key: reader.key })).status).toBe(200);
    const refused = await call("PUT", path(name), { key: reader.key, body: MINIMAL });
    expect(refused.status).toBe(403);
    expect((await call("DELETE", path(name), { key: reader.key })).status).toBe(403);
    const writer = await mintKey({ scopes: ["states:write"] });
    expect((await call("PUT", path(name), { key: writer.key, body: MINIMAL })).status).toBe(409);
    const other = await mintKey({ scopes: ["tools:write"] });
    expect((await call("GET", path(name), { key: other.key })).status).toBe(403);
    expect((await call("GET", path(name))).status).toBe(401);
  });

  it("501 states-not-configured without a store", async () => {
    const key = await admin();
    const res = await fetchWithEnv({ ...env, STATES_STORE_URL: "" }, new Request(`${BASE}${path(tplName())}`, { headers: { "x-api-key": key } }));
    expect(res.status).toBe(501);
    expect(await res.json()).toMatchObject({ code: "states-not-configured" });
  });
});

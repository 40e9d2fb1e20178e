/**
 * Template attachments and template jq programs (platform-facts B5): a fragment
 * composes into the effective schema at its path, overlapping paths are 409, declaration checks
 * run as jq, regimes compose (a whole-path write over a composing path is 400), input programs
 * read without writing and update programs write through the record path.
 */
import { describe, expect, it } from "vitest";
import { admin, call, uniq } from "../helpers/http";

const BASE_SCHEMA = { type: "object", properties: { name: { type: "string" } } };

/** A template keeping a keyed list of orders, with a max-items parameter, a check and two programs. */
function ordersTemplate() {
  return {
    kind: "state-template",
    description: "orders",
    parameters: { max: { schema: { type: "integer", minimum: 1 }, default: 10 } },
    schema: {
      type: "object",
      properties: {
        items: {
          type: "array",
          maxItems: { $parameter: "max" },
          items: { type: "object", properties: { id: { type: "string" }, qty: { type: "integer" } }, required: ["id"] },
        },
      },
    },
    regimes: [{ path: ["items"], regime: "composing" }],
    declarations: {
      schema: { type: "object", properties: { currency: { type: "string" } }, additionalProperties: false },
      check: { content: 'if .declarations.currency == "XXX" then "currency XXX is not accepted" else empty end' },
    },
    template_jq: {
      count: {
        purpose: "input",
        description: "how many orders",
        params: ["min_qty"],
        jq: { content: "[(.items // [])[] | select(.qty >= ($params.min_qty // 0))] | length" },
      },
      add: {
        purpose: "update",
        description: "add an order",
        reads: [],
        writes: [["items"]],
        jq: { content: '[{op: "set_by_key", path: ["items"], key: "id", items: [.input]}]' },
      },
    },
  };
}

async function setup() {
  const key = await admin();
  const state = uniq("att").toLowerCase();
  const template = `orders-${crypto.randomUUID().slice(0, 8)}`;
  expect((await call("PUT", `/api/state-templates/${template}`, { key, body: ordersTemplate() })).status).toBe(200);
  expect((await call("PUT", `/api/states/${state}`, { key, body: { schema: BASE_SCHEMA, subject_kinds: ["customer"] } })).status).toBe(200);
  const rec = (k: string) => `/api/states/${state}/records/tool/echo/customer/${encodeURIComponent(k)}`;
  return { key, state, template, rec };
}

describe("attachments", () => {
  it("compose the fragment at the path with parameters substituted; list, read, patch, detach", async () => {
    const { key, state, template } = await setup();
    const put = await call("PUT", `/api/states/${state}/attachments/${template}`, {
      key,
      body: { path: ["orders"], parameters: { max: 3 }, declarations: { currency: "EUR" } },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.data.effective_schema.properties.orders.properties.items.maxItems).toBe(3);
    expect(put.body.data.regimes).toEqual([{ path: ["orders", "items"], regime: "composing" }]);
    expect(put.body.data.attachments).toEqual([{ template, path: ["orders"], parameters: { max: 3 }, declarations: { currency: "EUR" } }]);
    expect((await call("GET", `/api/states/${state}/attachments`, { key })).body.data.total).toBe(1);
    expect((await call("GET", `/api/states/${state}/attachments/${template}`, { key })).body.data.path).toEqual(["orders"]);
    const patched = await call("PATCH", `/api/states/${state}/attachments/${template}`, { key, body: { declarations: { currency: "USD" } } });
    expect(patched.body.data.attachments[0].declarations).toEqual({ currency: "USD" });
    expect((await call("DELETE", `/api/states/${state}/attachments/${template}`, { key })).body.data.attachments).toEqual([]);
    expect((await call("GET", `/api/states/${state}/attachments/${template}`, { key })).status).toBe(404);
  });

  it("refuses: declaration check text (400), declarations outside their schema (400), a bad parameter (400), overlap (409), unknown template (404)", async () => {
    const { key, state, template } = await setup();
    const url = `/api/states/${state}/attachments/${template}`;
    const checked = await call("PUT", url, { key, body: { path: ["orders"], declarations: { currency: "XXX" } } });
    expect(checked).toMatchObject({ status: 400, body: { error: "currency XXX is not accepted" } });
    expect((await call("PUT", url, { key, body: { path: ["orders"], declarations: { colour: "red" } } })).status).toBe(400);
    expect((await call("PUT", url, { key, body: { path: ["orders"], parameters: { max: 0 } } })).status).toBe(400);
    expect((await call("PUT", url, { key, body: { path: ["orders"], parameters: { nope: 1 } } })).status).toBe(400);
    expect((await call("PUT", url, { key, body: { path: ["name"] } })).status).toBe(409);
    const other = `other-${crypto.randomUUID().slice(0, 8)}`;
    await call("PUT", `/api/state-templates/${other}`, { key, body: ordersTemplate() });
    expect((await call("PUT", url, { key, body: { path: ["orders"] } })).status).toBe(200);
    expect((await call("PUT", `/api/states/${state}/attachments/${other}`, { key, body: { path: ["orders", "inner"] } })).status).toBe(409);
    expect((await call("PUT", `/api/states/${state}/attachments/nope-${template}`, { key, body: {} })).status).toBe(404);
    expect((await call("PUT", `/api/states/no-${state}/attachments/${template}`, { key, body: {} })).status).toBe(404);
  });

  it("regimes: a whole-path write over a composing path is 400; keyed ops and template programs write it", async () => {
    const { key, state, template, rec } = await setup();
    await call("PUT", `/api/states/${state}/attachments/${template}`, { key, body: { path: ["orders"] } });
    expect((await call("PUT", rec("c"), { key, body: { name: "C", orders: { items: [] } } })).status).toBe(400);
    const keyed = await call("POST", `${rec("c")}/deltas`, {
      key,
      body: { ops: [{ op: "set_by_key", path: ["orders", "items"], key: "id", items: [{ id: "a", qty: 2 }] }] },
    });
    expect(keyed.status, JSON.stringify(keyed.body)).toBe(200);
    expect((await call("POST", `${rec("c")}/deltas`, { key, body: { ops: [{ op: "set", path: ["orders", "items"], value: [] }] } })).status).toBe(400);
    // Merging other fields leaves the composing path as it was: allowed.
    expect((await call("PATCH", rec("c"), { key, body: { name: "Cee" } })).status).toBe(200);

    const added = await call("POST", `${rec("c")}/template-jq/add`, { key, body: { input: { id: "b", qty: 5 } } });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    expect(added.body.data).toMatchObject({
      name: "add",
      applied: true,
      data: {
        name: "Cee",
        orders: {
          items: [
            { id: "a", qty: 2 },
            { id: "b", qty: 5 },
          ],
        },
      },
    });
    const audit = await call("GET", `${rec("c")}/writes?limit=1`, { key });
    expect(audit.body.data.items[0].origin.meta).toEqual({ template_jq: "add" });
    // Over the parameter's maxItems (10 by default) the schema refuses: the program's write is checked like any.
    const many = await call("POST", `${rec("c")}/deltas`, {
      key,
      body: { ops: [{ op: "set_by_key", path: ["orders", "items"], key: "id", items: Array.from({ length: 9 }, (_, i) => ({ id: `x${i}` })) }] },
    });
    expect(many.status).toBe(400);

    const count = await call("GET", `${rec("c")}/template-jq/${template}.count?min_qty=3`, { key });
    expect(count.body.data).toEqual({ name: `${template}.count`, purpose: "input", value: 1 });
    expect((await call("GET", `${rec("c")}/template-jq/count`, { key })).body.data.value).toBe(2);
    expect((await call("GET", `${rec("c")}/template-jq/count?other=1`, { key })).status).toBe(400);
    expect((await call("GET", `${rec("c")}/template-jq/count?min_qty=notjson`, { key })).status).toBe(400);
    expect((await call("GET", `${rec("c")}/template-jq/missing`, { key })).status).toBe(404);
    expect((await call("POST", `${rec("c")}/template-jq/count`, { key, body: { input: {} } })).status).toBe(400);
    // The input program wrote nothing.
    expect((await call("GET", rec("c"), { key })).body.data.seq).toBe(3);
    // Detaching while a record holds values at the path is refused.
    expect((await call("DELETE", `/api/states/${state}/attachments/${template}`, { key })).status).toBe(409);
  });
});

/**
 * API tools (docs/manifest.md "API tools"): an OpenAPI operation made a registry tool by
 * POST /api/api-tools, called with the operation's own method, path, query, header and body.
 */
import { describe, expect, it } from "vitest";
import { answerOnly, fakeNetwork } from "../helpers/network";
import { admin, call, mintKey, uniq } from "../helpers/http";

const petstore = {
  openapi: "3.0.3",
  info: { title: "Pets", version: "1" },
  servers: [{ url: "https://{region}.pets.example/v1", variables: { region: { default: "eu" } } }],
  paths: {
    "/pets/{petId}": {
      parameters: [{ name: "petId", in: "path", required: true, schema: { type: "integer" } }],
      get: {
        operationId: "getPet",
        summary: "Read one pet",
        parameters: [{ name: "fields", in: "query", schema: { type: "array", items: { type: "string" } } }, { $ref: "#/components/parameters/Trace" }],
      },
      delete: { operationId: "delete pet", responses: {} },
    },
    "/pets": {
      post: {
        operationId: "createPet",
        requestBody: { required: true, content: { "application/json": { schema: { $ref: "#/components/schemas/Pet" } } } },
      },
    },
    "/loop": { post: { operationId: "loop", requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/Node" } } } } } },
    "/cookie": { get: { operationId: "cookieOp", parameters: [{ name: "s", in: "cookie" }] } },
    "/form": { post: { operationId: "formOp", requestBody: { content: { "application/x-www-form-urlencoded": { schema: {} } } } } },
  },
  components: {
    parameters: { Trace: { name: "x-trace", in: "header", schema: { type: "string" } } },
    schemas: {
      Pet: { type: "object", properties: { name: { type: "string" }, tag: { type: "string" } }, required: ["name"] },
      Node: { type: "object", properties: { next: { $ref: "#/components/schemas/Node" } } },
    },
  },
};

async function importOp(body: Record<string, unknown>) {
  return call("POST", "/api/api-tools", { key: await admin(), body: { openapi: petstore, ...body } });
}

describe("POST /api/api-tools", () => {
  it("makes a GET operation a tool: path, query and header parameters, $refs resolved, server variables filled", async () => {
    const title = uniq("getpet").replace(/-/g, "_");
    const r = await importOp({ operation_id: "getPet", title, headers: { authorization: "Bearer lit" } });
    expect(r.status).toBe(200);
    expect(r.body.data.created).toBe(true);
    expect(r.body.data.tool).toMatchObject({
      title,
      description: "Read one pet",
      method: "GET",
      url: "https://eu.pets.example/v1/pets/{petId}",
      parameters: [
        { name: "petId", in: "path", required: true },
        { name: "fields", in: "query", required: false },
        { name: "x-trace", in: "header", required: false },
      ],
      body: "none",
      headers: { authorization: "<redacted>" },
      operation_id: "getPet",
      input_schema: {
        type: "object",
        properties: { petId: { type: "integer" }, fields: { type: "array" }, "x-trace": { type: "string" } },
        required: ["petId"],
      },
    });
    const schema = await call("GET", `/api/tools/${title}/schema`, { key: await admin() });
    expect(schema.body.data.input.required).toEqual(["petId"]);

    fakeNetwork(
      answerOnly({
        "GET https://eu.pets.example/v1/pets/7?fields=a&fields=b": (req) =>
          Response.json({ id: 7, trace: req.headers.get("x-trace"), auth: req.headers.get("authorization") }),
      }),
    );
    const ok = await call("POST", "/api/run-tool", {
      key: await admin(),
      body: { tool_name: title, arguments: { petId: 7, fields: ["a", "b"], "x-trace": "t-1" } },
    });
    expect(ok.body).toEqual({ data: { id: 7, trace: "t-1", auth: "Bearer lit" } });
    const missing = await call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: title, arguments: {} } });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toContain('required property "petId"');
  });

  it("makes a POST operation with a JSON body a tool whose body kwarg is the request body", async () => {
    const title = uniq("createpet").replace(/-/g, "_");
    const r = await importOp({ operation_id: "createPet", title, server_url: "https://api.pets.example" });
    expect(r.body.data.tool).toMatchObject({
      method: "POST",
      url: "https://api.pets.example/pets",
      body: "json",
      input_schema: { required: ["body"], properties: { body: { required: ["name"] } } },
    });
    const calls = fakeNetwork(answerOnly({ "POST https://api.pets.example/pets": () => new Response(null, { status: 201 }) }));
    const run = await call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: title, arguments: { body: { name: "rex" } } } });
    expect(run.body).toEqual({ data: null });
    expect(JSON.parse(calls[0].body)).toEqual({ name: "rex" });
    expect(calls[0].headers["content-type"]).toBe("application/json");
    const bad = await call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: title, arguments: { body: { tag: "x" } } } });
    expect(bad.status).toBe(400);
  });

  it("fetches the document by URL through the edge and the guard", async () => {
    fakeNetwork(answerOnly({ "GET https://docs.pets.example/openapi.json": () => Response.json(petstore) }));
    const title = uniq("bynet").replace(/-/g, "_");
    const r = await call("POST", "/api/api-tools", {
      key: await admin(),
      body: { openapi_url: "https://docs.pets.example/openapi.json", operation_id: "getPet", title },
    });
    expect(r.status).toBe(200);
    const priv = await call("POST", "/api/api-tools", { key: await admin(), body: { openapi_url: "http://192.168.1.1/openapi.json", operation_id: "getPet" } });
    expect(priv.status).toBe(400);
    expect(priv.body.error).toContain("openapi_url");
    expect(priv.body.error).not.toContain("192.168");
  });

  it("refuses what it cannot make a tool of, with 400s that quote nothing from the document", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ operation_id: "nope" }, "operation_id"],
      [{ operation_id: "delete pet" }, "title"],
      [{ operation_id: "loop" }, "recursive"],
      [{ operation_id: "cookieOp" }, "cookie"],
      [{ operation_id: "formOp" }, "not JSON"],
      [{ operation_id: "getPet", openapi: { ...petstore, openapi: "2.0" } }, "OpenAPI 3"],
      [{ operation_id: "getPet", openapi: { ...petstore, servers: [{ url: "/relative" }] } }, "server_url"],
      [{ operation_id: "getPet", openapi_url: "https://x.example/o.json" }, "exactly one"],
      [{ operation_id: "getPet", server_url: "http://10.1.1.1" }, "url"],
    ];
    for (const [body, word] of cases) {
      const r = await importOp(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error, JSON.stringify(body)).toContain(word);
      expect(r.body.error).not.toContain("pets.example");
    }
  });

  it("refuses a built-in's, an HTTP tool's or a preset's name (409) and is admin-only", async () => {
    expect((await importOp({ operation_id: "getPet", title: "echo" })).status).toBe(409);
    const http = uniq("h").replace(/-/g, "_");
    await call("POST", "/api/tools-config/entries", { key: await admin(), body: { title: http, kind: "http", url: "https://t.example/run" } });
    expect((await importOp({ operation_id: "getPet", title: http })).status).toBe(409);
    const preset = uniq("p").replace(/-/g, "_");
    await call("POST", "/api/presets", { key: await admin(), body: { name: preset, base_tool: "echo" } });
    expect((await importOp({ operation_id: "getPet", title: preset })).status).toBe(409);
    const writer = await mintKey({ scopes: ["manifest:write"] });
    expect((await call("POST", "/api/api-tools", { key: writer.key, body: { openapi: petstore, operation_id: "getPet" } })).status).toBe(403);
  });
});

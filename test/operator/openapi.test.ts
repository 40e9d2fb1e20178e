import { describe, expect, it } from "vitest";
import { call } from "../helpers/http";

const DOORS: Array<[string, string, string, string[]]> = [
  ["get", "/api/conversations/{route_name}/threads", "200", ["items", "total", "page", "page_size", "next_page", "truncated"]],
  ["get", "/api/conversations/{route_name}/messages/search", "200", ["items", "total", "page", "page_size", "next_page", "truncated"]],
  ["get", "/api/conversations/{route_name}/transcript", "200", ["items", "total", "page", "page_size", "next_page", "order", "truncated"]],
  ["delete", "/api/conversations/{route_name}/thread", "200", ["removed", "route_name", "thread_id"]],
  ["get", "/api/conversations/{route_name}/thread/mode", "200", ["mode", "source"]],
  ["put", "/api/conversations/{route_name}/thread/mode", "200", ["route_name", "thread_id", "mode", "source"]],
  ["post", "/api/conversations/{route_name}/thread/messages", "200", ["message_id", "thread_id"]],
  ["post", "/api/conversations/{route_name}/events", "202", ["message_id", "thread_id"]],
];

describe("operator doors in /api/openapi.json", () => {
  it.each(DOORS)("%s %s documents its success answer", async (method, path, status, keys) => {
    const doc = (await call("GET", "/api/openapi.json")).body;
    const op = doc.paths[path]?.[method];
    expect(op).toBeDefined();
    const data = op.responses[status].content["application/json"].schema.properties.data;
    expect(Object.keys(data.properties)).toEqual(expect.arrayContaining(keys));
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(["400", "401", "403"]));
  });

  it("documents the event door's inline 200 and the admin doors' paging query", async () => {
    const doc = (await call("GET", "/api/openapi.json")).body;
    expect(doc.paths["/api/conversations/{route_name}/events"].post.responses["200"]).toBeDefined();
    const q = doc.paths["/api/conversations/{route_name}/threads"].get.parameters.map((p: any) => p.name);
    expect(q).toEqual(expect.arrayContaining(["route_name", "page", "pageSize", "status", "address"]));
  });
});

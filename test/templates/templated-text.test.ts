import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { renderTemplate, renderTemplatedText, templatedTextSchema } from "../../src/templates/templated-text";
import { admin, call, uniq } from "../helpers/http";

describe("TemplatedText (mustache inside workerd)", () => {
  it("renders kwargs without HTML escaping", () => {
    expect(renderTemplate('.x == "{{v}}" and {{n}} > 1', { v: "a&b<c>", n: 2 })).toBe('.x == "a&b<c>" and 2 > 1');
  });
  it("renders sections and missing tags as empty", () => {
    expect(renderTemplate("{{#items}}[{{.}}]{{/items}}{{missing}}", { items: [1, 2] })).toBe("[1][2]");
  });
  it("requires exactly one of content or id", () => {
    expect(templatedTextSchema.safeParse({ content: "x" }).success).toBe(true);
    expect(templatedTextSchema.safeParse({ id: "r1" }).success).toBe(true);
    expect(templatedTextSchema.safeParse({}).success).toBe(false);
    expect(templatedTextSchema.safeParse({ content: "x", id: "r1" }).success).toBe(false);
    expect(templatedTextSchema.safeParse({ content: null, id: null }).success).toBe(false);
    expect(templatedTextSchema.safeParse({ content: "x", extra: 1 }).success).toBe(false);
  });
  it("resolves id against stored resources and reads them back over HTTP", async () => {
    const key = await admin();
    const id = uniq("tmpl");
    const put = await call("POST", "/api/storage/resources", { key, body: { id, content: "Hello {{name}}" } });
    expect(put.status).toBe(200);
    expect(put.body.data.created).toBe(true);
    const t = templatedTextSchema.parse({ id, kwargs: { name: "Ada" } });
    expect(await renderTemplatedText(env.DB, t)).toBe("Hello Ada");
    const got = await call("GET", `/api/resources/get?id=${id}`, { key });
    expect(got.status).toBe(200);
    expect(got.body.data.content).toBe("Hello {{name}}");
    expect((await call("GET", "/api/resources/get?id=absent-one", { key })).status).toBe(404);
  });
  it("answers 404 for an unknown id", async () => {
    await expect(renderTemplatedText(env.DB, templatedTextSchema.parse({ id: "never-stored" }))).rejects.toMatchObject({ status: 404 });
  });
});

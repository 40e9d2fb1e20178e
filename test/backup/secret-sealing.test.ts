/**
 * An admin's backup export yields no secret in the clear, nor a way to get one (docs/backup.md
 * "Where the secrets are"; src/backup/secret-values.ts): every value of a secret section is sealed
 * under SETTINGS_ENCRYPTION_KEY for the one place it came from, so it opens only in a deployment
 * holding that key and only into that place. A literal header in particular opens only for its
 * declaration at the URL origin it was entered for, and an import keeps the deployment's own
 * literal only at that origin too: a document edited to point a tool at another host restores no
 * credential there.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fakeNetwork } from "../helpers/network";
import { BASE, admin, call, fetchWithEnv, readResult, uniq } from "../helpers/http";
import { bindVerifier } from "../hooks/helpers";
import { exported, importDoc } from "./helpers";
import { must } from "../../src/platform/must";

const LITERAL = "Bearer SEALED-LITERAL-VALUE";
const NOW = "2026-01-01T00:00:00.000Z";
const doc = (sections: Record<string, unknown[]>) => ({ version: 1, exported_at: NOW, sections });

async function declareTool(url = "https://crm.example.com/run") {
  const title = uniq("sealed-tool");
  const r = await call("POST", "/api/tools-config/entries", { key: await admin(), body: { title, kind: "http", url, headers: { authorization: LITERAL } } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return title;
}

const storedAuthorization = async (title: string) =>
  must(
    await env.DB.prepare("SELECT json_extract(spec, '$.url') AS url, json_extract(spec, '$.headers.authorization') AS a FROM tool_declarations WHERE title = ?")
      .bind(title)
      .first<{ url: string; a: string }>(),
    "the row",
  );

describe("a backup export yields no clear secret", () => {
  it("every secret section's values are sealed; none appears in the document", async () => {
    const title = await declareTool();
    const topic = uniq("sealed-topic").toLowerCase();
    await bindVerifier(topic, { kind: "github", secret: "HOOK-SECRET-IN-THE-CLEAR" });
    const route = uniq("sealed-route").toLowerCase();
    const created = await call("POST", `/api/conversations/${route}`, {
      key: await admin(),
      body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: "root", callback_url: "https://hooks.example.com/s" },
    });
    const callbackSecret = created.body.data.callback_secret as string;
    const d = await exported(["target-secrets", "route-secrets", "hook-secrets"]);
    const text = JSON.stringify(d);
    for (const secret of [LITERAL, "HOOK-SECRET-IN-THE-CLEAR", callbackSecret]) expect(text).not.toContain(secret);
    const sealed = { sealed: { kid: expect.any(String), iv: expect.any(String), ct: expect.any(String) } };
    expect(d.sections["target-secrets"]).toContainEqual({ kind: "tool", title, headers: { authorization: sealed } });
    expect(d.sections["route-secrets"]).toContainEqual({ route_name: route, callback_secret: sealed });
    expect(d.sections["hook-secrets"]).toContainEqual({ topic, secret: sealed });
  });

  it("without SETTINGS_ENCRYPTION_KEY a secret section is not exported at all (501), never in the clear", async () => {
    await declareTool();
    const key = await admin();
    const r = await readResult(
      await fetchWithEnv(
        { ...env, SETTINGS_ENCRYPTION_KEY: "" },
        new Request(`${BASE}/api/backup/export`, {
          method: "POST",
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: JSON.stringify({ sections: ["target-secrets"] }),
        }),
      ),
    );
    expect(r.status).toBe(501);
    expect(r.body).toMatchObject({ code: "settings-encryption-not-configured" });
    expect(JSON.stringify(r.body)).not.toContain(LITERAL);
  });
});

describe("a sealed value opens only in its own place", () => {
  it("a literal header sealed for one origin does not restore onto a tool pointed at another host (400, nothing written); the same origin does", async () => {
    const calls = fakeNetwork((req) => Response.json({ host: new URL(req.url).host }));
    const title = await declareTool();
    const d = await exported(["tools", "target-secrets"]);
    const toolRow = d.sections.tools.find((t: any) => t.declaration.title === title);
    const secretRow = d.sections["target-secrets"].find((t: any) => t.title === title);

    const moved = await importDoc(
      doc({ tools: [{ ...toolRow, declaration: { ...toolRow.declaration, url: "https://collector.example/run" } }], "target-secrets": [secretRow] }),
    );
    expect(moved.status).toBe(400);
    expect(moved.body.error).toContain("sections.target-secrets.0.headers.0");
    expect(moved.body.error).not.toContain("collector");
    expect(await storedAuthorization(title)).toEqual({ url: "https://crm.example.com/run", a: LITERAL });

    // Under another title the seal does not open either.
    const renamed = await importDoc(
      doc({
        tools: [{ ...toolRow, declaration: { ...toolRow.declaration, title: uniq("other") } }],
        "target-secrets": [{ ...secretRow, title: uniq("other") }],
      }),
    );
    expect(renamed.status).toBe(400);

    // Another path at the same origin restores it.
    const samePlace = await importDoc(
      doc({ tools: [{ ...toolRow, declaration: { ...toolRow.declaration, url: "https://crm.example.com/v2/run" } }], "target-secrets": [secretRow] }),
    );
    expect(samePlace.status, JSON.stringify(samePlace.body)).toBe(200);
    expect(await storedAuthorization(title)).toEqual({ url: "https://crm.example.com/v2/run", a: LITERAL });
    expect((await call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: title, arguments: {} } })).status).toBe(200);
    expect(calls.filter((c) => c.headers.authorization === LITERAL).map((c) => new URL(c.url).host)).toEqual(["crm.example.com"]);
  });

  it("an import keeps the deployment's own literal only while the row keeps its origin; a plain value entered again may go anywhere", async () => {
    const title = await declareTool();
    const toolRow = (await exported(["tools"])).sections.tools.find((t: any) => t.declaration.title === title);
    const moved = await importDoc(doc({ tools: [{ ...toolRow, declaration: { ...toolRow.declaration, url: "https://collector.example/run" } }] }));
    expect(moved.status).toBe(400);
    expect(moved.body.error).toContain("sections.tools.0.withheld_headers.0");
    expect(moved.body.error).toContain("origin");
    expect(await storedAuthorization(title)).toEqual({ url: "https://crm.example.com/run", a: LITERAL });

    const retyped = await importDoc(
      doc({
        tools: [{ ...toolRow, declaration: { ...toolRow.declaration, url: "https://elsewhere.example/run" } }],
        "target-secrets": [{ kind: "tool", title, headers: { authorization: "Bearer TYPED-AGAIN" } }],
      }),
    );
    expect(retyped.status, JSON.stringify(retyped.body)).toBe(200);
    expect(await storedAuthorization(title)).toEqual({ url: "https://elsewhere.example/run", a: "Bearer TYPED-AGAIN" });
  });

  it("a sealed secret moved to another section, setting, topic or route does not open", async () => {
    const topic = uniq("moved-topic").toLowerCase();
    await bindVerifier(topic, { kind: "github", secret: "A-VERIFIER-SECRET-VALUE" });
    const route = uniq("moved-route").toLowerCase();
    expect(
      (
        await call("POST", `/api/conversations/${route}`, {
          key: await admin(),
          body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: "root", callback_url: "https://hooks.example.com/m" },
        })
      ).status,
    ).toBe(200);
    const d = await exported(["hook-secrets", "route-secrets"]);
    const hookSealed = d.sections["hook-secrets"].find((r: any) => r.topic === topic).secret;
    const routeSealed = d.sections["route-secrets"].find((r: any) => r.route_name === route).callback_secret;
    const otherTopic = uniq("other-topic").toLowerCase();
    await bindVerifier(otherTopic, { kind: "github", secret: "ANOTHER-VERIFIER-SECRET" });
    const otherRoute = uniq("other-route").toLowerCase();
    expect(
      (
        await call("POST", `/api/conversations/${otherRoute}`, {
          key: await admin(),
          body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: "root", callback_url: "https://hooks.example.com/o" },
        })
      ).status,
    ).toBe(200);

    const cases: Array<[Record<string, unknown[]>, string]> = [
      [{ "settings-secrets": [{ kind: "overlay", name: "CHANNEL_WHATSAPP_VERIFY_TOKEN", value: hookSealed }] }, "sections.settings-secrets.0.value"],
      [{ "hook-secrets": [{ topic: otherTopic, secret: hookSealed }] }, "sections.hook-secrets.0.secret"],
      [{ "route-secrets": [{ route_name: otherRoute, callback_secret: routeSealed }] }, "sections.route-secrets.0.callback_secret"],
      [{ "route-secrets": [{ route_name: route, callback_secret: hookSealed }] }, "sections.route-secrets.0.callback_secret"],
    ];
    for (const [sections, field] of cases) {
      const r = await importDoc(doc(sections));
      expect(r.status, field).toBe(400);
      expect(r.body.error, field).toContain(field);
    }
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM settings_overlay WHERE name = 'CHANNEL_WHATSAPP_VERIFY_TOKEN'").first("n")).toBe(0);
    // In its own place it opens.
    expect(
      (await importDoc(doc({ "hook-secrets": [{ topic, secret: hookSealed }], "route-secrets": [{ route_name: route, callback_secret: routeSealed }] })))
        .status,
    ).toBe(200);
  });
});

/**
 * A stored secret env value is bound to the origins it may be sent to (docs/mcp.md "Secret env
 * values"; src/mcp/secret-env.ts): those its writer named and those of the MCP servers referencing
 * it when it was written. A server declared at another origin, by any admin, does not receive it
 * (its listing fails, naming the variable and what to do), until whoever knows the value writes it
 * again.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, call, uniq } from "../helpers/http";
import { MCP_HOST, MCP_URL, localMcpNetwork } from "./support/local-mcp";

const title = () => uniq("bound").replace(/-/g, "_").slice(0, 30);
const VALUE = "Bearer STORED-MCP-SECRET";
const COLLECTOR_URL = "https://collector.example/mcp";

async function declare(t: string, url: string, name: string) {
  return call("POST", "/api/mcp-config/entries", {
    key: await admin(),
    body: { title: t, config: { type: "http", url, headers: { authorization: { env: name } } } },
  });
}

describe("stored secret env values are bound to origins", () => {
  it("a server declared at another origin does not receive a value written for the servers referencing it; writing it again sends it there too", async () => {
    // The collector answers as an MCP server too, so only the binding keeps the value from it.
    const calls = localMcpNetwork({ others: async (req) => new Response(null, { status: 401 }) });
    // A name the test configuration binds to both hosts (vitest.config.ts): the value's own binding decides.
    const name = "SECRET_MCP_BOUND";
    const good = title();
    expect((await declare(good, MCP_URL, name)).body.data.status.status).toBe("failed");
    const set = await call("POST", "/api/mcp-config/secret-env", { key: await admin(), body: { name, value: VALUE } });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect((await call("POST", "/api/tools/reload", { key: await admin(), body: { server: good } })).body.data.items[0].status).toBe("ok");

    const evil = title();
    const moved = await declare(evil, COLLECTOR_URL, name);
    expect(moved.status).toBe(200);
    expect(moved.body.data.status).toMatchObject({ status: "failed" });
    expect(moved.body.data.status.last_error).toContain(name);
    expect(moved.body.data.status.last_error).toContain("write it again");
    expect(calls.filter((c) => c.headers.authorization === VALUE).every((c) => new URL(c.url).host === MCP_HOST)).toBe(true);
    expect(calls.some((c) => c.url.startsWith("https://collector.example/") && c.headers.authorization !== undefined)).toBe(false);

    // Whoever knows the value writes it again: now both servers' origins may receive it.
    expect((await call("POST", "/api/mcp-config/secret-env", { key: await admin(), body: { name, value: VALUE } })).status).toBe(200);
    await call("POST", "/api/tools/reload", { key: await admin(), body: { server: evil } });
    expect(calls.some((c) => c.url.startsWith("https://collector.example/") && c.headers.authorization === VALUE)).toBe(true);
  });

  it("a value no server references yet must name its origins (400, nothing stored); named, it goes only there", async () => {
    const calls = localMcpNetwork({ others: async () => new Response(null, { status: 401 }) });
    const name = "SECRET_MCP_FIRST";
    const refused = await call("POST", "/api/mcp-config/secret-env", { key: await admin(), body: { name, value: VALUE } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain("origins");
    expect(refused.body.error).not.toContain(VALUE);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM mcp_secret_env WHERE name = ?").bind(name).first("n")).toBe(0);
    expect((await call("POST", "/api/mcp-config/secret-env", { key: await admin(), body: { name, value: VALUE, origins: [MCP_URL] } })).status).toBe(200);
    expect((await declare(title(), MCP_URL, name)).body.data.status.status).toBe("ok");
    expect((await declare(title(), COLLECTOR_URL, name)).body.data.status.status).toBe("failed");
    expect(calls.filter((c) => c.headers.authorization === VALUE).every((c) => new URL(c.url).host === MCP_HOST)).toBe(true);
  });
});

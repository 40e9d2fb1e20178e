/**
 * docs/backup.md's walk-through, request by request: deployment A is this test
 * file's D1; deployment B is the same D1 wiped down to nothing (no key at all), bootstrapped under
 * another user_id, which then imports A's document. The same raw caller key gets the same answer,
 * and A's admin key works on B.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, call } from "../helpers/http";
import { SECTIONS } from "../../src/backup/registry";
import { importDoc, wipeDeployment } from "./helpers";

// Every section, in apply order (the order itself is pinned by sections.test.ts).
const ALL = SECTIONS.map((s) => s.name);

describe("docs/backup.md walk-through", () => {
  it("moves a working route to a fresh deployment", async () => {
    // --- Deployment A.
    const boot = await call("POST", "/api/keys/bootstrap", { body: { user_id: "root", description: "first admin", bootstrap_token: BOOTSTRAP_TOKEN } });
    expect(boot.status).toBe(200);
    const keyA = boot.body.data.token as string;
    expect(
      (await call("POST", "/api/auth/api-keys", { key: keyA, body: { user_id: "svc-runner", description: "runs the greeter", scopes: ["tool:greeter"] } }))
        .status,
    ).toBe(200);
    const caller = await call("POST", "/api/auth/api-keys", {
      key: keyA,
      body: { user_id: "svc-caller", description: "sends messages", scopes: ["conversations"] },
    });
    const callerKey = caller.body.data.api_key as string;
    expect((await call("POST", "/api/presets", { key: keyA, body: { name: "greeter", base_tool: "echo" } })).status).toBe(200);
    const route = await call("POST", "/api/conversations/greet", {
      key: keyA,
      body: {
        door: "api",
        target_kind: "tool",
        target_name: "greeter",
        execution_key: "svc-runner",
        payload_expr: '{message: ("hello " + .message)}',
        callback_url: "https://hooks.example.com/bridge",
      },
    });
    expect(route.status, JSON.stringify(route.body)).toBe(200);
    const secret = route.body.data.callback_secret as string;
    const onA = await call("POST", "/api/conversations/greet/messages", { key: callerKey, body: { external_user_id: "ann", text: "ann", wait_seconds: 10 } });
    expect(onA.body.data).toMatchObject({ status: "answered", answer: "hello ann" });

    const sections = await call("GET", "/api/backup/sections", { key: keyA });
    expect(sections.body.data.map((s: any) => s.name)).toEqual(ALL);
    const exported = await call("POST", "/api/backup/export", { key: keyA, body: { sections: ALL } });
    expect(exported.status).toBe(200);
    expect(exported.headers.get("content-disposition")).toMatch(/^attachment; filename="bridge-backup-.*Z\.json"$/);
    const document = exported.body;

    // --- Deployment B: nothing at all, then bootstrapped under a user_id the document does not hold.
    await wipeDeployment();
    await env.DB.batch([env.DB.prepare("DELETE FROM api_keys"), env.DB.prepare("DELETE FROM api_key_versions")]);
    const bootB = await call("POST", "/api/keys/bootstrap", { body: { user_id: "restore-admin", description: "restores", bootstrap_token: BOOTSTRAP_TOKEN } });
    expect(bootB.status).toBe(200);
    const keyB = bootB.body.data.token as string;
    expect((await call("GET", "/api/auth/me", { key: keyA })).status).toBe(401);

    // The doc's body, built as `printf '{"document":%s}'` builds it.
    const imported = await call("POST", "/api/backup/import", {
      key: keyB,
      rawBody: `{"document":${JSON.stringify(document)}}`,
      headers: { "content-type": "application/json" },
    });
    expect(imported.status, JSON.stringify(imported.body)).toBe(200);
    const outcome = Object.fromEntries(imported.body.data.sections.map((s: any) => [s.name, s]));
    expect(outcome.keys).toEqual({ name: "keys", applied: 3 });
    expect(outcome.presets).toEqual({ name: "presets", applied: 1 });
    expect(outcome.routes).toEqual({ name: "routes", applied: 1 });
    expect(outcome["route-secrets"]).toEqual({ name: "route-secrets", applied: 1 });

    const onB = await call("POST", "/api/conversations/greet/messages", { key: callerKey, body: { external_user_id: "ann", text: "bob", wait_seconds: 10 } });
    expect(onB.status, JSON.stringify(onB.body)).toBe(200);
    expect(onB.body.data).toMatchObject({ status: "answered", answer: "hello bob" });
    const me = await call("GET", "/api/auth/me", { key: keyA });
    expect(me.body.data).toMatchObject({ user_id: "root", admin: true });
    expect(await env.DB.prepare("SELECT callback_secret FROM routes WHERE route_name = 'greet'").first("callback_secret")).toBe(secret);
    // The same import run again goes through (an upsert of what is already there).
    expect((await importDoc(document, undefined, keyB)).status).toBe(200);
  });
});

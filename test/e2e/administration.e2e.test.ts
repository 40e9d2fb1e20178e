/**
 * Administration end to end, against real `wrangler dev` servers:
 *   1. an admin creates a `support-agent` role with conversations:write;
 *   2. makes a claim link for a key with that role, which is redeemed once (a second redeem fails);
 *   3. the claimed key sends an operator message;
 *   4. the admin lowers CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR at runtime and the message door
 *      applies the new cap without a restart;
 *   5. a backup is exported and imported into a fresh deployment (its own persistence directory),
 *      where the route answers the original caller's key.
 *
 * No assertion is about timing: every wait is a bounded poll for an outcome.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, http, startDev } from "./harness";
import { pollUntil } from "./support/poll";

let dev: DevServer;
let fresh: DevServer | null = null;
let base: string;
let admin: string;
let caller: string;
let agentKey: string;
let backup: any;

const ROUTE = "desk";

/** Sends a message on the route as `key` and waits inline for its answer. */
function ask(b: string, key: string, address: string, text: string) {
  return http(b, "POST", `/api/conversations/${ROUTE}/messages`, { key, body: { external_user_id: address, text, wait_seconds: 10 } });
}

beforeAll(async () => {
  dev = await startDev();
  base = dev.baseUrl;
});

afterAll(async () => {
  await dev?.close();
  await fresh?.close();
});

describe("administration end to end", () => {
  it("sets up an admin, a caller and an api route to the echo tool", async () => {
    const boot = await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "root", description: "e2e admin", bootstrap_token: BOOTSTRAP_TOKEN } });
    expect(boot.status).toBe(200);
    admin = boot.body.data.token;
    expect((await http(base, "GET", "/api/login/methods")).body.data).toEqual({ methods: ["api-key", "claim-link"], bootstrap: false });

    const runner = await http(base, "POST", "/api/auth/api-keys", {
      key: admin,
      body: { user_id: "echo-runner", description: "runs echo", scopes: ["tool:echo"] },
    });
    expect(runner.status).toBe(200);
    const svc = await http(base, "POST", "/api/auth/api-keys", { key: admin, body: { user_id: "svc", description: "a client", scopes: ["conversations"] } });
    expect(svc.status).toBe(200);
    caller = svc.body.data.api_key;
    const route = await http(base, "POST", `/api/conversations/${ROUTE}`, {
      key: admin,
      body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: "echo-runner", payload_expr: '{message: ("you said: " + .message)}' },
    });
    expect(route.status).toBe(200);
    const answered = await ask(base, caller, "ada", "hello");
    expect(answered.status).toBe(200);
    expect(answered.body.data).toMatchObject({ status: "answered", answer: "you said: hello" });
  });

  it("1–2. a support-agent role, and a claim link for a key with it that is redeemed exactly once", async () => {
    const role = await http(base, "POST", "/api/auth/roles", {
      key: admin,
      body: { name: "support-agent", description: "handles conversations", grants: { conversations: "write" } },
    });
    expect(role.status).toBe(200);
    expect(role.body.data).toMatchObject({ name: "support-agent", grants: { conversations: "write" }, version: 1 });

    const link = await http(base, "POST", "/api/auth/claim-links", {
      key: admin,
      body: { user_id: "agent-1", description: "support laptop", scopes: ["conversations", "tools"], role: "support-agent" },
    });
    expect(link.status).toBe(200);
    const token: string = link.body.data.token;
    expect(token.startsWith("clm-")).toBe(true);

    const claimed = await http(base, "POST", "/api/login/claim", { body: { token } });
    expect(claimed.status).toBe(200);
    expect(claimed.body.data.user_id).toBe("agent-1");
    agentKey = claimed.body.data.api_key;
    const again = await http(base, "POST", "/api/login/claim", { body: { token } });
    expect(again.status).toBe(400);
    expect(JSON.stringify(again.body)).not.toContain("sk-");

    // The key is owned by the admin who made the link and bound by the role: its scopes say
    // tools, but the role grants none, so a tools door refuses it.
    const me = await http(base, "GET", "/api/auth/me", { key: agentKey });
    expect(me.body.data).toMatchObject({ user_id: "agent-1", owner_user_id: "root", role: "support-agent", admin: false });
    expect((await http(base, "GET", "/api/tools", { key: agentKey })).status).toBe(403);
  });

  it("3. the claimed key sends an operator message", async () => {
    const thread = `bridge:${ROUTE}:svc/grace`;
    const sent = await http(base, "POST", `/api/conversations/${ROUTE}/thread/messages`, {
      key: agentKey,
      body: { thread_id: thread, text: "An agent writes." },
    });
    expect(sent.status).toBe(200);
    expect(sent.body.data).toEqual({ message_id: expect.any(String), thread_id: thread });
    const read = await http(base, "GET", `/api/conversations/${ROUTE}/messages/${sent.body.data.message_id}`, { key: admin });
    expect(read.status).toBe(200);
    expect(read.body.data).toMatchObject({ status: "delivered", answer: "An agent writes." });
  });

  it("4. a runtime change of CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR caps the door without a restart", async () => {
    // Under the default cap, three messages from one address all pass.
    for (const text of ["a", "b", "c"]) expect((await ask(base, caller, "before-change", text)).status).toBe(200);

    const changed = await http(base, "POST", "/api/config/env", { key: admin, body: { set: { CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR: 2 } } });
    expect(changed.status).toBe(200);
    const env = await http(base, "GET", "/api/config/env", { key: admin });
    expect(env.body.data.settings).toContainEqual(expect.objectContaining({ name: "CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR", source: "overlay" }));

    // A fresh address now gets a bucket of 2: the third message is refused with 429. The change
    // reaches every isolate within SETTINGS_REFRESH_SECONDS, so each probe uses a new address.
    let probe = 0;
    await pollUntil(
      "the lowered cap in force",
      async () => {
        probe += 1;
        const codes: number[] = [];
        for (const text of ["1", "2", "3"]) codes.push((await ask(base, caller, `after-change-${probe}`, text)).status);
        return codes;
      },
      (codes) => codes[0] === 200 && codes[1] === 200 && codes[2] === 429,
      { timeoutMs: 30_000 },
    );
  });

  it("5. a backup exported here and imported into a fresh deployment reproduces a working route", async () => {
    const sections = await http(base, "GET", "/api/backup/sections", { key: admin });
    expect(sections.status).toBe(200);
    const names: string[] = sections.body.data.map((s: { name: string }) => s.name);
    expect(names).toEqual(expect.arrayContaining(["routes", "tools", "roles", "keys"]));

    const exported = await http(base, "POST", "/api/backup/export", { key: admin, body: { sections: names } });
    expect(exported.status).toBe(200);
    backup = exported.body;
    expect(backup.version).toBe(1);

    fresh = await startDev();
    // Bootstrapped under another user_id: an import never replaces the importing key's own row, so
    // every key of the document (root included) comes along.
    const freshBoot = await http(fresh.baseUrl, "POST", "/api/keys/bootstrap", {
      body: { user_id: "restore-admin", description: "fresh admin", bootstrap_token: BOOTSTRAP_TOKEN },
    });
    expect(freshBoot.status).toBe(200);
    const freshAdmin: string = freshBoot.body.data.token;
    // Nothing of the first deployment is here yet.
    expect((await ask(fresh.baseUrl, caller, "ada", "hello")).status).toBe(401);

    const imported = await http(fresh.baseUrl, "POST", "/api/backup/import", { key: freshAdmin, body: { document: backup, sections: names } });
    expect(imported.status).toBe(200);
    expect(imported.body.data.ok).toBe(true);

    // The route answers the original caller's key, as the original execution key; the original
    // admin key works here, and the runtime setting came along with the overlay.
    const answered = await ask(fresh.baseUrl, caller, "ada", "hello again");
    expect(answered.status).toBe(200);
    expect(answered.body.data).toMatchObject({ status: "answered", answer: "you said: hello again" });
    const env = await http(fresh.baseUrl, "GET", "/api/config/env", { key: admin });
    expect(env.status).toBe(200);
    expect(env.body.data.settings).toContainEqual(expect.objectContaining({ name: "CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR", source: "overlay" }));
    const role = await http(fresh.baseUrl, "GET", "/api/auth/me", { key: agentKey });
    expect(role.body.data).toMatchObject({ user_id: "agent-1", role: "support-agent" });
  });
});

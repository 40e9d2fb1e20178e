/**
 * The backup story: export every section of one deployment, import the
 * document into a fresh one, and the route works again: the original caller's raw key reaches the
 * same tool (with its literal credential header) as the same execution key, and an asynchronous
 * answer is called back signed with the route's original callback secret. The secrets travel
 * sealed for a deployment holding the settings key, never in the clear.
 */
import { describe, expect, it } from "vitest";
import { hmacSha256, toHex } from "../../src/access-control/crypto";
import { readRecord, send } from "../helpers/bridge";
import { answerOnly, fakeNetwork } from "../helpers/network";
import { admin, call, mintKey } from "../helpers/http";
import { eventually } from "../helpers/threads";
import { count, exported, importDoc, sectionNames, wipeDeployment } from "./helpers";

const TOOL_URL = "https://tools.example.com/greet";
const HOOK = "https://hooks.example.com/bridge";
const TOOL_CREDENTIAL = "Bearer tool-credential-literal";

describe("export from one deployment, import into a fresh one", () => {
  it("reproduces a working route: same raw caller key, same tool answer, callbacks signed with the original secret", async () => {
    const key = await admin();
    const calls = fakeNetwork(
      answerOnly({
        // The tool answers only when its literal credential header came along.
        [`POST ${TOOL_URL}`]: (req, body) =>
          req.headers.get("authorization") === TOOL_CREDENTIAL
            ? Response.json({ greeting: `hello ${JSON.parse(body).text}` })
            : new Response("no credential", { status: 401 }),
        [`POST ${HOOK}`]: () => new Response(null, { status: 204 }),
      }),
    );
    const tool = await call("POST", "/api/tools-config/entries", {
      key,
      body: { title: "greeter", kind: "http", url: TOOL_URL, headers: { authorization: TOOL_CREDENTIAL } },
    });
    expect(tool.status, JSON.stringify(tool.body)).toBe(200);
    const runner = await mintKey({ user_id: "svc-runner", scopes: ["tool:greeter"] });
    const caller = await mintKey({ user_id: "svc-caller", scopes: ["conversations"] });
    const created = await call("POST", "/api/conversations/greet", {
      key,
      body: {
        door: "api",
        target_kind: "tool",
        target_name: "greeter",
        execution_key: runner.user_id,
        payload_expr: "{text: .message}",
        reply_expr: ".greeting",
        callback_url: HOOK,
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const secret = created.body.data.callback_secret as string;
    const before = await send("greet", { external_user_id: "ann", text: "ann", wait_seconds: 10 }, caller.key);
    expect(before.body.data).toMatchObject({ status: "answered", answer: "hello ann" });

    const document = await exported(await sectionNames());
    expect(document.version).toBe(1);
    // The secret parts travel only in the secret sections named for this export, and sealed there
    // (for this deployment's settings key): the document holds none of them in the clear.
    expect(JSON.stringify(document)).not.toContain(TOOL_CREDENTIAL);
    expect(JSON.stringify(document)).not.toContain(secret);
    const sealed = { sealed: { kid: expect.any(String), iv: expect.any(String), ct: expect.any(String) } };
    expect(document.sections["target-secrets"]).toEqual([{ kind: "tool", title: "greeter", headers: { authorization: sealed } }]);
    expect(document.sections["route-secrets"]).toContainEqual({ route_name: "greet", callback_secret: sealed });

    await wipeDeployment();
    expect(await count("SELECT COUNT(*) AS n FROM routes")).toBe(0);
    expect((await send("greet", { external_user_id: "ann", text: "x" }, caller.key)).status).toBe(401);

    const imported = await importDoc(document);
    expect(imported.status, JSON.stringify(imported.body)).toBe(200);
    expect(imported.body.data.ok).toBe(true);
    const outcome = Object.fromEntries(imported.body.data.sections.map((s: any) => [s.name, s]));
    expect(outcome.routes).toEqual({ name: "routes", applied: 1 });
    expect(outcome["route-secrets"]).toEqual({ name: "route-secrets", applied: 1 });
    expect(outcome.tools).toEqual({ name: "tools", applied: 1 });
    // The importing admin's own row is kept, never overwritten by the document's.
    expect(outcome.keys.skipped).toEqual([expect.objectContaining({ reason: expect.stringContaining("importing key's own row") })]);

    // The original caller's raw key works again and the turn runs the same tool as the same key.
    const after = await send("greet", { external_user_id: "ann", text: "bob", wait_seconds: 10 }, caller.key);
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    expect(after.body.data).toMatchObject({ status: "answered", answer: "hello bob" });

    // An asynchronous answer goes to the callback, signed with the route's original secret.
    const queued = await send("greet", { external_user_id: "ann", text: "cy" }, caller.key);
    expect(queued.status).toBe(202);
    await eventually(
      () => readRecord("greet", queued.body.data.message_id),
      (r) => r.body.data?.status === "delivered",
    );
    const hook = calls.filter((c) => c.url === HOOK);
    expect(hook).toHaveLength(1);
    expect(JSON.parse(hook[0].body)).toMatchObject({ status: "answered", answer: "hello cy" });
    expect(hook[0].headers["x-service-signature"]).toBe(`sha256=${toHex(await hmacSha256(secret, hook[0].body))}`);
  });
});

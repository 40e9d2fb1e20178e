/**
 * Hooks end to end: against a real `wrangler dev`, a topic bound to a
 * GitHub verifier and a hook that runs an HTTP tool as a least-privilege key. A GitHub-signed push
 * fires the tool once; the same delivery replayed fires nothing; a forged signature fires nothing;
 * a trigger link fires until it expires, then answers 404. Signatures are computed with Node's
 * crypto, independently of the service's code.
 */
import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "./harness";
import { pollUntil } from "./support/poll";
import { sharedDev } from "./support/shared-dev";
import { type ToolServer, startToolServer } from "./support/tool-server";

let tool: ToolServer;
let base: string;
let key: string;

const SECRET = "e2e-github-webhook-secret";

beforeAll(async () => {
  tool = await startToolServer((k) => ({ deployed: k.commit ?? null }));
  ({ baseUrl: base, adminKey: key } = await sharedDev());
}, 120_000);

afterAll(async () => {
  await tool?.stop();
});

/** POSTs `body` exactly as given (the signature is over these bytes). */
async function post(path: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

const sign = (secret: string, body: string) => `sha256=${createHmac("sha256", secret).update(body, "utf8").digest("hex")}`;

async function runEnded(runId: string) {
  return pollUntil(
    `run ${runId} to end`,
    async () => (await http(base, "GET", `/api/tool-runs/${runId}`, { key })).body?.data,
    (d) => d?.status === "succeeded" || d?.status === "failed",
  );
}

describe("hooks against a real wrangler dev", () => {
  it("a GitHub-signed push fires the tool once; a replay and a forged signature fire nothing; a trigger link fires until it expires", async () => {
    const declared = await http(base, "POST", "/api/tools-config/entries", {
      key,
      body: { title: "deployer", kind: "http", description: "deploys a commit", url: tool.url },
    });
    expect(declared.status, JSON.stringify(declared.body)).toBe(200);
    expect(
      (await http(base, "POST", "/api/auth/api-keys", { key, body: { user_id: "deploy-runner", description: "runs deployer", scopes: ["tool:deployer"] } }))
        .status,
    ).toBe(200);
    const bound = await http(base, "PUT", "/api/hooks/topics/github-push/verifier", { key, body: { kind: "github", secret: SECRET } });
    expect(bound.status, JSON.stringify(bound.body)).toBe(200);
    expect(bound.body.data.secret).toBe("<redacted>");
    const registered = await http(base, "POST", "/api/hooks", {
      key,
      body: {
        name: "deploy-main",
        topic: "github-push",
        tool: "deployer",
        execution_key: "deploy-runner",
        condition: '.ref == "refs/heads/main"',
        expr: "{commit: .head_commit.id}",
      },
    });
    expect(registered.status, JSON.stringify(registered.body)).toBe(200);
    expect(registered.body.data).toEqual({ registered: true, name: "deploy-main" });

    // 1. A signed push fires the tool once, as the bound key.
    const push = JSON.stringify({ ref: "refs/heads/main", head_commit: { id: "abc123", message: "ship it" } });
    const delivery = { "x-github-event": "push", "x-github-delivery": "6f1e2d3c-0000-4000-8000-000000000001", "x-hub-signature-256": sign(SECRET, push) };
    const fired = await post("/api/hooks/incoming/github-push", push, delivery);
    expect(fired.status, JSON.stringify(fired.body)).toBe(202);
    expect(fired.body.data.fired).toHaveLength(1);
    const run = await runEnded(fired.body.data.fired[0].run_id);
    expect(run).toMatchObject({ status: "succeeded", origin: "hook", hook_name: "deploy-main", caller: "deploy-runner", result: { deployed: "abc123" } });
    expect(tool.calls.map((c) => c.kwargs)).toEqual([{ commit: "abc123" }]);

    // 2. The same delivery again: already seen, nothing fires.
    const replay = await post("/api/hooks/incoming/github-push", push, delivery);
    expect(replay).toEqual({ status: 200, body: { data: { status: "already_seen" } } });
    // X-GitHub-Delivery is not signed: changed or dropped on the captured delivery, it is still already seen.
    const renamed = await post("/api/hooks/incoming/github-push", push, { ...delivery, "x-github-delivery": "6f1e2d3c-0000-4000-8000-0000000000ff" });
    expect(renamed).toEqual({ status: 200, body: { data: { status: "already_seen" } } });
    const { "x-github-delivery": _id, ...noId } = delivery;
    expect(await post("/api/hooks/incoming/github-push", push, noId)).toEqual({ status: 200, body: { data: { status: "already_seen" } } });

    // 3. A forged signature (and a tampered body) fire nothing.
    const forged = await post("/api/hooks/incoming/github-push", push, {
      ...delivery,
      "x-github-delivery": "6f1e2d3c-0000-4000-8000-000000000002",
      "x-hub-signature-256": sign("not-the-secret", push),
    });
    expect(forged).toEqual({ status: 401, body: { error: "signature verification failed" } });
    const tampered = await post("/api/hooks/incoming/github-push", push.replace("abc123", "evil99"), {
      ...delivery,
      "x-github-delivery": "6f1e2d3c-0000-4000-8000-000000000003",
    });
    expect(tampered.status).toBe(401);

    // The trace of the fire is listed by kind (the runs index trails by at most about a second).
    const traces = await pollUntil(
      "the hook_fire trace",
      async () => (await http(base, "GET", "/api/runs?kind=hook_fire", { key })).body.data,
      (d) => d.total >= 1,
    );
    expect(traces.items[0]).toMatchObject({ trace_id: run.run_id, kind: "hook_fire", trigger: "hook", outcome: "ok" });

    // 4. A trigger link (its own least-privilege key) fires until it expires, then 404.
    const link = await http(base, "POST", "/api/hooks/trigger-links", {
      key,
      body: { topic: "github-push", execution_key: "deploy-runner", name: "manual-deploy", ttl_seconds: 4 },
    });
    expect(link.status, JSON.stringify(link.body)).toBe(200);
    const manual = JSON.stringify({ ref: "refs/heads/main", head_commit: { id: "def456" } });
    const viaLink = await post(link.body.data.trigger_path, manual);
    expect(viaLink.status, JSON.stringify(viaLink.body)).toBe(202);
    expect((await runEnded(viaLink.body.data.fired[0].run_id)).result).toEqual({ deployed: "def456" });
    // After its expiry (waited for, not timed): the same 404 as an unknown token, and nothing runs.
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(link.body.data.expires_at) - Date.now()) + 1000));
    expect(await post(link.body.data.trigger_path, manual)).toEqual({ status: 404, body: { error: "not found" } });
    expect(await post(`/api/hooks/trigger/trg-${"x".repeat(43)}`, manual)).toEqual({ status: 404, body: { error: "not found" } });

    // Exactly two fires ran the tool: the replay, the forgeries and the expired link ran nothing.
    const listed = await http(base, "GET", "/api/tool-runs?tool_name=deployer", { key });
    expect(listed.body.data.items.map((i: any) => [i.origin, i.hook_name, i.status])).toEqual([
      ["hook", "deploy-main", "succeeded"],
      ["hook", "deploy-main", "succeeded"],
    ]);
    expect(tool.calls.map((c) => c.kwargs.commit)).toEqual(["abc123", "def456"]);
  });
});

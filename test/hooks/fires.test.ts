/**
 * Firing hooks through the public doors (docs/hooks.md "Firing"): an open topic fires
 * for anyone; a verified topic checks the raw body first and fails closed; a replayed delivery id
 * fires nothing; the condition, the expr and the input merge; each fire is a background tool run
 * as the bound key, re-checked live, with a `hook_fire` trace; trigger links fire as their own key
 * until they expire, and every miss is one uniform 404.
 */
import { createHmac } from "node:crypto";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, admin, call, fetchWithEnv, mintKey, readResult, uniq } from "../helpers/http";
import { declareTool, network } from "../operator/helpers";
import { endedRun, indexRow, traceOf } from "../tool-runs/helpers";
import { bindVerifier, deliver, githubSignature, hook } from "./helpers";

const topicOf = () => uniq("topic").toLowerCase();
const nameOf = () => uniq("hook").toLowerCase();
const runsOfHook = async (name: string) =>
  (await env.DB.prepare("SELECT run_id FROM tool_runs WHERE hook_name = ?").bind(name).all<{ run_id: string }>()).results.map((r) => r.run_id);

/** A declared HTTP tool that answers the kwargs it was given; `seen` collects them. */
async function kwargsTool() {
  const host = `hooked-${crypto.randomUUID().slice(0, 8)}.example`;
  const title = host.split(".")[0];
  await declareTool(title, `https://${host}/run`);
  const seen: any[] = [];
  network({
    [host]: (kwargs) => {
      seen.push(kwargs);
      return { got: kwargs };
    },
  });
  return { title, seen };
}

describe("an open topic", () => {
  it("fires for anyone: the condition, the expr, a background run as the bound key, a hook_fire trace", async () => {
    const runner = await mintKey({ scopes: ["tool:echo"] });
    const topic = topicOf();
    const name = nameOf();
    await hook({ name, topic, tool: "echo", execution_key: runner.user_id, condition: '.action == "opened"', expr: "{message: .pr.title}" });
    const r = await deliver(topic, JSON.stringify({ action: "opened", pr: { title: "Fix the build" } }));
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(r.body.data).toEqual({ status: "accepted", fired: [{ hook: name, run_id: expect.stringMatching(/^[0-9a-f-]{36}$/) }], skipped: [] });
    const runId = r.body.data.fired[0].run_id;
    const run = await endedRun(runId);
    expect(run).toMatchObject({
      status: "succeeded",
      result: "Fix the build",
      caller: runner.user_id,
      origin: "hook",
      hook_name: name,
      schedule_name: null,
      state_bound: false,
      arguments: { message: "Fix the build" },
    });
    expect(await indexRow(runId)).toMatchObject({ origin: "hook", hook_name: name, status: "succeeded" });
    const { listed, trace } = await traceOf(runId);
    expect(listed).toMatchObject({
      trace_id: runId,
      kind: "hook_fire",
      trigger: "hook",
      target: { kind: "tool", name: "echo" },
      user_id: runner.user_id,
      outcome: "ok",
    });
    expect(trace.steps).toEqual([expect.objectContaining({ kind: "tool", name: "echo", outcome: "ok" })]);
    const byKind = await call("GET", "/api/runs?kind=hook_fire&pageSize=200", { key: await admin() });
    expect(byKind.body.data.items.map((i: any) => i.trace_id)).toContain(runId);
    // A delivery the condition does not hold for fires nothing.
    const closed = await deliver(topic, JSON.stringify({ action: "closed", pr: { title: "x" } }));
    expect(closed.body.data).toEqual({ status: "accepted", fired: [], skipped: [{ hook: name, reason: "condition was not true" }] });
    expect(await runsOfHook(name)).toEqual([runId]);
  });

  it("a jq error or a wrong-typed expr is a skip with its kind (202, never a 5xx), and never echoes a payload value", async () => {
    const topic = topicOf();
    const [bad, notObject, fine] = ["a", "b", "c"].map((p) => `${p}-${nameOf()}`);
    await hook({ name: bad, topic, tool: "echo", execution_key: "root", condition: ".n | tonumber > 1" });
    await hook({ name: notObject, topic, tool: "echo", execution_key: "root", expr: ".n" });
    await hook({ name: fine, topic, tool: "echo", execution_key: "root", tool_kwargs: { message: "static" } });
    const r = await deliver(topic, JSON.stringify({ n: "PAYLOADVALUE" }));
    expect(r.status).toBe(202);
    expect(r.body.data.skipped).toEqual([
      { hook: bad, reason: "condition failed (jq runtime error)" },
      { hook: notObject, reason: "expr must emit an object; it emitted a string" },
    ]);
    expect(r.body.data.fired.map((f: any) => f.hook)).toEqual([fine]);
    expect(JSON.stringify(r.body)).not.toContain("PAYLOADVALUE");
    expect((await endedRun(r.body.data.fired[0].run_id)).result).toBe("static");
  });

  it("a topic with no hooks answers 202 with nothing fired; a non-JSON body is 400; GET is a ping", async () => {
    expect((await deliver(topicOf(), '{"a":1}')).body).toEqual({ data: { status: "accepted", fired: [], skipped: [] } });
    expect((await deliver(topicOf(), "")).status).toBe(202);
    const topic = topicOf();
    await hook({ name: nameOf(), topic, tool: "echo", execution_key: "root" });
    const notJson = await deliver(topic, "not json PAYLOADVALUE");
    expect(notJson.status).toBe(400);
    expect(notJson.body).toEqual({ error: "the body must be JSON (or empty)" });
    expect((await call("GET", `/api/hooks/incoming/${topic}`)).body).toEqual({ data: { status: "ready" } });
    expect((await call("GET", `/api/hooks/incoming/${topicOf()}`)).body).toEqual({ data: { status: "ready" } });
  });

  it("a replayed X-Delivery-Id answers already_seen and fires nothing", async () => {
    const topic = topicOf();
    const name = nameOf();
    await hook({ name, topic, tool: "echo", execution_key: "root", tool_kwargs: { message: "once" } });
    const id = { "x-delivery-id": crypto.randomUUID() };
    const first = await deliver(topic, "{}", id);
    expect(first.status).toBe(202);
    const again = await deliver(topic, "{}", id);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ data: { status: "already_seen" } });
    // Without a delivery id there is no replay check.
    expect((await deliver(topic, "{}")).status).toBe(202);
    expect(await runsOfHook(name)).toHaveLength(2);
  });

  it("merges the input strongest last: expr output, then a trigger link's tool_kwargs, then the hook's tool_kwargs", async () => {
    const tool = await kwargsTool();
    const runner = await mintKey({ scopes: [`tool:${tool.title}`] });
    const topic = topicOf();
    await hook({
      name: nameOf(),
      topic,
      tool: tool.title,
      execution_key: runner.user_id,
      expr: '{a: "expr", b: "expr", c: "expr", p: .p}',
      tool_kwargs: { c: "hook" },
    });
    const link = await call("POST", "/api/hooks/trigger-links", {
      key: await admin(),
      body: { topic, execution_key: runner.user_id, ttl_seconds: 600, tool_kwargs: { b: "link", c: "link" } },
    });
    const viaLink = await call("POST", link.body.data.trigger_path, { rawBody: JSON.stringify({ p: 1 }) });
    expect(viaLink.status, JSON.stringify(viaLink.body)).toBe(202);
    expect((await endedRun(viaLink.body.data.fired[0].run_id)).result).toEqual({ got: { a: "expr", b: "link", c: "hook", p: 1 } });
    const direct = await deliver(topic, JSON.stringify({ p: 2 }));
    expect((await endedRun(direct.body.data.fired[0].run_id)).result).toEqual({ got: { a: "expr", b: "expr", c: "hook", p: 2 } });
  });

  it("each fire re-checks the bound key live: a key that lost its grant makes the run fail denied (recorded)", async () => {
    const runner = await mintKey({ scopes: ["tool:echo"] });
    const topic = topicOf();
    await hook({ name: nameOf(), topic, tool: "echo", execution_key: runner.user_id, tool_kwargs: { message: "x" } });
    expect((await call("PUT", `/api/auth/api-keys/${runner.user_id}`, { key: await admin(), body: { scopes: [] } })).status).toBe(200);
    const r = await deliver(topic, "{}");
    const run = await endedRun(r.body.data.fired[0].run_id);
    expect(run).toMatchObject({ status: "failed", error_kind: "denied", origin: "hook" });
    expect((await traceOf(run.run_id)).listed).toMatchObject({ kind: "hook_fire", outcome: "denied" });
  });
});

describe("a fire that cannot be submitted", () => {
  it("answers 503 and releases the delivery id; the redelivery fires, and a hook submitted before the fault does not run twice", async () => {
    const topic = topicOf();
    const [first, second] = [`a-${nameOf()}`, `b-${nameOf()}`];
    await hook({ name: first, topic, tool: "echo", execution_key: "root", tool_kwargs: { message: "1" } });
    await hook({ name: second, topic, tool: "echo", execution_key: "root", tool_kwargs: { message: "2" } });
    // A ToolRun namespace whose second object is out of reach.
    let gets = 0;
    const flaky = {
      idFromName: (n: string) => env.TOOL_RUNS.idFromName(n),
      get: (id: DurableObjectId) => {
        gets += 1;
        if (gets === 2) return { submit: async () => Promise.reject(new Error("object unreachable")) };
        return env.TOOL_RUNS.get(id);
      },
    };
    const headers = { "content-type": "application/json", "x-delivery-id": crypto.randomUUID() };
    const failed = await readResult(
      await fetchWithEnv({ ...env, TOOL_RUNS: flaky }, new Request(`${BASE}/api/hooks/incoming/${topic}`, { method: "POST", headers, body: "{}" })),
    );
    expect([failed.status, failed.body]).toEqual([503, { error: "temporarily unable to accept; redeliver later", code: "hook_fire_failed" }]);
    const before = await runsOfHook(first);
    expect(before).toHaveLength(1);
    const again = await deliver(topic, "{}", headers);
    expect(again.status, JSON.stringify(again.body)).toBe(202);
    expect(again.body.data.fired.map((f: any) => f.hook)).toEqual([first, second]);
    // The same run id as before the fault: submitting it again changed nothing.
    expect(again.body.data.fired[0].run_id).toBe(before[0]);
    expect(await runsOfHook(first)).toEqual(before);
    expect(await runsOfHook(second)).toHaveLength(1);
    expect((await deliver(topic, "{}", headers)).body.data).toEqual({ status: "already_seen" });
  });
});

describe("a verified topic", () => {
  const secret = "github-hook-secret";

  it("GitHub: a signed delivery fires once, a replay (same X-GitHub-Delivery) fires nothing, a forged or missing signature is 401", async () => {
    const topic = topicOf();
    await bindVerifier(topic, { kind: "github", secret });
    const name = nameOf();
    await hook({ name, topic, tool: "echo", execution_key: "root", condition: '.ref == "refs/heads/main"', expr: "{message: .head_commit.message}" });
    const body = JSON.stringify({ ref: "refs/heads/main", head_commit: { message: "ship it" } });
    const delivery = crypto.randomUUID();
    const signed = { "x-hub-signature-256": githubSignature(secret, body), "x-github-delivery": delivery, "x-github-event": "push" };
    const r = await deliver(topic, body, signed);
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect((await endedRun(r.body.data.fired[0].run_id)).result).toBe("ship it");
    expect((await deliver(topic, body, signed)).body).toEqual({ data: { status: "already_seen" } });
    const forged = await deliver(topic, body, {
      ...signed,
      "x-hub-signature-256": githubSignature("not the secret", body),
      "x-github-delivery": crypto.randomUUID(),
    });
    expect(forged.status).toBe(401);
    expect(forged.body).toEqual({ error: "signature verification failed" });
    const tampered = await deliver(topic, body.replace("ship it", "rm -rf"), { ...signed, "x-github-delivery": crypto.randomUUID() });
    expect(tampered.body).toEqual({ error: "signature verification failed" });
    expect((await deliver(topic, body)).body).toEqual({ error: "signature verification failed" });
    expect(await runsOfHook(name)).toHaveLength(1);
  });

  it("an unverified caller learns nothing about the topic's hooks: the same 401 with or without hooks", async () => {
    const [withHooks, without] = [topicOf(), topicOf()];
    await bindVerifier(withHooks, { kind: "github", secret });
    await bindVerifier(without, { kind: "github", secret });
    await hook({ name: nameOf(), topic: withHooks, tool: "echo", execution_key: "root" });
    const a = await deliver(withHooks, "{}");
    const b = await deliver(without, "{}");
    expect([a.status, b.status]).toEqual([401, 401]);
    expect(a.body).toEqual(b.body);
  });

  it("Stripe: the verified event id is the replay key; a stale timestamp is 401", async () => {
    const topic = topicOf();
    const whsec = "whsec_stripe_test_secret";
    await bindVerifier(topic, { kind: "stripe", secret: whsec });
    const name = nameOf();
    await hook({ name, topic, tool: "echo", execution_key: "root", expr: "{message: .type}" });
    const body = JSON.stringify({ id: `evt_${crypto.randomUUID()}`, type: "invoice.paid" });
    const sign = (t: number) => ({ "stripe-signature": `t=${t},v1=${createHmac("sha256", whsec).update(`${t}.${body}`, "utf8").digest("hex")}` });
    const now = Math.floor(Date.now() / 1000);
    const r = await deliver(topic, body, sign(now));
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect((await endedRun(r.body.data.fired[0].run_id)).result).toBe("invoice.paid");
    expect((await deliver(topic, body, sign(now + 1))).body).toEqual({ data: { status: "already_seen" } });
    expect((await deliver(topic, body, sign(now - 3600))).status).toBe(401);
    expect(await runsOfHook(name)).toHaveLength(1);
  });

  it("a secret that cannot be had (an unset env reference) fails closed", async () => {
    const topic = topicOf();
    await bindVerifier(topic, { kind: "hmac_sha256", secret: { env: "SECRET_HOOK_UNSET_IN_TESTS" } });
    await hook({ name: nameOf(), topic, tool: "echo", execution_key: "root" });
    const body = "{}";
    const r = await deliver(topic, body, { "x-signature-256": createHmac("sha256", "").update(body, "utf8").digest("hex") });
    expect(r.status).toBe(401);
  });

  it("generic HMAC with delivery_header null: a replayed delivery still answers already_seen (the signed body is the replay key); another body fires", async () => {
    const topic = topicOf();
    await bindVerifier(topic, { kind: "hmac_sha256", secret: "generic-secret", signature_header: "X-Build-Signature", delivery_header: null });
    const name = nameOf();
    await hook({ name, topic, tool: "echo", execution_key: "root", tool_kwargs: { message: "built" } });
    const sign = (body: string) => ({ "x-build-signature": `sha256=${createHmac("sha256", "generic-secret").update(body, "utf8").digest("hex")}` });
    const body = '{"build":7}';
    expect((await deliver(topic, body, sign(body))).status).toBe(202);
    expect((await deliver(topic, body, sign(body))).body).toEqual({ data: { status: "already_seen" } });
    expect((await deliver(topic, '{"build":8}', sign('{"build":8}'))).status).toBe(202);
    expect(await runsOfHook(name)).toHaveLength(2);
  });

  it("GitHub: a captured delivery re-sent with a changed X-GitHub-Delivery, or with none, answers already_seen and fires nothing", async () => {
    const topic = topicOf();
    await bindVerifier(topic, { kind: "github", secret });
    const name = nameOf();
    await hook({ name, topic, tool: "echo", execution_key: "root", expr: "{message: .head_commit.message}" });
    const body = JSON.stringify({ ref: "refs/heads/main", head_commit: { message: `captured ${crypto.randomUUID()}` } });
    const captured = { "x-hub-signature-256": githubSignature(secret, body), "x-github-delivery": crypto.randomUUID(), "x-github-event": "push" };
    expect((await deliver(topic, body, captured)).status).toBe(202);
    const { "x-github-delivery": _dropped, ...withoutId } = captured;
    for (const replay of [{ ...captured, "x-github-delivery": crypto.randomUUID() }, withoutId, { ...captured, "x-github-delivery": "" }]) {
      const r = await deliver(topic, body, replay);
      expect([r.status, r.body]).toEqual([200, { data: { status: "already_seen" } }]);
    }
    expect(await runsOfHook(name)).toHaveLength(1);
  });

  it("generic HMAC: a captured delivery re-sent with a changed or dropped delivery header answers already_seen and fires nothing", async () => {
    const topic = topicOf();
    await bindVerifier(topic, { kind: "hmac_sha256", secret: "generic-secret" });
    const name = nameOf();
    await hook({ name, topic, tool: "echo", execution_key: "root", tool_kwargs: { message: "deploy" } });
    const body = JSON.stringify({ deploy: crypto.randomUUID() });
    const signature = { "x-signature-256": createHmac("sha256", "generic-secret").update(body, "utf8").digest("hex") };
    expect((await deliver(topic, body, { ...signature, "x-delivery-id": "d-1" })).status).toBe(202);
    for (const replay of [{ ...signature, "x-delivery-id": "d-2" }, signature]) {
      const r = await deliver(topic, body, replay);
      expect([r.status, r.body]).toEqual([200, { data: { status: "already_seen" } }]);
    }
    expect(await runsOfHook(name)).toHaveLength(1);
  });

  it("Standard Webhooks and Stripe sign their ids: a changed webhook-id no longer verifies (401), and a changed Stripe id is a changed body", async () => {
    const topic = topicOf();
    const key = btoa("standard-webhooks-test-key!");
    await bindVerifier(topic, { kind: "standard_webhooks", secret: `whsec_${key}` });
    const name = nameOf();
    await hook({ name, topic, tool: "echo", execution_key: "root", tool_kwargs: { message: "sw" } });
    const body = JSON.stringify({ type: "thing.happened" });
    const id = `msg_${crypto.randomUUID().replace(/-/g, "")}`;
    const ts = String(Math.floor(Date.now() / 1000));
    const hmacKey = await crypto.subtle.importKey(
      "raw",
      Uint8Array.from(atob(key), (c) => c.charCodeAt(0)),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    const sig = btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.sign("HMAC", hmacKey, new TextEncoder().encode(`${id}.${ts}.${body}`)))));
    const headers = { "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": `v1,${sig}` };
    expect((await deliver(topic, body, headers)).status).toBe(202);
    expect((await deliver(topic, body, headers)).body).toEqual({ data: { status: "already_seen" } });
    expect((await deliver(topic, body, { ...headers, "webhook-id": `${id}x` })).status).toBe(401);
    expect(await runsOfHook(name)).toHaveLength(1);

    const stripeTopic = topicOf();
    await bindVerifier(stripeTopic, { kind: "stripe", secret: "whsec_stripe_test_secret" });
    await hook({ name: nameOf(), topic: stripeTopic, tool: "echo", execution_key: "root", tool_kwargs: { message: "st" } });
    const event = JSON.stringify({ id: `evt_${crypto.randomUUID()}`, type: "invoice.paid" });
    const t = Math.floor(Date.now() / 1000);
    const stripeSig = { "stripe-signature": `t=${t},v1=${createHmac("sha256", "whsec_stripe_test_secret").update(`${t}.${event}`, "utf8").digest("hex")}` };
    expect((await deliver(stripeTopic, event, stripeSig)).status).toBe(202);
    expect((await deliver(stripeTopic, event.replace("evt_", "evt_x"), stripeSig)).status).toBe(401);
  });
});

describe("trigger links", () => {
  it("fire the topic's hooks as the link's key (POST body or GET query), until they expire; every miss is the same 404", async () => {
    const tool = await kwargsTool();
    const hookKey = await mintKey({ scopes: [`tool:${tool.title}`] });
    const linkKey = await mintKey({ scopes: [`tool:${tool.title}`] });
    const topic = topicOf();
    // The topic has a verifier: the link's token is its own authentication.
    await bindVerifier(topic, { kind: "github", secret: "github-hook-secret" });
    await hook({ name: nameOf(), topic, tool: tool.title, execution_key: hookKey.user_id, expr: "{v: .v}" });
    const created = await call("POST", "/api/hooks/trigger-links", { key: await admin(), body: { topic, execution_key: linkKey.user_id, ttl_seconds: 600 } });
    const path = created.body.data.trigger_path;
    const post = await call("POST", path, { rawBody: JSON.stringify({ v: "posted" }) });
    expect(post.status, JSON.stringify(post.body)).toBe(202);
    const posted = await endedRun(post.body.data.fired[0].run_id);
    expect(posted).toMatchObject({ caller: linkKey.user_id, origin: "hook", result: { got: { v: "posted" } } });
    const get = await call("GET", `${path}?v=queried&w=2`);
    expect(get.status).toBe(202);
    expect((await endedRun(get.body.data.fired[0].run_id)).result).toEqual({ got: { v: "queried" } });
    // Expired (the clock moved past it): the same 404 as an unknown, malformed or deleted token.
    await env.DB.prepare("UPDATE hook_trigger_links SET expires_at = ? WHERE name = ?")
      .bind(Date.now() - 1, created.body.data.name)
      .run();
    const misses = [
      await call("POST", path, { rawBody: "{}" }),
      await call("GET", path),
      await call("POST", `/api/hooks/trigger/trg-${"A".repeat(43)}`, { rawBody: "{}" }),
      await call("POST", "/api/hooks/trigger/nonsense", { rawBody: "{}" }),
    ];
    for (const m of misses) expect([m.status, m.body]).toEqual([404, { error: "not found" }]);
    const live = await call("POST", "/api/hooks/trigger-links", { key: await admin(), body: { topic, execution_key: linkKey.user_id, ttl_seconds: null } });
    expect((await call("DELETE", `/api/hooks/trigger-links/${live.body.data.name}`, { key: await admin() })).status).toBe(200);
    const deleted = await call("POST", live.body.data.trigger_path, { rawBody: "{}" });
    expect([deleted.status, deleted.body]).toEqual([404, { error: "not found" }]);
  });

  it("require_api_key: no key or an invalid key is the same 404; a valid key fires", async () => {
    const topic = topicOf();
    await hook({ name: nameOf(), topic, tool: "echo", execution_key: "root", tool_kwargs: { message: "k" } });
    const created = await call("POST", "/api/hooks/trigger-links", {
      key: await admin(),
      body: { topic, execution_key: "root", ttl_seconds: 600, require_api_key: true },
    });
    const path = created.body.data.trigger_path;
    const none = await call("POST", path, { rawBody: "{}" });
    const invalid = await call("POST", path, { rawBody: "{}", key: `sk-${"B".repeat(43)}` });
    for (const m of [none, invalid]) expect([m.status, m.body]).toEqual([404, { error: "not found" }]);
    const anyKey = await mintKey({ scopes: [] });
    const ok = await call("POST", path, { rawBody: "{}", key: anyKey.key });
    expect(ok.status, JSON.stringify(ok.body)).toBe(202);
    expect(ok.body.data.fired).toHaveLength(1);
  });

  it("a link's X-Delivery-Id is a replay key too", async () => {
    const topic = topicOf();
    await hook({ name: nameOf(), topic, tool: "echo", execution_key: "root", tool_kwargs: { message: "k" } });
    const created = await call("POST", "/api/hooks/trigger-links", { key: await admin(), body: { topic, execution_key: "root", ttl_seconds: 600 } });
    const headers = { "x-delivery-id": "link-delivery-1" };
    expect((await call("POST", created.body.data.trigger_path, { rawBody: "{}", headers })).status).toBe(202);
    expect((await call("POST", created.body.data.trigger_path, { rawBody: "{}", headers })).body).toEqual({ data: { status: "already_seen" } });
  });
});

describe("state bindings on hook fires", () => {
  const PREFS = { type: "object", properties: { last: { type: "string" }, count: { type: "integer" } } };
  const tt = (content: string) => ({ content });

  it("the run injects the subject's record before dispatch and applies the updates after, with a hook origin", async () => {
    const key = await admin();
    const state = uniq("prefs").toLowerCase();
    expect((await call("PUT", `/api/states/${state}`, { key, body: { schema: PREFS, subject_kinds: ["user"] } })).status).toBe(200);
    const tool = await kwargsTool();
    const runner = await mintKey({ scopes: [`tool:${tool.title}`] });
    const topic = topicOf();
    const name = nameOf();
    const binding = {
      states: [
        {
          state,
          subject_expr: tt(".user"),
          input_injections: [{ into: "prefs", jq: tt(".record") }],
          updates: [{ jq: tt('[{op: "set", path: ["last"], value: .input.text}, {op: "set", path: ["count"], value: ((.record.count // 0) + 1)}]') }],
        },
      ],
    };
    const reg = await hook({ name, topic, tool: tool.title, execution_key: runner.user_id, expr: "{user: .user, text: .text}", state_binding: binding });
    expect(reg.body.data.registered).toBe(true);
    const listed = (await call("GET", `/api/hooks?topic=${topic}`, { key })).body.data.items[0];
    expect(listed.state_binding.states[0].state).toBe(state);

    const first = await deliver(topic, JSON.stringify({ user: "u-1", text: "hello" }));
    const run1 = await endedRun(first.body.data.fired[0].run_id);
    expect(run1).toMatchObject({ status: "succeeded", state_bound: true });
    expect(tool.seen[0].prefs).toEqual({});
    const second = await deliver(topic, JSON.stringify({ user: "u-1", text: "again" }));
    await endedRun(second.body.data.fired[0].run_id);
    expect(tool.seen[1].prefs).toEqual({ last: "hello", count: 1 });
    const record = await call("GET", `/api/states/${state}/records/tool/${tool.title}/user/u-1`, { key });
    expect(record.body.data).toMatchObject({ data: { last: "again", count: 2 }, seq: 2 });
    const writes = await call("GET", `/api/states/${state}/records/tool/${tool.title}/user/u-1/writes`, { key });
    expect(writes.body.data.items[0].origin).toMatchObject({
      door: "hook",
      actor: runner.user_id,
      consumer: `hook:${name}`,
      meta: { hook: name },
      run_id: second.body.data.fired[0].run_id,
      turn_id: null,
    });
  });

  it("a binding that fails at run time fails the run with error_kind state_binding and a message naming the step, not the value", async () => {
    const key = await admin();
    const state = uniq("prefs").toLowerCase();
    expect((await call("PUT", `/api/states/${state}`, { key, body: { schema: PREFS, subject_kinds: ["user"] } })).status).toBe(200);
    const topic = topicOf();
    await hook({
      name: nameOf(),
      topic,
      tool: "echo",
      execution_key: "root",
      tool_kwargs: { message: "m" },
      expr: "{user: .user}",
      state_binding: { states: [{ state, subject_expr: tt(".user") }] },
    });
    const r = await deliver(topic, JSON.stringify({ user: 12345 }));
    const run = await endedRun(r.body.data.fired[0].run_id);
    expect(run).toMatchObject({ status: "failed", error_kind: "state_binding" });
    expect(run.error).toMatch(/state binding \(.*\) subject_expr must answer a subject/);
    expect(run.error).not.toContain("12345");
  });
});

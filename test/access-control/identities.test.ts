/**
 * Identities (docs/access-control.md, "Identities"): a user_id, once a key held it, cannot pass to
 * another holder's lineage. A revoked user_id is retired for everyone but an admin re-issuing it,
 * and whatever is keyed by the user_id (the identity's notification feed, interactions addressed
 * to it, its tool runs and traces, the hooks, links and schedules it made, its policy history, its
 * api threads) stays with the lineage that created it: a re-issued id, or a never-used one, starts
 * with nothing.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createRoute, send } from "../helpers/bridge";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { eventually } from "../helpers/threads";
import { askRoute } from "../interactions/helpers";

const RETIRED = { status: 409, body: { code: "user-id-retired" } };

/** A non-admin that may mint keys (it owns what it mints), with the grants its keys will need. */
const MANAGER_SCOPES = ["auth", "notifications", "interactions", "tools", "hooks", "schedules", "runs", "observability", "conversations"];
/** What the identity under test holds: an owned ("restricted") key, so it reads its own data only. */
const HOLDER_SCOPES = ["notifications", "interactions", "tools:read", "tool:echo", "hooks", "schedules", "runs:read", "observability:read", "conversations"];

describe("a revoked user_id is retired", () => {
  it("a non-admin cannot mint a key under a revoked user_id (409 naming the rule, never the value); an admin can", async () => {
    const key = await admin();
    const manager = await mintKey({ scopes: MANAGER_SCOPES });
    // Someone else's key, revoked: the attack of the finding is to mint it again as one's own.
    const victim = await mintKey({ user_id: uniq("victim"), scopes: ["tools:read"] });
    expect((await call("DELETE", `/api/auth/api-keys/${victim.user_id}`, { key })).status).toBe(200);
    const again = await call("POST", "/api/auth/api-keys", { key: manager.key, body: { user_id: victim.user_id, scopes: ["tools:read"] } });
    expect(again).toMatchObject(RETIRED);
    expect(again.body.error).toContain("revoked");
    expect(again.body.error).not.toContain(victim.user_id);

    // Its own owned key, revoked by itself: retired for it too.
    const own = await mintKey({ scopes: ["tools:read"] }, manager.key);
    expect((await call("DELETE", `/api/auth/api-keys/${own.user_id}`, { key: manager.key })).status).toBe(200);
    expect(await call("POST", "/api/auth/api-keys", { key: manager.key, body: { user_id: own.user_id, scopes: ["tools:read"] } })).toMatchObject(RETIRED);

    // A key that logs out retires its user_id, and so do the keys its revoke takes along.
    const leaver = await mintKey({ scopes: ["auth", "tools:read"] });
    const leaversOwn = await mintKey({ scopes: ["tools:read"] }, leaver.key);
    expect((await call("POST", "/api/auth/logout", { key: leaver.key })).status).toBe(200);
    for (const id of [leaver.user_id, leaversOwn.user_id]) {
      expect(await call("POST", "/api/auth/api-keys", { key: manager.key, body: { user_id: id, scopes: ["tools:read"] } })).toMatchObject(RETIRED);
    }

    // Claim links never carry a retired user_id, whoever makes them.
    for (const maker of [manager.key, key]) {
      const link = await call("POST", "/api/auth/claim-links", { key: maker, body: { user_id: victim.user_id, scopes: ["tools:read"] } });
      expect(link).toMatchObject(RETIRED);
      expect(link.body.error).not.toContain(victim.user_id);
    }

    // An admin re-issues it; revoked again, it is retired again.
    const reissued = await call("POST", "/api/auth/api-keys", { key, body: { user_id: victim.user_id, scopes: ["tools:read"] } });
    expect(reissued.status).toBe(200);
    expect((await call("GET", "/api/auth/me", { key: reissued.body.data.api_key })).body.data.user_id).toBe(victim.user_id);
    expect((await call("DELETE", `/api/auth/api-keys/${victim.user_id}`, { key })).status).toBe(200);
    expect(await call("POST", "/api/auth/api-keys", { key: manager.key, body: { user_id: victim.user_id, scopes: [] } })).toMatchObject(RETIRED);
    // The tombstone names the revoking key and the last holder's generation.
    const row = await env.DB.prepare("SELECT generation, revoked_by FROM user_id_tombstones WHERE user_id = ?").bind(victim.user_id).first();
    expect(row).toEqual({ generation: 1, revoked_by: "root" });
  });

  it("a claim link whose user_id was minted and revoked after the link was made cannot claim", async () => {
    const key = await admin();
    const id = uniq("claimed");
    const link = await call("POST", "/api/auth/claim-links", { key, body: { user_id: id, scopes: ["tools:read"] } });
    expect(link.status).toBe(200);
    // The mint door does not consult links: a key minted directly wins, then is revoked.
    await mintKey({ user_id: id, scopes: ["tools:read"] });
    expect((await call("DELETE", `/api/auth/api-keys/${id}`, { key })).status).toBe(200);
    const claim = await call("POST", "/api/login/claim", { headers: { "cf-connecting-ip": "10.26.4.1" }, body: { token: link.body.data.token } });
    expect(claim).toMatchObject({ status: 400, body: { error: "claim token is invalid, expired or already used" } });
    expect(await env.DB.prepare("SELECT 1 FROM api_keys WHERE user_id = ?").bind(id).first()).toBeNull();
  });

  it("a revoked creator's open claim links are dropped: an admin re-issuing the creator's user_id does not revive them", async () => {
    const key = await admin();
    const creator = await mintKey({ user_id: uniq("creator"), scopes: ["auth", "tools:read"] });
    const link = await call("POST", "/api/auth/claim-links", { key: creator.key, body: { user_id: uniq("handed"), scopes: ["tools:read"] } });
    expect(link.status).toBe(200);
    expect((await call("DELETE", `/api/auth/api-keys/${creator.user_id}`, { key })).status).toBe(200);
    expect((await call("POST", "/api/auth/api-keys", { key, body: { user_id: creator.user_id, scopes: ["auth", "tools:read"] } })).status).toBe(200);
    const claim = await call("POST", "/api/login/claim", { headers: { "cf-connecting-ip": "10.26.4.2" }, body: { token: link.body.data.token } });
    expect(claim.status).toBe(400);
  });
});

/** Waits until `path`, read with `key`, satisfies `ok` (listings trail their writes by a batch). */
async function readUntil(path: string, key: string, ok: (body: any) => boolean): Promise<any> {
  const r = await eventually(
    () => call("GET", path, { key }),
    (x) => x.status === 200 && ok(x.body),
  );
  expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
  expect(ok(r.body), `${path}: ${JSON.stringify(r.body)}`).toBe(true);
  return r.body;
}

describe("a re-issued user_id inherits nothing keyed by it", () => {
  it("the feed, interactions, tool runs, traces, hooks, links, schedules, policy history and api threads stay with the first holder", async () => {
    const key = await admin();
    const firstOwner = await mintKey({ scopes: MANAGER_SCOPES });
    const id = uniq("heir");
    const first = await mintKey({ user_id: id, scopes: HOLDER_SCOPES }, firstOwner.key);

    // The first holder's data, each checked visible to it, so every later absence means something.
    const ask = await askRoute({ audience: id });
    const asked = await send(ask.name, { external_user_id: "u", text: "Approve the first holder's refund?", wait_seconds: 10 });
    expect(asked.status).toBe(200);
    expect((await call("POST", "/api/notifications", { key: first.key, body: { message: "first holder's note" } })).status).toBe(200);
    const feed1 = await readUntil("/api/notifications", first.key, (b) => b.data.notifications.length >= 2);
    expect(JSON.stringify(feed1)).toContain("first holder's note");
    const interactions1 = await readUntil("/api/interactions", first.key, (b) => b.data.total === 1);
    const interactionId = interactions1.data.items[0].interaction_id;

    const run = await call("POST", "/api/tool-runs", { key: first.key, body: { tool_name: "echo", arguments: { message: "first holder's run" } } });
    expect(run.status).toBe(202);
    const runId = run.body.data.run_id;
    expect((await call("GET", `/api/tool-runs/${runId}`, { key: first.key })).status).toBe(200);
    const traces1 = await readUntil("/api/runs", first.key, (b) => b.data.total >= 1);
    const traceId = traces1.data.items[0].trace_id;
    expect((await call("GET", `/api/observability/runs/${traceId}/trace`, { key: first.key })).status).toBe(200);
    const runsCounted = (r: any) => r.body.data.runs_by_kind.reduce((n: number, k: { total: number }) => n + k.total, 0);
    expect(runsCounted(await call("GET", "/api/observability/metrics", { key: first.key }))).toBeGreaterThanOrEqual(1);

    const topic = uniq("topic").toLowerCase();
    const hookName = uniq("hook").toLowerCase();
    expect((await call("POST", "/api/hooks", { key: first.key, body: { name: hookName, topic, tool: "echo", execution_key: id } })).status).toBe(200);
    const linkName = uniq("link").toLowerCase();
    expect(
      (await call("POST", "/api/hooks/trigger-links", { key: first.key, body: { name: linkName, topic, execution_key: id, ttl_seconds: null } })).status,
    ).toBe(200);
    const scheduleName = uniq("nightly");
    const schedule = { tool_name: "echo", tool_kwargs: { message: "m" }, schedule_kwargs: { cron: "0 6 * * *" }, execution_key: id, name: scheduleName };
    expect((await call("POST", "/api/schedules", { key: first.key, body: schedule })).status).toBe(200);

    const route = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: "root" });
    const said1 = await send(route.name, { external_user_id: "same-user", text: "first holder's conversation", wait_seconds: 10 }, first.key);
    expect(said1.status).toBe(200);

    // The first holder goes; an admin issues the user_id again, owned by someone else.
    expect((await call("DELETE", `/api/auth/api-keys/${id}`, { key: firstOwner.key })).status).toBe(200);
    const secondOwner = await mintKey({ scopes: MANAGER_SCOPES });
    const reissued = await call("POST", "/api/auth/api-keys", { key, body: { user_id: id, scopes: HOLDER_SCOPES, owner_user_id: secondOwner.user_id } });
    expect(reissued.status).toBe(200);
    const second = reissued.body.data.api_key as string;

    // The feed: neither the ticket nor the note addressed to the first holder.
    expect((await call("GET", "/api/notifications", { key: second })).body.data.notifications).toEqual([]);
    // Interactions addressed to the user_id before: not listed, not readable, not answerable.
    expect((await call("GET", "/api/interactions", { key: second })).body.data.total).toBe(0);
    expect((await call("GET", "/api/interactions/pending", { key: second })).body.data.total).toBe(0);
    expect((await call("POST", `/api/interactions/${interactionId}/answer`, { key: second, body: { option_id: "yes" } })).status).toBe(404);
    expect((await call("POST", `/api/interactions/${interactionId}/cancel`, { key: second })).status).toBe(404);
    // Tool runs and traces.
    expect((await call("GET", `/api/tool-runs/${runId}`, { key: second })).status).toBe(403);
    expect((await call("GET", "/api/tool-runs", { key: second })).body.data.total).toBe(0);
    expect((await call("GET", "/api/runs", { key: second })).body.data.total).toBe(0);
    expect((await call("GET", `/api/observability/runs/${traceId}/trace`, { key: second })).status).toBe(404);
    expect(runsCounted(await call("GET", "/api/observability/metrics", { key: second }))).toBe(0);
    // Hooks, links and schedules the first holder made: not listed, not deletable.
    expect((await call("GET", `/api/hooks?topic=${topic}`, { key: second })).body.data.total).toBe(0);
    expect((await call("DELETE", `/api/hooks/${hookName}`, { key: second })).status).toBe(403);
    // The first holder's hook still fires (denied: it is bound to that holder's fingerprint); the
    // run it records now is not the new holder's to read.
    const fired = await call("POST", `/api/hooks/incoming/${topic}`, {
      rawBody: JSON.stringify({ message: "left behind" }),
      headers: { "content-type": "application/json" },
    });
    expect(fired.status).toBe(202);
    const leftBehind = fired.body.data.fired[0].run_id;
    expect((await call("GET", `/api/tool-runs/${leftBehind}`, { key })).body.data).toMatchObject({ caller: id, origin: "hook" });
    expect((await call("GET", `/api/tool-runs/${leftBehind}`, { key: second })).status).toBe(403);
    await eventually(
      () => call("GET", `/api/observability/runs/${leftBehind}/trace`, { key }),
      (r) => r.status === 200,
    );
    expect((await call("GET", `/api/observability/runs/${leftBehind}/trace`, { key: second })).status).toBe(404);
    expect((await call("GET", "/api/hooks/trigger-links", { key: second })).body.data.total).toBe(0);
    expect((await call("DELETE", `/api/hooks/trigger-links/${linkName}`, { key: second })).status).toBe(403);
    expect((await call("GET", "/api/schedules?pageSize=200", { key: second })).body.data.items).toEqual([]);
    expect((await call("DELETE", `/api/schedules/${scheduleName}`, { key: second })).status).toBe(403);
    // The policy history its new owner reads starts at the re-issue.
    const history = await call("GET", `/api/auth/api-keys/${id}/policy/versions`, { key: secondOwner.key });
    expect(history.body.data.items.map((v: { action: string }) => v.action)).toEqual(["mint"]);
    expect(history.body.data.items[0].owner_user_id).toBe(secondOwner.user_id);
    expect((await call("POST", `/api/auth/api-keys/${id}/policy/rollback`, { key: secondOwner.key, body: { version: 1 } })).status).toBe(404);
    // The admin still sees the whole history, both holders.
    const all = await call("GET", `/api/auth/api-keys/${id}/policy/versions`, { key });
    expect(all.body.data.items.map((v: { action: string }) => v.action)).toEqual(["mint", "revoke", "mint"]);
    // The same external user on the same route: a new thread, not the first holder's.
    const said2 = await send(route.name, { external_user_id: "same-user", text: "second holder's conversation", wait_seconds: 10 }, second);
    expect(said2.status).toBe(200);
    expect(said2.body.data.thread_id).not.toBe(said1.body.data.thread_id);
    expect(said2.body.data.thread_id.startsWith(`bridge:${route.name}:`)).toBe(true);

    // What the new holder makes is its own: the filters are its lineage, not a blanket refusal.
    const own = await call("POST", "/api/tool-runs", { key: second, body: { tool_name: "echo", arguments: { message: "second holder's run" } } });
    expect((await call("GET", `/api/tool-runs/${own.body.data.run_id}`, { key: second })).status).toBe(200);
    expect((await call("POST", "/api/notifications", { key: second, body: { message: "second holder's note" } })).status).toBe(200);
    const feed2 = await call("GET", "/api/notifications", { key: second });
    expect(feed2.body.data.notifications.map((n: { message: string }) => n.message)).toEqual(["second holder's note"]);
    await readUntil("/api/runs", second, (b) => b.data.total >= 1 && b.data.items.every((r: { trace_id: string }) => r.trace_id !== traceId));
  });

  it("a never-used user_id minted by a non-admin gets nothing that was addressed to it before", async () => {
    const manager = await mintKey({ scopes: MANAGER_SCOPES });
    const id = uniq("fresh");
    // Addressed to the id while no key holds it: a broadcast to a future identity, and a question.
    expect((await call("POST", "/api/notifications", { key: await admin(), body: { message: "for whoever becomes fresh", audience: id } })).status).toBe(200);
    const ask = await askRoute({ audience: id });
    expect((await send(ask.name, { external_user_id: "u", text: "Who will answer this?", wait_seconds: 10 })).status).toBe(200);
    await eventually(
      async () =>
        (await call("GET", "/api/interactions", { key: await admin() })).body.data.items.filter((i: { audience: string }) => i.audience === id).length,
      (n) => n === 1,
    );
    const minted = await mintKey({ user_id: id, scopes: HOLDER_SCOPES }, manager.key);
    expect((await call("GET", "/api/notifications", { key: minted.key })).body.data.notifications).toEqual([]);
    expect((await call("GET", "/api/interactions", { key: minted.key })).body.data.total).toBe(0);
  });
});

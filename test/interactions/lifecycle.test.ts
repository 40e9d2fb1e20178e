/**
 * An interaction's lifetime and erasure: an ended interaction is deleted with its
 * listing row and media after INTERACTIONS_RETENTION_SECONDS; a thread forget erases the thread's
 * interactions (pending or ended: object, listing row, stream events, media); the doors answer 501
 * `interactions-not-configured` without INTERACTIONS_STORE_URL.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { send } from "../helpers/bridge";
import { BASE, admin, call, fetchWithEnv } from "../helpers/http";
import { eventually } from "../helpers/threads";
import { askRoute, interactionObject, listedAs, pendingOf, stepAt } from "./helpers";
import { must } from "../../src/platform/must";

async function rowOf(id: string) {
  return env.DB.prepare("SELECT status FROM interactions WHERE interaction_id = ?").bind(id).first<{ status: string }>();
}

async function hubHolds(id: string): Promise<number> {
  const hub = env.INTERACTION_HUB.get(env.INTERACTION_HUB.idFromName("hub"));
  return runInDurableObject(
    hub,
    (_o, state) => (state.storage.sql.exec("SELECT COUNT(*) AS n FROM events WHERE interaction_id = ?", id).one() as { n: number }).n,
  );
}

describe("retention", () => {
  it("deletes an ended interaction, its listing row and its object after the retention", async () => {
    const route = await askRoute();
    const first = await send(route.name, { external_user_id: "ret", text: "Keep me?", wait_seconds: 10 });
    const [pending] = await pendingOf(first.body.data.thread_id);
    await send(route.name, { external_user_id: "ret", text: "no", wait_seconds: 10 });
    const done = await listedAs(pending.interaction_id, "answered");
    // Not yet: a step before the retention ends keeps everything.
    await stepAt(pending.interaction_id, Date.parse(done.ended_at) + 1000);
    expect(await interactionObject(pending.interaction_id).read()).not.toBeNull();
    await stepAt(pending.interaction_id, Date.parse(done.ended_at) + 604_800_000 + 1);
    expect(await interactionObject(pending.interaction_id).read()).toBeNull();
    expect(await rowOf(pending.interaction_id)).toBeNull();
  });
});

describe("erasure", () => {
  it("a thread forget erases its interactions, pending and answered: objects, listing rows, stream events", async () => {
    const route = await askRoute();
    const first = await send(route.name, { external_user_id: "erase", text: "First?", wait_seconds: 10 });
    const threadId = first.body.data.thread_id;
    const [a] = await pendingOf(threadId);
    await send(route.name, { external_user_id: "erase", text: "yes", wait_seconds: 10 });
    await send(route.name, { external_user_id: "erase", text: "Second?", wait_seconds: 10 });
    const b = (await pendingOf(threadId)).find((i) => i.interaction_id !== a.interaction_id);
    expect(b).toBeDefined();
    await listedAs(a.interaction_id, "answered");
    await eventually(
      () => hubHolds(must(b, "b").interaction_id),
      (n) => n > 0,
    );

    const forget = await call("DELETE", `/api/conversations/${route.name}/thread?thread_id=${encodeURIComponent(threadId)}`, { key: await admin() });
    expect(forget.status).toBe(200);
    for (const id of [a.interaction_id, must(b, "b").interaction_id]) {
      expect(await interactionObject(id).read()).toBeNull();
      expect(await rowOf(id)).toBeNull();
      expect(await hubHolds(id)).toBe(0);
    }
    // The pending one never resumes into the (forgotten) thread: the door no longer finds it.
    expect((await call("POST", `/api/interactions/${must(b, "b").interaction_id}/answer`, { key: await admin(), body: { text: "late" } })).status).toBe(404);
  });
});

describe("without INTERACTIONS_STORE_URL", () => {
  it("every interactions door answers 501 interactions-not-configured", async () => {
    const key = await admin();
    const noStore = { ...env, INTERACTIONS_STORE_URL: "" };
    const id = crypto.randomUUID();
    const doors: Array<[string, string, unknown?]> = [
      ["GET", "/api/interactions"],
      ["GET", "/api/interactions/pending"],
      ["GET", "/api/interactions/stream"],
      ["POST", `/api/interactions/${id}/answer`, { text: "x" }],
      ["POST", `/api/interactions/${id}/cancel`, {}],
      ["GET", `/api/interactions/callback/itk-${"A".repeat(43)}`],
      ["POST", `/api/interactions/callback/itk-${"A".repeat(43)}`, { text: "x" }],
      ["GET", `/api/interactions/media/${"A".repeat(43)}`],
    ];
    for (const [method, path, body] of doors) {
      const res = await fetchWithEnv(
        noStore,
        new Request(`${BASE}${path}`, {
          method,
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: body ? JSON.stringify(body) : undefined,
        }),
      );
      expect(res.status, `${method} ${path}`).toBe(501);
      expect(await res.json(), `${method} ${path}`).toEqual({
        error: "interactions store not configured (set INTERACTIONS_STORE_URL)",
        code: "interactions-not-configured",
      });
    }
  });
});

/**
 * What a navigation to the chat page may change (docs/channels.md "Web"): it opens or refreshes
 * the visitor's session and nothing more. A pairing code in its URL is never redeemed by the GET
 * (any site can make the visitor's browser send one, with the SameSite=Lax cookie), and another
 * site's navigation does not replace a live session's link params.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { PAIRING_REPLIES } from "../../src/persons/pairing";
import { createRoute, send } from "../helpers/bridge";
import { BASE, admin, call, dispatch, mintKey, uniq } from "../helpers/http";
import { eventually, rawRows } from "../helpers/threads";
import { declareTool, network } from "../operator/helpers";
import { must } from "../../src/platform/must";

const ORIGIN = new URL(BASE).origin;

async function webTarget(multichannel: boolean) {
  const host = `weblinks-${crypto.randomUUID().slice(0, 8)}.example`;
  const title = host.split(".")[0];
  await declareTool(title, `https://${host}/run`);
  const runs: any[] = [];
  network({ [host]: (kwargs) => (runs.push(kwargs), `tool saw ${kwargs.message}`) });
  const k = await mintKey({ scopes: [`tool:${title}`] });
  const api = await createRoute({ door: "api", target_kind: "tool", target_name: title, execution_key: k.user_id, turns_per_hour_override: 1000 });
  const identity = uniq("links").replace(/[^A-Za-z0-9_-]/g, "-");
  const web = await createRoute({ door: "channel", channel: "web", our_identity: identity, target_kind: "tool", target_name: title, execution_key: k.user_id });
  if (multichannel) {
    const put = await call("PUT", `/api/conversation-configs/tool/${title}`, {
      key: await admin(),
      body: { target_kind: "tool", target_name: title, multichannel: true },
    });
    expect(put.status).toBe(200);
  }
  return { api, web, identity, runs };
}

async function page(identity: string, query: string, headers: Record<string, string> = {}) {
  const res = await dispatch(`${BASE}/api/channels/web/chat/${identity}${query}`, { headers: { "sec-fetch-mode": "navigate", ...headers } });
  expect(res.status).toBe(200);
  await res.text();
  return (res.headers.get("set-cookie") ?? "").split(";")[0];
}

const visitorOf = (cookie: string) => cookie.split("=")[1].split(".")[0];

async function recordsOf(threadId: string): Promise<number> {
  return runInDurableObject(env.THREADS.get(env.THREADS.idFromName(threadId)), (_o, state) => {
    const sql = state.storage.sql;
    if (sql.exec("SELECT name FROM sqlite_master WHERE name = 'records'").toArray().length === 0) return 0;
    return Number(sql.exec("SELECT COUNT(*) AS n FROM records").one().n);
  });
}

describe("a pairing link on the chat page", () => {
  it("is never redeemed by the GET, even carrying the visitor's live cookie from another site; the visitor's own POST of the code links", async () => {
    const { api, web, identity } = await webTarget(true);
    const ask = (text: string, who = "ann") => send(api.name, { external_user_id: who, text, wait_seconds: 10 });
    await ask("hello");
    const code = must(String((await ask("/link")).body.data.answer).match(/LINK-[A-Z0-9]{8}/), "the match")[0];
    const cookie = await page(identity, "");
    const threadId = `bridge:${web.name}:${visitorOf(cookie)}`;
    // The attack: another site navigates the visitor's browser to the pairing link.
    const again = await page(identity, `?tai_pair=${code}`, { cookie, "sec-fetch-site": "cross-site" });
    expect(again).toBe(cookie);
    // And a first visit through the link: a fresh session, nothing admitted either.
    const fresh = await page(identity, `?tai_pair=${code}`, { "sec-fetch-site": "none" });
    expect(await recordsOf(threadId)).toBe(0);
    expect(await recordsOf(`bridge:${web.name}:${visitorOf(fresh)}`)).toBe(0);
    // The code is still unused: the visitor who sends it as a message (the page's POST) links.
    const sent = await call("POST", "/api/channels/web/messages", { body: { identity, text: code }, headers: { origin: ORIGIN, cookie: fresh } });
    expect(sent.status).toBe(200);
    const rows = await eventually(
      () => rawRows(`bridge:${web.name}:${visitorOf(fresh)}`),
      (x) => x.some((r) => JSON.parse(r.record).answer !== null),
    );
    expect(JSON.parse(rows[0].record).answer).toBe(PAIRING_REPLIES.linked);
  });
});

describe("link params on a navigation", () => {
  /** Sends `text` as the visitor and waits for the tool to see it. */
  async function visitorSays(identity: string, cookie: string, runs: any[], text: string) {
    const r = await call("POST", "/api/channels/web/messages", { body: { identity, text }, headers: { origin: ORIGIN, cookie } });
    expect(r.status).toBe(200);
    await eventually(
      async () => runs.find((k) => k.message === text),
      (k) => k !== undefined,
    );
  }

  it("another site's navigation does not replace a live session's params; the visitor's own does", async () => {
    const { identity, runs } = await webTarget(false);
    const cookie = await page(identity, "?topic=billing", { "sec-fetch-site": "none" });
    for (const headers of [
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" },
      { referer: "https://evil.example/landing" },
      { origin: "https://evil.example" },
    ] as Record<string, string>[]) {
      expect(await page(identity, "?topic=evil", { cookie, ...headers })).toBe(cookie);
    }
    const web = (await call("GET", "/api/conversations", { key: await admin() })).body.data.items.find((x: any) => x.our_identity === identity);
    const inbound = async () => {
      const stub = env.THREADS.get(env.THREADS.idFromName(`bridge:${web.route_name}:${visitorOf(cookie)}`));
      return runInDurableObject(stub, (_o, state) =>
        state.storage.sql
          .exec("SELECT inbound FROM records ORDER BY seq")
          .toArray()
          .map((r) => JSON.parse(String(r.inbound)).params),
      );
    };
    await visitorSays(identity, cookie, runs, "after the foreign visits");
    expect((await inbound()).at(-1)).toEqual({ topic: "billing" });
    // The visitor's own navigation (same origin, or typed: no foreign header) replaces them.
    await page(identity, "?topic=orders", { cookie, "sec-fetch-site": "same-origin" });
    await visitorSays(identity, cookie, runs, "after my own visit");
    expect((await inbound()).at(-1)).toEqual({ topic: "orders" });
    await page(identity, "?topic=returns", { cookie });
    await visitorSays(identity, cookie, runs, "after a typed visit");
    expect((await inbound()).at(-1)).toEqual({ topic: "returns" });
  });
});

/**
 * Who may link two conversations (docs/persons.md, "Who may mint a code"): get_pairing_code
 * mints only for its own turn's conversation, and outside a turn only for a key that may write
 * routes to the target; turning multichannel on needs the grant to run the target; a web visitor's
 * pairing guesses are counted against their network, not their (free) visitor id.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { PAIRING_REPLIES } from "../../src/persons/pairing";
import { personDirectoryName } from "../../src/persons/rpc";
import { createRoute, send } from "../helpers/bridge";
import { BASE, admin, call, dispatch, mintKey, uniq } from "../helpers/http";
import { eventually, rawRows } from "../helpers/threads";
import { declareTool, network } from "../operator/helpers";
import { must } from "../../src/platform/must";

const ORIGIN = new URL(BASE).origin;

/** A declared tool target made multichannel, with an api route and a twilio route to it. */
async function target() {
  const host = `pairauth-${crypto.randomUUID().slice(0, 8)}.example`;
  const title = host.split(".")[0];
  await declareTool(title, `https://${host}/run`);
  network({ [host]: (kwargs) => `tool saw ${kwargs.message}` });
  const k = await mintKey({ scopes: [`tool:${title}`] });
  const api = await createRoute({ door: "api", target_kind: "tool", target_name: title, execution_key: k.user_id, turns_per_hour_override: 1000 });
  const ours = `+1666${String(Date.now()).slice(-7)}`;
  await createRoute({ door: "channel", channel: "twilio", our_identity: ours, target_kind: "tool", target_name: title, execution_key: k.user_id });
  const put = await call("PUT", `/api/conversation-configs/tool/${title}`, {
    key: await admin(),
    body: { target_kind: "tool", target_name: title, multichannel: true },
  });
  expect(put.status, JSON.stringify(put.body)).toBe(200);
  return { title, api, ours, runner: k };
}

/** The open codes of `kind/name`'s person directory. */
async function openCodes(kind: string, name: string): Promise<number> {
  const stub = env.PERSON_DIRECTORIES.get(env.PERSON_DIRECTORIES.idFromName(personDirectoryName(kind as "tool", name)));
  return runInDurableObject(stub, (_o, state) => {
    const sql = state.storage.sql;
    if (sql.exec("SELECT name FROM sqlite_master WHERE name = 'codes'").toArray().length === 0) return 0;
    return Number(sql.exec("SELECT COUNT(*) AS n FROM codes").one().n);
  });
}

async function waitRun(runId: string): Promise<any> {
  const key = await admin();
  return eventually(
    async () => (await call("GET", `/api/tool-runs/${runId}`, { key })).body.data,
    (d) => d?.status === "succeeded" || d?.status === "failed",
    250,
  );
}

describe("get_pairing_code outside a turn", () => {
  it("refuses a key holding only tools:read and the tool's grant (POST /api/tool-runs), and mints for one that may write routes to the target", async () => {
    const { title, ours } = await target();
    const before = await openCodes("tool", title);
    const weak = await mintKey({ scopes: ["tools:read", "tool:get_pairing_code"] });
    const args = { channel: "twilio", our_identity: ours, sender: "+15550009999" };
    const r = await call("POST", "/api/tool-runs", { key: weak.key, body: { tool_name: "get_pairing_code", arguments: args } });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const run = await waitRun(r.body.data.run_id);
    expect(run).toMatchObject({ status: "failed", error_kind: "tool_error" });
    expect(JSON.stringify(run)).not.toMatch(/LINK-[A-Z0-9]{8}/);
    expect(await openCodes("tool", title)).toBe(before);

    // conversations write alone is not enough: the key must also be allowed to run the target.
    const noRun = await mintKey({ scopes: ["tools:read", "tool:get_pairing_code", "conversations:write"] });
    const r2 = await call("POST", "/api/tool-runs", { key: noRun.key, body: { tool_name: "get_pairing_code", arguments: args } });
    expect(await waitRun(r2.body.data.run_id)).toMatchObject({ status: "failed", error_kind: "tool_error" });
    expect(await openCodes("tool", title)).toBe(before);

    const strong = await mintKey({ scopes: ["tools:read", "tool:get_pairing_code", "conversations:write", `tool:${title}`] });
    const r3 = await call("POST", "/api/tool-runs", { key: strong.key, body: { tool_name: "get_pairing_code", arguments: args } });
    const ok = await waitRun(r3.body.data.run_id);
    expect(ok.status, JSON.stringify(ok)).toBe("succeeded");
    expect(await openCodes("tool", title)).toBe(before + 1);
  });

  it("answers the same refusal for a route that does not exist and one the key may not link, and needs all three arguments", async () => {
    const { ours } = await target();
    const weak = await mintKey({ scopes: ["tools:read", "tool:get_pairing_code"] });
    const errorOf = async (args: Record<string, unknown>) => {
      const r = await call("POST", "/api/tool-runs", { key: weak.key, body: { tool_name: "get_pairing_code", arguments: args } });
      return (await waitRun(r.body.data.run_id)).error;
    };
    const foreign = await errorOf({ channel: "twilio", our_identity: ours, sender: "+1" });
    const missing = await errorOf({ channel: "twilio", our_identity: "+19999999999", sender: "+1" });
    expect(foreign).toBe(missing);
    expect(await errorOf({ channel: "twilio", our_identity: ours })).toContain("needs sender");
  });
});

describe("get_pairing_code inside a turn", () => {
  async function pairingRoute(payloadExpr: string) {
    const key = await admin();
    const k = await mintKey({ scopes: ["tool:get_pairing_code"] });
    await call("PUT", "/api/conversation-configs/tool/get_pairing_code", {
      key,
      body: { target_kind: "tool", target_name: "get_pairing_code", multichannel: true },
    });
    const ours = `+1667${String(Date.now()).slice(-7)}`;
    await createRoute({
      door: "channel",
      channel: "twilio",
      our_identity: ours,
      target_kind: "tool",
      target_name: "get_pairing_code",
      execution_key: k.user_id,
    });
    const api = await createRoute({
      door: "api",
      target_kind: "tool",
      target_name: "get_pairing_code",
      execution_key: k.user_id,
      turns_per_hour_override: 1000,
      payload_expr: payloadExpr.replace("OURS", ours),
      reply_expr: ".code",
    });
    return { api, ours };
  }

  it("refuses a turn that asks for another conversation's code (a model talked into naming another sender)", async () => {
    const { api } = await pairingRoute('{channel: "twilio", our_identity: "OURS", sender: "+15550004444"}');
    const before = await openCodes("tool", "get_pairing_code");
    const r = await send(api.name, { external_user_id: "mallory", text: "give me the victim's code", wait_seconds: 10 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.status, JSON.stringify(r.body.data)).toBe("error");
    expect(JSON.stringify(r.body.data)).not.toMatch(/LINK-[A-Z0-9]{8}/);
    expect(await openCodes("tool", "get_pairing_code")).toBe(before);
  });

  it("mints for the turn's own conversation when the arguments are left out; redeeming it links that conversation", async () => {
    const { api } = await pairingRoute("{}");
    const r = await send(api.name, { external_user_id: "nell", text: "my code please", wait_seconds: 10 });
    expect(r.body.data.answer, JSON.stringify(r.body)).toMatch(/^LINK-[A-Z0-9]{8}$/);
    const linked = await send(api.name, { external_user_id: "nell-phone", text: r.body.data.answer, wait_seconds: 10 });
    expect(linked.body.data.answer).toBe(PAIRING_REPLIES.linked);
    const again = await send(api.name, { external_user_id: "nell", text: "hi again", wait_seconds: 10 });
    const person = await call("GET", `/api/conversations/persons/${again.body.data.thread_id.slice("bridge:@person:".length)}`, { key: await admin() });
    expect(person.body.data.addresses.map((a: any) => a.address).sort()).toEqual(["root/nell", "root/nell-phone"]);
  });
});

describe("turning multichannel on", () => {
  it("needs the grant to run the target (403 naming multichannel); a config without it needs only conversations write", async () => {
    const host = `mcgrant-${crypto.randomUUID().slice(0, 8)}.example`;
    const title = host.split(".")[0];
    await declareTool(title, `https://${host}/run`);
    const body = (multichannel: boolean) => ({ target_kind: "tool", target_name: title, multichannel });
    const writer = await mintKey({ scopes: ["conversations:write"] });
    const refused = await call("PUT", `/api/conversation-configs/tool/${title}`, { key: writer.key, body: body(true) });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toContain("multichannel");
    expect((await call("GET", `/api/conversation-configs/tool/${title}`, { key: await admin() })).status).toBe(404);
    expect((await call("PUT", `/api/conversation-configs/tool/${title}`, { key: writer.key, body: body(false) })).status).toBe(200);
    const granted = await mintKey({ scopes: ["conversations:write", `tool:${title}`] });
    const ok = await call("PUT", `/api/conversation-configs/tool/${title}`, { key: granted.key, body: body(true) });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.data.config.multichannel).toBe(true);
  });
});

describe("pairing guesses on the web", () => {
  it("are counted against the visitor's network: a fresh visitor id from the same network is still locked", async () => {
    const { title, api } = await target();
    const identity = uniq("pairnet").replace(/[^A-Za-z0-9_-]/g, "-");
    const k = await mintKey({ scopes: [`tool:${title}`] });
    const web = await createRoute({
      door: "channel",
      channel: "web",
      our_identity: identity,
      target_kind: "tool",
      target_name: title,
      execution_key: k.user_id,
    });
    const ip = `203.0.113.${Math.floor(Math.random() * 200) + 1}`;
    const page = async (from: string) => {
      const res = await dispatch(`${BASE}/api/channels/web/chat/${identity}`, { headers: { "sec-fetch-mode": "navigate", "cf-connecting-ip": from } });
      const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0];
      return { cookie, visitor: cookie.split("=")[1].split(".")[0] };
    };
    const say = async (v: { cookie: string; visitor: string }, from: string, text: string) => {
      const r = await call("POST", "/api/channels/web/messages", {
        body: { identity, text },
        headers: { origin: ORIGIN, cookie: v.cookie, "cf-connecting-ip": from },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const id = r.body.data.message_id;
      const rows = await eventually(
        () => rawRows(`bridge:${web.name}:${v.visitor}`),
        (x) => x.some((row) => JSON.parse(row.record).message_id === id && JSON.parse(row.record).answer !== null),
        250,
      );
      return JSON.parse(
        must(
          rows.find((row) => JSON.parse(row.record).message_id === id),
          "the item found",
        ).record,
      ).answer as string;
    };
    // Six wrong codes from one visitor: the sixth failure is past the threshold.
    const first = await page(ip);
    for (let i = 0; i < 6; i++) expect(await say(first, ip, `LINK-WRONG${String(i).padStart(3, "0")}`)).toBe(PAIRING_REPLIES.invalid);
    const stub = env.PERSON_DIRECTORIES.get(env.PERSON_DIRECTORIES.idFromName(personDirectoryName("tool", title)));
    // The count is the network's, not the visitor's; hold its lock open (its length is not what this pins).
    const parties = await runInDurableObject(stub, (_o, state) => {
      state.storage.sql.exec("UPDATE throttle SET locked_until = ?", Date.now() + 3_600_000);
      return state.storage.sql.exec("SELECT party, failures FROM throttle").toArray();
    });
    expect(parties).toEqual([{ party: `net:web:web:${ip}`, failures: 6 }]);
    // A valid code, sent by a fresh visitor id from the same network: refused, and not used up.
    const code = must(
      String((await send(api.name, { external_user_id: "ora", text: "/link", wait_seconds: 10 })).body.data.answer).match(/LINK-[A-Z0-9]{8}/),
      "the match",
    )[0];
    const fresh = await page(ip);
    expect(fresh.visitor).not.toBe(first.visitor);
    expect(await say(fresh, ip, code)).toBe(PAIRING_REPLIES.invalid);
    // From another network the same code still links.
    const elsewhere = await page("198.51.100.7");
    expect(await say(elsewhere, "198.51.100.7", code)).toBe(PAIRING_REPLIES.linked);
  });
});

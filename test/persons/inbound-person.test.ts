/**
 * Persons at the doors (decisions §12): a multichannel target's inbound resolves its
 * person after the rate token, the turn's payload carries person_id and person_addresses, and
 * once linked the person's messages key to its person thread.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { personDirectoryStub } from "../../src/persons/rpc";
import { createRoute, send } from "../helpers/bridge";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { postTelegram, postTwilio, TEST_ENV } from "../helpers/webhooks";
import { eventually, rawRows } from "../helpers/threads";
import { declareTool, network } from "../operator/helpers";

/** A declared tool that answers with what it saw of the person, on a route whose target is multichannel. */
async function multichannelRoute(extra: Record<string, unknown> = {}) {
  const host = `persons-${crypto.randomUUID().slice(0, 8)}.example`;
  const title = host.split(".")[0];
  await declareTool(title, `https://${host}/run`);
  const seen: any[] = [];
  network({
    [host]: (kwargs) => {
      seen.push(kwargs);
      return `${kwargs.person_id ?? "none"} ${(kwargs.person_addresses ?? []).length}`;
    },
  });
  const k = await mintKey({ scopes: [`tool:${title}`] });
  const route = await createRoute({
    door: "api",
    target_kind: "tool",
    target_name: title,
    execution_key: k.user_id,
    payload_expr: "{person_id, person_addresses}",
    ...extra,
  });
  const cfg = await call("PUT", `/api/conversation-configs/tool/${title}`, {
    key: await admin(),
    body: { target_kind: "tool", target_name: title, multichannel: true },
  });
  expect(cfg.status).toBe(200);
  return { route, title, seen };
}

describe("persons at the message door", () => {
  it("first contact creates a person the payload names; after linking, messages key to the person thread", async () => {
    const { route, title, seen } = await multichannelRoute();
    const a = await send(route.name, { external_user_id: "alice", text: "hi", wait_seconds: 10 });
    expect(a.status, JSON.stringify(a.body)).toBe(200);
    const [personId, count] = a.body.data.answer.split(" ");
    expect(personId).toMatch(/^[0-9a-f-]{36}$/);
    expect(count).toBe("1");
    expect(a.body.data.thread_id).toBe(`bridge:${route.name}:root/alice`);
    expect(seen[0].person_addresses).toEqual([
      { door: "api", routes: [route.name], channel: null, our_identity: null, address: "root/alice", linked_at: expect.any(String) },
    ]);

    // Link bob to alice through the target's directory (the pairing turns come later).
    const directory = personDirectoryStub(env, "tool", title);
    const target = { kind: "tool" as const, name: title };
    const { code } = await directory.mint({ target, address: { door: "api", address: "root/alice" }, route_name: route.name }, Date.now());
    const b0 = await send(route.name, { external_user_id: "bob", text: "me too", wait_seconds: 10 });
    expect(b0.body.data.thread_id).toBe(`bridge:${route.name}:root/bob`);
    const linked = await directory.redeem({ target, address: { door: "api", address: "root/bob" }, route_name: route.name }, "root", code, Date.now());
    expect(linked.ok).toBe(true);

    for (const who of ["alice", "bob"]) {
      const r = await send(route.name, { external_user_id: who, text: "again", wait_seconds: 10 });
      expect(r.body.data.thread_id).toBe(`bridge:@person:${personId}`);
      expect(r.body.data.answer).toBe(`${personId} 2`);
    }
    const person = await call("GET", `/api/conversations/persons/${personId}`, { key: await admin() });
    expect(person.body.data.addresses.map((x: any) => x.address)).toEqual(["root/alice", "root/bob"]);
  });

  it("a message refused at the rate cap creates no person; a target without multichannel carries none", async () => {
    const { route, title } = await multichannelRoute({ turns_per_hour_override: 1 });
    expect((await send(route.name, { external_user_id: "first", text: "x", wait_seconds: 10 })).status).toBe(200);
    expect((await send(route.name, { external_user_id: "second", text: "x", wait_seconds: 10 })).status).toBe(429);
    const directory = personDirectoryStub(env, "tool", title);
    expect(await directory.resolve({ door: "api", address: "root/first" })).not.toBeNull();
    expect(await directory.resolve({ door: "api", address: "root/second" })).toBeNull();

    const plain = await multichannelRoute();
    await call("PUT", `/api/conversation-configs/tool/${plain.title}`, {
      key: await admin(),
      body: { target_kind: "tool", target_name: plain.title, multichannel: false },
    });
    const r = await send(plain.route.name, { external_user_id: uniq("u"), text: "x", wait_seconds: 10 });
    expect(r.body.data.answer).toBe("none 0");
    // The payload had neither field, so payload_expr's object carries them as null.
    expect(plain.seen[0]).toEqual({ person_id: null, person_addresses: null });
  });

  it("the channel door resolves a channel address's person; a linked sender's SMS goes to the person thread, and its redelivery finds it", async () => {
    const { route, title, seen } = await multichannelRoute();
    const k = await mintKey({ scopes: [`tool:${title}`] });
    const ours = `+1777${String(Date.now()).slice(-7)}`;
    const sms = await createRoute({
      door: "channel",
      channel: "twilio",
      our_identity: ours,
      target_kind: "tool",
      target_name: title,
      execution_key: k.user_id,
      payload_expr: "{person_id, person_addresses}",
    });
    const from = `+1555${String(Date.now()).slice(-7)}`;
    const first = await postTwilio({ MessageSid: `SM${uniq("a")}`, From: from, To: ours, Body: "hello" });
    expect(first.status).toBe(204);
    const smsThread = `bridge:${sms.name}:${from}`;
    const [row] = await eventually(
      () => rawRows(smsThread),
      (rows) => rows.length === 1 && rows[0].turn_state === "done",
    );
    const personId = JSON.parse(row.record).answer.split(" ")[0];
    expect(seen.at(-1).person_addresses).toEqual([
      { door: "channel", routes: [sms.name], channel: "twilio", our_identity: ours, address: from, linked_at: expect.any(String) },
    ]);

    // The same person reaches the api route as alice: link the two through the directory.
    await send(route.name, { external_user_id: "alice", text: "web", wait_seconds: 10 });
    const directory = personDirectoryStub(env, "tool", title);
    const target = { kind: "tool" as const, name: title };
    const { code } = await directory.mint(
      { target, address: { door: "channel", channel: "twilio", our_identity: ours, address: from }, route_name: sms.name },
      Date.now(),
    );
    expect((await directory.redeem({ target, address: { door: "api", address: "root/alice" }, route_name: route.name }, "root", code, Date.now())).ok).toBe(
      true,
    );

    const sid = `SM${uniq("b")}`;
    expect((await postTwilio({ MessageSid: sid, From: from, To: ours, Body: "linked now" })).status).toBe(204);
    const personThread = `bridge:@person:${personId}`;
    const rows = await eventually(
      () => rawRows(personThread),
      (rs) => rs.length === 1 && rs[0].turn_state === "done",
    );
    expect(JSON.parse(rows[0].record)).toMatchObject({ route_name: sms.name, client_address: from, answer: `${personId} 2` });
    // A provider redelivery of the same message finds its record on the person thread: no second turn.
    expect((await postTwilio({ MessageSid: sid, From: from, To: ours, Body: "linked now" })).status).toBe(204);
    expect(await rawRows(personThread)).toHaveLength(1);
    expect((await rawRows(smsThread)).length).toBe(1);
  });

  it("a Telegram sender's language seeds a new person's locale, canonicalized; a malformed one seeds none", async () => {
    const { title } = await multichannelRoute();
    const k = await mintKey({ scopes: [`tool:${title}`] });
    await createRoute({
      door: "channel",
      channel: "telegram",
      our_identity: TEST_ENV.telegramBotId,
      target_kind: "tool",
      target_name: title,
      execution_key: k.user_id,
    });
    const update = (chatId: number, language: string) => ({
      update_id: chatId,
      message: {
        message_id: 1,
        date: 1,
        chat: { id: chatId, type: "private" },
        from: { id: chatId, is_bot: false, first_name: "A", language_code: language },
        text: "hi",
      },
    });
    const chatA = Number(String(Date.now()).slice(-8));
    expect((await postTelegram(update(chatA, "pt-br"))).status).toBe(200);
    expect((await postTelegram(update(chatA + 1, "not a tag"))).status).toBe(200);
    const directory = personDirectoryStub(env, "tool", title);
    const addr = (chatId: number) => ({ door: "channel" as const, channel: "telegram", our_identity: TEST_ENV.telegramBotId, address: String(chatId) });
    expect(
      (
        await eventually(
          () => directory.resolve(addr(chatA)),
          (p) => p !== null,
        )
      )?.locale,
    ).toBe("pt-BR");
    expect(
      (
        await eventually(
          () => directory.resolve(addr(chatA + 1)),
          (p) => p !== null,
        )
      )?.locale,
    ).toBeNull();
  });
});

/**
 * A signed-in web user meets their other channels' conversations (docs/channels.md, "Verified
 * visitors"): the user's address is theirs on every device, so one pairing, made by the two parties
 * themselves, joins the person for good; the user's next device runs as that person without being
 * paired again.
 */
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { admin, call } from "../helpers/http";
import { eventually } from "../helpers/threads";
import { ORIGIN, webDesk } from "../helpers/web-visitor";
import { must } from "../../src/platform/must";

let networks = 0;
/** A client network of its own per mint (TEST-NET-3), so the per-network session cap never interferes. */
const ip = () => `203.0.113.${(++networks % 250) + 1}`;

describe("a signed-in web user and their other channels", () => {
  it("is paired once from one device; another device of the same user then runs as the same person", async () => {
    const { api, identity, runs } = await webDesk({ tool: true });
    const key = await admin();
    const secret = String((await call("PUT", `/api/channels/web/sites/${identity}/verification`, { key, body: {} })).body.data.secret);

    const device = async () => {
      const r = await call("POST", "/api/channels/web/session", {
        body: { identity, user_id: "ada-42", user_hash: createHmac("sha256", secret).update("ada-42", "utf8").digest("hex") },
        headers: { origin: ORIGIN, "cf-connecting-ip": ip() },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return String(r.body.data.token);
    };
    const say = (token: string, text: string) =>
      call("POST", "/api/channels/web/messages", { body: { identity, text }, headers: { origin: ORIGIN, authorization: `Bearer ${token}` } });

    // The other channel's conversation asks for a code; the signed-in user sends it from the laptop.
    await call("POST", `/api/conversations/${api}/messages`, { key, body: { external_user_id: "ada-phone", text: "hello", wait_seconds: 10 } });
    const link = await call("POST", `/api/conversations/${api}/messages`, {
      key,
      body: { external_user_id: "ada-phone", text: "/link", wait_seconds: 10 },
    });
    const code = must(String(link.body.data.answer).match(/LINK-[A-Z0-9]{8}/), "the match")[0];
    const laptop = await device();
    expect((await say(laptop, code)).status).toBe(200);
    // The laptop and the tablet share the user's one thread, so its order runs the pairing turn first.

    // A second device: a new session of the same user, never paired itself.
    const tablet = await device();
    const address = laptop.split(".")[0];
    expect(tablet.split(".")[0]).toBe(address);
    expect((await say(tablet, "from the tablet")).status).toBe(200);
    const run = await eventually(
      async () => runs.find((r) => r.message === "from the tablet"),
      (r) => r !== undefined,
    );
    const person = await call("GET", `/api/conversations/persons/${run.turn.subject.person}`, { key });
    expect(person.status, JSON.stringify(person.body)).toBe(200);
    expect(person.body.data.addresses.map((a: { address: string }) => a.address).sort()).toEqual(["root/ada-phone", address].sort());
  });
});

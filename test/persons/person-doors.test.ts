/**
 * The person doors (spec §4.8; decisions §12). Persons are made through the target's
 * PersonDirectory (the first-contact path is covered in inbound-person.test.ts);
 * the doors find them by id through the `person` ledger entries the directory keeps.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type Arrival, personDirectoryStub } from "../../src/persons/rpc";
import { admin, call, expectNotConfigured, mintKey, uniq } from "../helpers/http";
import { ledgerRows } from "../helpers/listing";

function target() {
  const name = uniq("ptarget");
  const stub = personDirectoryStub(env, "agent", name);
  const tg = (chat: string): Arrival => ({
    target: { kind: "agent", name },
    address: { door: "channel", channel: "telegram", our_identity: "bot", address: chat },
    route_name: "tg",
  });
  const api = (addr: string): Arrival => ({ target: { kind: "agent", name }, address: { door: "api", address: addr }, route_name: "web" });
  return { name, stub, tg, api };
}

const personPath = (id: string) => `/api/conversations/persons/${encodeURIComponent(id)}`;

describe("person doors", () => {
  it("GET reads a person by id; PUT …/locale sets (canonicalized) and clears it", async () => {
    const key = await admin();
    const t = target();
    const p = (await t.stub.ensure(t.tg("100"), "en", Date.now())).person;
    const read = await call("GET", personPath(p.person_id), { key });
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body.data).toEqual({
      person_id: p.person_id,
      target_kind: "agent",
      target_name: t.name,
      created_at: p.created_at,
      addresses: [{ door: "channel", routes: ["tg"], channel: "telegram", our_identity: "bot", address: "100", linked_at: expect.stringMatching(/\+00:00$/) }],
      locale: "en",
      profile: null,
    });
    expect((await call("PUT", `${personPath(p.person_id)}/locale`, { key, body: { locale: "pt-br" } })).body.data.locale).toBe("pt-BR");
    expect((await call("PUT", `${personPath(p.person_id)}/locale`, { key, body: { locale: null } })).body.data.locale).toBeNull();
    expect((await call("GET", personPath(p.person_id), { key })).body.data.locale).toBeNull();
  });

  it("follows merges, unlinks and erasures: the absorbed id is gone, a detached address's person is found", async () => {
    const key = await admin();
    const t = target();
    const now = Date.now();
    const a = (await t.stub.ensure(t.tg("1"), null, now)).person;
    const b = (await t.stub.ensure(t.api("root/alice"), null, now + 1000)).person;
    const { code } = await t.stub.mint(t.tg("1"), now + 2000);
    const merged = await t.stub.redeem(t.api("root/alice"), "root", code, now + 3000);
    expect(merged.ok).toBe(true);
    expect((await call("GET", personPath(b.person_id), { key })).status).toBe(404);
    const both = await call("GET", personPath(a.person_id), { key });
    expect(both.body.data.addresses.map((x: any) => [x.door, x.address])).toEqual([
      ["channel", "1"],
      ["api", "root/alice"],
    ]);
    const detached = await t.stub.unlink(t.api("root/alice"), now + 4000);
    if (!detached.ok) throw new Error("unlink failed");
    expect((await call("GET", personPath(detached.person.person_id), { key })).body.data.addresses).toHaveLength(1);
    await t.stub.erase(detached.person.person_id);
    expect((await call("GET", personPath(detached.person.person_id), { key })).status).toBe(404);
    expect((await ledgerRows("person")).map((e) => e.key).filter((k) => [a.person_id, b.person_id, detached.person.person_id].includes(k))).toEqual([
      a.person_id,
    ]);
  });

  it("refuses: 400 a blank id or a malformed locale or extra fields, 404 an unknown person, grants as tagged", async () => {
    const key = await admin();
    const t = target();
    const p = (await t.stub.ensure(t.tg("200"), null, Date.now())).person;
    expect((await call("GET", "/api/conversations/persons/%20", { key })).status).toBe(400);
    expect((await call("GET", personPath(crypto.randomUUID()), { key })).status).toBe(404);
    expect((await call("PUT", `${personPath(crypto.randomUUID())}/locale`, { key, body: { locale: "en" } })).status).toBe(404);
    for (const body of [{ locale: "en_US" }, { locale: "not a tag" }, { locale: 5 }, { locale: "en", extra: 1 }, {}]) {
      const r = await call("PUT", `${personPath(p.person_id)}/locale`, { key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
    expect((await call("GET", personPath(p.person_id), { key })).body.data.locale).toBeNull();
    const reader = await mintKey({ scopes: ["conversations:read"] });
    expect((await call("GET", personPath(p.person_id), { key: reader.key })).status).toBe(200);
    expect((await call("PUT", `${personPath(p.person_id)}/locale`, { key: reader.key, body: { locale: "en" } })).status).toBe(403);
    expect((await call("GET", personPath(p.person_id))).status).toBe(401);
    await expectNotConfigured(
      [
        ["GET", personPath(p.person_id)],
        ["PUT", `${personPath(p.person_id)}/locale`, { locale: "en" }],
      ],
      key,
      expect,
    );
  });
});

/**
 * The PersonDirectory object (decisions §12), through its RPC verbs: first contact,
 * routes, codes (single use, one open per conversation, expiry), the redeem throttle, merging,
 * unlink, locale and erase.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { type Arrival, personDirectoryStub } from "../../src/persons/rpc";
import { redeemLockSeconds } from "../../src/persons/pairing";
import { uniq } from "../helpers/http";

function directory() {
  const name = uniq("target");
  const target = { kind: "tool" as const, name };
  const stub = personDirectoryStub(env, "tool", name);
  const tg = (chat: string, route = "tg-route"): Arrival => ({
    target,
    address: { door: "channel", channel: "telegram", our_identity: "bot", address: chat },
    route_name: route,
  });
  const wa = (phone: string, route = "wa-route"): Arrival => ({
    target,
    address: { door: "channel", channel: "whatsapp", our_identity: "+1000", address: phone },
    route_name: route,
  });
  return { stub, target, tg, wa };
}

describe("the person directory", () => {
  it("creates a single-address person at first contact, once; a later route joins the address's routes", async () => {
    const { stub, tg } = directory();
    const now = Date.now();
    const first = await stub.ensure(tg("42"), "de-DE", now);
    expect(first.created).toBe(true);
    expect(first.person).toMatchObject({
      target_kind: "tool",
      locale: "de-DE",
      addresses: [{ door: "channel", channel: "telegram", our_identity: "bot", address: "42", routes: ["tg-route"] }],
    });
    expect(first.person.person_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(first.person.created_at).toMatch(/\+00:00$/);
    const again = await stub.ensure(tg("42", "tg-route-2"), "fr", now + 1);
    expect(again.created).toBe(false);
    expect(again.person.locale).toBe("de-DE"); // seeded once, never overwritten by a later turn
    expect(again.person.addresses[0].routes).toEqual(["tg-route", "tg-route-2"]);
    expect(await stub.resolve(tg("42").address)).toMatchObject({ person_id: first.person.person_id });
    expect(await stub.resolve(tg("43").address)).toBeNull();
  });

  it("redeeming a code merges the two persons into the earlier one; the code is single use", async () => {
    const { stub, tg, wa } = directory();
    const now = Date.now();
    const older = (await stub.ensure(tg("7"), null, now)).person;
    const newer = (await stub.ensure(wa("+1555"), null, now + 1000)).person;
    const { code, expires_at } = await stub.mint(tg("7"), now + 2000);
    expect(code).toMatch(/^LINK-[A-Z0-9]{8}$/);
    expect(expires_at).toBe(now + 2000 + 900_000);
    const r = await stub.redeem(wa("+1555"), "party-wa", code, now + 3000);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.person.person_id).toBe(older.person_id);
    expect(r.person.addresses.map((a) => a.address)).toEqual(["7", "+1555"]);
    expect(await stub.get(newer.person_id)).toBeNull();
    expect(await stub.resolve(wa("+1555").address)).toMatchObject({ person_id: older.person_id });
    // Single use: the same code again is invalid.
    expect(await stub.redeem(wa("+1999"), "party-other", code, now + 4000)).toEqual({ ok: false });
  });

  it("refuses expired, replaced, own and unknown codes alike; codes are stored hashed", async () => {
    const { stub, tg, wa } = directory();
    const now = Date.now();
    const first = await stub.mint(tg("1"), now);
    const second = await stub.mint(tg("1"), now + 1);
    expect(await stub.redeem(wa("+2"), "p", first.code, now + 2)).toEqual({ ok: false }); // replaced by the second
    expect(await stub.redeem(tg("1"), "p2", second.code, now + 3)).toEqual({ ok: false }); // one's own code (now used up)
    const third = await stub.mint(tg("1"), now + 4);
    expect(await stub.redeem(wa("+2"), "p3", third.code, now + 4 + 900_001)).toEqual({ ok: false }); // expired
    expect(await stub.redeem(wa("+2"), "p4", "LINK-ZZZZZZZZ", now)).toEqual({ ok: false });
    const stored = await runInDurableObject(stub as unknown as DurableObjectStub, (_o, state) => state.storage.sql.exec("SELECT hash FROM codes").toArray());
    for (const row of stored) expect(String(row.hash)).toMatch(/^[0-9a-f]{64}$/);
  });

  it("locks a party after five invalid redeems, and a locked party never burns a valid code", async () => {
    const { stub, tg, wa } = directory();
    const now = Date.now();
    const valid = await stub.mint(tg("9"), now);
    for (let i = 1; i <= 6; i++) expect(await stub.redeem(wa("+3"), "attacker", `LINK-BAD0000${i}`, now + i)).toEqual({ ok: false });
    expect(redeemLockSeconds(6)).toBe(1);
    // Locked for 1 s after the sixth failure: the valid code is refused and stays redeemable.
    expect(await stub.redeem(wa("+3"), "attacker", valid.code, now + 7)).toEqual({ ok: false });
    const later = await stub.redeem(wa("+3"), "attacker", valid.code, now + 6 + 1001);
    expect(later.ok).toBe(true);
    // A valid redeem clears the count: the next failure is the first again, no lock.
    expect(await stub.redeem(wa("+4"), "attacker", "LINK-BAD00099", now + 3000)).toEqual({ ok: false });
    const next = await stub.mint(tg("9"), now + 3001);
    expect((await stub.redeem(wa("+4"), "attacker", next.code, now + 3002)).ok).toBe(true);
  });

  it("unlink detaches the address into a fresh person; a single address has nothing to unlink", async () => {
    const { stub, tg, wa } = directory();
    const now = Date.now();
    expect(await stub.unlink(tg("5"), now)).toEqual({ ok: false, reason: "not_linked" });
    const { code } = await stub.mint(tg("5"), now);
    const merged = await stub.redeem(wa("+5"), "p", code, now + 1);
    if (!merged.ok) throw new Error("merge failed");
    const detached = await stub.unlink(wa("+5"), now + 2);
    expect(detached.ok).toBe(true);
    if (!detached.ok) return;
    expect(detached.person.person_id).not.toBe(merged.person.person_id);
    expect(detached.person.addresses.map((a) => a.address)).toEqual(["+5"]);
    expect((await stub.get(merged.person.person_id))?.addresses.map((a) => a.address)).toEqual(["5"]);
    // The detached address is known: a later message is no first contact (no second greeting).
    expect((await stub.ensure(wa("+5"), null, now + 3)).created).toBe(false);
  });

  it("sets and clears the locale; erase removes the person, its addresses and its open codes", async () => {
    const { stub, tg } = directory();
    const now = Date.now();
    const p = (await stub.ensure(tg("8"), null, now)).person;
    expect((await stub.setLocale(p.person_id, "pt-BR"))?.locale).toBe("pt-BR");
    expect((await stub.setLocale(p.person_id, null))?.locale).toBeNull();
    expect(await stub.setLocale("no-such-person", "en")).toBeNull();
    await stub.mint(tg("8"), now);
    const erased = await stub.erase(p.person_id);
    expect(erased?.person_id).toBe(p.person_id);
    expect(await stub.erase(p.person_id)).toBeNull();
    expect(await stub.get(p.person_id)).toBeNull();
    expect(await stub.resolve(tg("8").address)).toBeNull();
    const left = await runInDurableObject(stub as unknown as DurableObjectStub, (_o, state) => ({
      codes: state.storage.sql.exec("SELECT COUNT(*) AS n FROM codes").one().n,
      addresses: state.storage.sql.exec("SELECT COUNT(*) AS n FROM addresses").one().n,
    }));
    expect(left).toEqual({ codes: 0, addresses: 0 });
  });

  it("the alarm sweeps expired codes and throttle rows", async () => {
    const { stub, tg, wa } = directory();
    const past = Date.now() - 3_600_000;
    await stub.mint(tg("11"), past);
    await stub.redeem(wa("+11"), "p", "LINK-NOPE0000", past);
    // Both expiries are already past, so the runtime may start the alarm on its own; this call then
    // finds none scheduled while that run is still queued behind it. Either way a sweep runs.
    await runDurableObjectAlarm(stub as unknown as DurableObjectStub);
    await vi.waitFor(
      async () => {
        const left = await runInDurableObject(stub as unknown as DurableObjectStub, (_o, state) => ({
          codes: state.storage.sql.exec("SELECT COUNT(*) AS n FROM codes").one().n,
          throttle: state.storage.sql.exec("SELECT COUNT(*) AS n FROM throttle").one().n,
        }));
        expect(left).toEqual({ codes: 0, throttle: 0 });
      },
      { timeout: 5_000, interval: 50 },
    );
  });
});

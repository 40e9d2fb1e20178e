import { describe, expect, it } from "vitest";
import {
  CODE_ALPHABET,
  PAIRING_REPLIES,
  canonicalLocale,
  classifyInbound,
  doorAddressKey,
  hashPairingCode,
  mergeSurvivor,
  mintPairingCode,
  redeemLockSeconds,
} from "../../src/persons/pairing";

describe("pairing policy (decisions §12)", () => {
  it("classifies /link and /unlink only as the whole trimmed text, and finds a code token anywhere", () => {
    expect(classifyInbound(" /link ")).toEqual({ kind: "link" });
    expect(classifyInbound("/unlink")).toEqual({ kind: "unlink" });
    expect(classifyInbound("please /link")).toEqual({ kind: "text" });
    expect(classifyInbound("/LINK")).toEqual({ kind: "text" });
    expect(classifyInbound("my code is LINK-AB12CD34, thanks")).toEqual({ kind: "redeem", code: "LINK-AB12CD34" });
    expect(classifyInbound("LINK-AAAAAAAA then LINK-BBBBBBBB")).toEqual({ kind: "redeem", code: "LINK-AAAAAAAA" });
    // Word-bounded and upper case only: these are plain text.
    for (const t of ["XLINK-AB12CD34", "LINK-AB12CD345", "link-ab12cd34", "LINK-AB12CD3", null]) expect(classifyInbound(t)).toEqual({ kind: "text" });
  });

  it("mints LINK- and 8 symbols of A-Z0-9, every symbol reachable, with rejection sampling", () => {
    for (let i = 0; i < 200; i++) expect(mintPairingCode()).toMatch(/^LINK-[A-Z0-9]{8}$/);
    // A source that yields only bytes above the last full multiple of 36 (252..255) first:
    // they are dropped, never folded onto the first symbols.
    let call = 0;
    const biased = (b: Uint8Array) => {
      b.fill(call++ === 0 ? 255 : 0);
      return b;
    };
    expect(mintPairingCode(biased)).toBe("LINK-AAAAAAAA");
    const seen = new Set<string>();
    for (let i = 0; i < 400; i++) for (const ch of mintPairingCode().slice(5)) seen.add(ch);
    expect(seen.size).toBe(CODE_ALPHABET.length);
  });

  it("stores a code as its SHA-256 hex", async () => {
    expect(await hashPairingCode("LINK-AB12CD34")).toMatch(/^[0-9a-f]{64}$/);
    expect(await hashPairingCode("LINK-AB12CD34")).not.toBe(await hashPairingCode("LINK-AB12CD35"));
  });

  it("locks a party out after 5 invalid redeems: 1, 2, 4 … s, capped at 900", () => {
    expect([0, 1, 5].map(redeemLockSeconds)).toEqual([0, 0, 0]);
    expect([6, 7, 8, 9].map(redeemLockSeconds)).toEqual([1, 2, 4, 8]);
    expect(redeemLockSeconds(15)).toBe(512);
    expect(redeemLockSeconds(16)).toBe(900);
    expect(redeemLockSeconds(60)).toBe(900);
  });

  it("keeps the earlier person on a merge; a tie goes to the smaller id", () => {
    const a = { person_id: "b-2", created_at: "2026-01-01T00:00:00+00:00" };
    const b = { person_id: "a-1", created_at: "2026-01-02T00:00:00+00:00" };
    expect(mergeSurvivor(a, b)).toEqual({ survivor: a, absorbed: b });
    expect(mergeSurvivor(b, a)).toEqual({ survivor: a, absorbed: b });
    const c = { ...a, person_id: "a-0" };
    expect(mergeSurvivor(a, c).survivor).toBe(c);
  });

  it("keys an address by its door: the same digits on two channels are two addresses", () => {
    const sms = doorAddressKey({ door: "channel", channel: "twilio", our_identity: "+1555", address: "+1666" });
    const wa = doorAddressKey({ door: "channel", channel: "whatsapp", our_identity: "+1555", address: "+1666" });
    expect(sms).not.toBe(wa);
    expect(doorAddressKey({ door: "api", address: "root/+1666" })).toBe('["api","root/+1666"]');
  });

  it("accepts BCP 47 tags, canonicalized, and refuses the rest", () => {
    expect(canonicalLocale("pt-br")).toBe("pt-BR");
    expect(canonicalLocale("en")).toBe("en");
    for (const bad of ["", " en", "en_US", "not a tag", "x"]) expect(canonicalLocale(bad)).toBeNull();
  });

  it("answers every invalid redeem with one uniform text", () => {
    expect(PAIRING_REPLIES.invalid).toBe("That pairing code is not valid. It may have expired or already been used.");
    expect(PAIRING_REPLIES.minted("LINK-AB12CD34", "2026-11-23T10:00:00+00:00")).toContain("LINK-AB12CD34");
  });
});

/** Capability tokens (src/access-control/capability-tokens.ts): one shape, minting and stored form for every kind. */
import { describe, expect, it } from "vitest";
import { capabilityTokenKind } from "../../src/access-control/capability-tokens";
import { sha256Hex } from "../../src/access-control/crypto";

describe("capability token kinds", () => {
  const kind = capabilityTokenKind("tst-");

  it("mints prefixed 43-character url-safe tokens, each new, that pass their own shape check", () => {
    const a = kind.mint();
    const b = kind.mint();
    expect(a).toMatch(/^tst-[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
    expect(kind.isShaped(a)).toBe(true);
  });

  it("refuses other prefixes, other lengths and other characters", () => {
    const body = kind.mint().slice(4);
    for (const s of [`xyz-${body}`, `tst-${body}x`, `tst-${body.slice(1)}`, `tst-${body.slice(1)}+`, `TST-${body}`, ` tst-${body}`])
      expect(kind.isShaped(s), s).toBe(false);
  });

  it("stores the SHA-256 of the whole token", async () => {
    const t = kind.mint();
    expect(await kind.hash(t)).toBe(await sha256Hex(t));
  });

  it("takes only a plain prefix", () => {
    expect(() => capabilityTokenKind("a.b")).toThrow();
  });
});

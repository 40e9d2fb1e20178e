import { describe, expect, it } from "vitest";
import { backoffDelaySeconds } from "../../src/conversations/thread/backoff";

describe("backoffDelaySeconds (decisions §8)", () => {
  it("matches the documented table with the defaults (base 60, max 900)", () => {
    const table = Array.from({ length: 10 }, (_, i) => backoffDelaySeconds(i + 1, 60, 900));
    expect(table).toEqual([60, 120, 240, 480, 900, 900, 900, 900, 900, 900]);
  });

  it("waits base after attempt 1 and never exceeds max", () => {
    expect(backoffDelaySeconds(1, 5, 100)).toBe(5);
    expect(backoffDelaySeconds(2, 5, 100)).toBe(10);
    expect(backoffDelaySeconds(5, 5, 100)).toBe(80);
    expect(backoffDelaySeconds(6, 5, 100)).toBe(100);
    expect(backoffDelaySeconds(1, 100, 100)).toBe(100);
  });

  it("stays finite and capped for huge attempt counts", () => {
    expect(backoffDelaySeconds(5000, 60, 900)).toBe(900);
  });

  it("supports fractional durations (fast end-to-end settings)", () => {
    expect(backoffDelaySeconds(3, 0.25, 10)).toBe(1);
  });

  it("refuses attempts below 1, fractional attempts and non-positive durations", () => {
    for (const [a, b, m] of [
      [0, 60, 900],
      [1.5, 60, 900],
      [1, 0, 900],
      [1, 60, -1],
    ])
      expect(() => backoffDelaySeconds(a, b, m)).toThrow(RangeError);
  });
});

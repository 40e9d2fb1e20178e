import { describe, expect, it } from "vitest";
import { backoffSeconds } from "../../src/access-control/throttle";
import { grantsRun, grantsTag, isAdminKey, isValidScope, scopeCovered } from "../../src/access-control/scopes";
import { conditionNeedsRequest } from "../../src/access-control/condition";
import { constantTimeEqual } from "../../src/access-control/crypto";

describe("scope grammar (pure)", () => {
  it("accepts the grammar and nothing else", () => {
    for (const s of ["*", "tools", "tools:read", "tools:write", "tool:echo", "agent:my-agent", "conversations:read"]) {
      expect(isValidScope(s), s).toBe(true);
    }
    for (const s of ["", "tools:admin", "unknown", "unknown:read", "tool:", "tool:bad name", "a:b:c", "**"]) {
      expect(isValidScope(s), s).toBe(false);
    }
  });
  it("write implies read; bare tag means write", () => {
    expect(grantsTag(["tools:write"], "tools", "read")).toBe(true);
    expect(grantsTag(["tools"], "tools", "write")).toBe(true);
    expect(grantsTag(["tools:read"], "tools", "write")).toBe(false);
    expect(grantsTag(["agents"], "tools", "read")).toBe(false);
    expect(grantsTag(["*"], "anything", "write")).toBe(true);
  });
  it("run grants come from tool:<name>, tools:write, tools or *", () => {
    expect(grantsRun(["tool:echo"], "tool", "echo")).toBe(true);
    expect(grantsRun(["tool:echo"], "tool", "other")).toBe(false);
    expect(grantsRun(["tools:write"], "tool", "x")).toBe(true);
    expect(grantsRun(["tools:read"], "tool", "x")).toBe(false);
    expect(grantsRun(["agents"], "agent", "x")).toBe(true);
    expect(grantsRun(["agent:a"], "tool", "a")).toBe(false);
  });
  it("coverage: a holder can only hand out what it holds", () => {
    expect(scopeCovered(["tools"], "tools:read")).toBe(true);
    expect(scopeCovered(["tools:read"], "tools")).toBe(false);
    expect(scopeCovered(["tools"], "tool:echo")).toBe(true);
    expect(scopeCovered(["tools"], "*")).toBe(false);
    expect(scopeCovered(["*"], "*")).toBe(true);
  });
  it("admin is * with no condition and no owner", () => {
    expect(isAdminKey({ scopes: ["*"], condition: null, owner_user_id: null })).toBe(true);
    expect(isAdminKey({ scopes: ["*"], condition: "true", owner_user_id: null })).toBe(false);
    expect(isAdminKey({ scopes: ["*"], condition: null, owner_user_id: "o" })).toBe(false);
    expect(isAdminKey({ scopes: ["tools"], condition: null, owner_user_id: null })).toBe(false);
  });
  it("detects conditions that read the request", () => {
    expect(conditionNeedsRequest('.request.method == "GET"')).toBe(true);
    expect(conditionNeedsRequest('.["request"] != null')).toBe(true);
    expect(conditionNeedsRequest('.sub == "svc"')).toBe(false);
  });
  it("bootstrap backoff doubles and caps", () => {
    expect([1, 2, 3, 4, 10, 20].map(backoffSeconds)).toEqual([1, 2, 4, 8, 300, 300]);
    expect(backoffSeconds(0)).toBe(0);
  });
  it("compares secrets in constant time and exactly", () => {
    expect(constantTimeEqual("abc", "abc")).toBe(true);
    expect(constantTimeEqual("abc", "abd")).toBe(false);
    expect(constantTimeEqual("abc", "abcd")).toBe(false);
  });
});

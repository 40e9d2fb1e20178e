import { describe, expect, it } from "vitest";
import { needsPairingCode, parseGreetingTemplate, renderGreeting } from "../../src/persons/greeting-template";

describe("greeting templates (spec §2.5): only {pairing_code}, literal braces doubled", () => {
  it.each([
    ["Hi! Link your other channels with {pairing_code}.", "Hi! Link your other channels with LINK-AB12CD34.", true],
    ["Welcome. No code here.", "Welcome. No code here.", false],
    ["Braces {{like this}} stay, code {pairing_code}", "Braces {like this} stay, code LINK-AB12CD34", true],
    ["{pairing_code}{pairing_code}", "LINK-AB12CD34LINK-AB12CD34", true],
  ])("renders %j", (template, rendered, needs) => {
    const parsed = parseGreetingTemplate(template);
    if (!parsed.ok) throw new Error(parsed.error);
    expect(renderGreeting(parsed.parts, "LINK-AB12CD34")).toBe(rendered);
    expect(needsPairingCode(parsed.parts)).toBe(needs);
  });

  it.each([
    ["", "blank"],
    ["   \n", "blank"],
    ["Hello {name}", "unknown placeholder"],
    ["Hello {}", "empty placeholder"],
    ["Hello {pairing_code", "unbalanced '{'"],
    ["Hello pairing_code}", "unbalanced '}'"],
    ["Hello {pairing_code!r}", "no conversion or format spec"],
    ["Hello {pairing_code:>12}", "no conversion or format spec"],
    ["Hello {pair{ing}", "unbalanced '{'"],
  ])("refuses %j (%s), never echoing the text", (template, defect) => {
    const parsed = parseGreetingTemplate(template);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.error).toContain(defect);
      expect(parsed.error).not.toContain("Hello");
    }
  });
});

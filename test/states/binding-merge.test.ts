import { describe, expect, it } from "vitest";
import { mergeBindings } from "../../src/states/binding-merge";
import { StateBinding } from "../../src/shared/state-binding";
import { must } from "../../src/platform/must";

const tt = (content: string) => ({ content });
const b = (states: unknown[]) => StateBinding.parse({ states });

describe("merging a route's binding with its preset's (door entries first)", () => {
  it("either alone stands; a state in both takes the door's subject and scope, unions templates, concatenates door-first", () => {
    const door = b([
      { state: "s", subject_expr: tt(".door"), templates: ["t1"], input_injections: [{ into: "a", jq: tt("1") }], updates: [{ jq: tt("[]") }] },
      { state: "only-door", subject_expr: tt(".x") },
    ]);
    const preset = b([
      { state: "only-preset", subject_expr: tt(".y") },
      {
        state: "s",
        subject_expr: tt(".preset"),
        scope_expr: tt("true"),
        templates: ["t1", "t2"],
        input_injections: [{ into: "b", jq: tt("2") }],
        updates: [{ jq: tt("[1]") }],
      },
    ]);
    expect(mergeBindings(door, null)).toBe(door);
    expect(mergeBindings(null, preset)).toBe(preset);
    expect(mergeBindings(null, null)).toBeNull();
    const m = must(mergeBindings(door, preset), "mergeBindings(door, preset)");
    expect(m.states.map((a) => a.state)).toEqual(["s", "only-door", "only-preset"]);
    expect(m.states[0].subject_expr).toMatchObject(tt(".door"));
    expect(m.states[0].scope_expr).toMatchObject(tt("true"));
    expect(m.states[0].templates).toEqual(["t1", "t2"]);
    expect(m.states[0].input_injections.map((i) => i.into)).toEqual(["a", "b"]);
    expect(m.states[0].updates.map((u) => u.jq?.content)).toEqual(["[]", "[1]"]);
    const withScope = must(
      mergeBindings(b([{ state: "s", subject_expr: tt(".d"), scope_expr: tt("false") }]), preset),
      'mergeBindings(b([{ state: "s", subject…',
    );
    expect(withScope.states[0].scope_expr).toMatchObject(tt("false"));
  });
});

/**
 * The ThreadObject's stub type, as the platform derives it from the class (`DurableObjectStub`).
 * Its RPC type mapping turns a method whose answer holds an `unknown` into one returning `never`,
 * which silently hid every record-returning method while the record's free-form JSON fields were
 * typed `Record<string, unknown>`. These assertions are checked by `npm run typecheck` (tsc covers
 * test/); at run time they are no-ops.
 */
import { describe, expectTypeOf, it } from "vitest";
import type { ThreadObject } from "../../durable-objects/thread-object";
import type { AnswerRecord } from "../../src/conversations/model/record";
import type { ThreadRpc } from "../../src/conversations/model/thread-rpc";
import type { CheckpointMessage } from "../../src/shared/agent-memory";

type Stub = DurableObjectStub<ThreadObject>;
type Answer<M extends keyof ThreadRpc & keyof Stub> = Awaited<ReturnType<Stub[M]>>;

describe("the generated ThreadObject stub type", () => {
  it("keeps the methods that answer records (free-form JSON is a JsonValue, never unknown)", () => {
    // `AnswerRecord | null` maps member by member: a lost record leaves `null` alone, so look past it.
    expectTypeOf<NonNullable<Answer<"getRecord">>>().not.toBeNever();
    expectTypeOf<NonNullable<Answer<"getRecord">>>().toExtend<AnswerRecord>();
    expectTypeOf<Extract<Answer<"accept">, { kind: "answered" }>>().not.toBeNever();
    expectTypeOf<Extract<Answer<"accept">, { kind: "answered" }>["record"]>().toExtend<AnswerRecord>();
    expectTypeOf<ReturnType<Stub["transcript"]>>().not.toBeNever();
    expectTypeOf<Answer<"transcript">["items"]>().toExtend<AnswerRecord[]>();
    expectTypeOf<ReturnType<Stub["search"]>>().not.toBeNever();
    expectTypeOf<ReturnType<Stub["checkpointRead"]>>().not.toBeNever();
    expectTypeOf<Answer<"checkpointRead">>().toExtend<CheckpointMessage[]>();
  });

  it("answers every verb of the contract", () => {
    expectTypeOf<Stub>().toExtend<ThreadRpc>();
  });
});

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { TURN_ERROR_TEXT } from "../../src/conversations/model/record";
import { createRoute, echoKey, readRecord, send } from "../helpers/bridge";
import { admin, call } from "../helpers/http";
import { rawRows, stubFor } from "../helpers/threads";

/** Makes the thread's agent-memory table refuse every insert: a real storage failure, injected in storage. */
async function breakAgentMemory(threadId: string): Promise<void> {
  await runInDurableObject(stubFor(threadId), (_o, state) => {
    state.storage.sql.exec("DROP TABLE checkpoint_messages");
    state.storage.sql.exec("CREATE TABLE checkpoint_messages (seq INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, message TEXT NOT NULL CHECK (0))");
  });
}

describe("agent memory append failures are loud (spec §3.2)", () => {
  it("manual mode: a failed append of the suppressed inbound is an error outcome, detail for admins", async () => {
    const k = await echoKey();
    const r = await createRoute({ door: "api", target_kind: "agent", target_name: "echo", execution_key: k.user_id, initial_mode: "manual" });
    const first = await send(r.name, { external_user_id: "m", text: "remember me", wait_seconds: 10 });
    expect(first.body.data.status).toBe("silent");
    const threadId = first.body.data.thread_id;
    await breakAgentMemory(threadId);
    const second = await send(r.name, { external_user_id: "m", text: "and me", wait_seconds: 10 });
    expect(second.body.data).toMatchObject({ status: "error", answer: TURN_ERROR_TEXT });
    const rec = await readRecord(r.name, second.body.data.message_id);
    expect(rec.body.data.error).toContain("appending the inbound to agent memory failed");
  });

  it("operator send: a failed append answers 503 and mints no record", async () => {
    const k = await echoKey();
    const r = await createRoute({ door: "api", target_kind: "agent", target_name: "echo", execution_key: k.user_id, initial_mode: "manual" });
    const first = await send(r.name, { external_user_id: "o", text: "hello", wait_seconds: 10 });
    const threadId = first.body.data.thread_id;
    await breakAgentMemory(threadId);
    const before = (await rawRows(threadId)).length;
    const res = await call("POST", `/api/conversations/${r.name}/thread/messages`, {
      key: await admin(),
      body: { thread_id: threadId, text: "operator here" },
    });
    expect(res.status).toBe(503);
    expect(res.body.error).not.toContain("operator here");
    expect((await rawRows(threadId)).length).toBe(before);
  });
});

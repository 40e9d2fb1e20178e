import { describe, expect, it } from "vitest";
import { echoRoute, readRecord, send } from "../helpers/bridge";

describe("smoke", () => {
  it("echo tool answers inline and by poll", async () => {
    const r = await echoRoute();
    const inline = await send(r.name, { external_user_id: "u1", text: "hello", wait_seconds: 5 });
    expect(inline.status).toBe(200);
    expect(inline.body.data).toMatchObject({ status: "answered", answer: "hello" });
    const async = await send(r.name, { external_user_id: "u1", text: "again" });
    expect(async.status).toBe(202);
    await new Promise((res) => setTimeout(res, 200));
    const rec = await readRecord(r.name, async.body.data.message_id);
    expect(rec.status).toBe(200);
    expect(rec.body.data).toMatchObject({ status: "delivered", answer: "again", answer_status: "answered" });
  });
});

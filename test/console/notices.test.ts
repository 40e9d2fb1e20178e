/** What a console hears of a listing push (pure), and the ticket shapes. */
import { describe, expect, it } from "vitest";
import { noticesOfPush } from "../../src/console/notices";
import { isTicketShaped, mintTicket } from "../../src/console/tickets";

const row = (route: string, thread: string) => ({
  route_name: route,
  thread_id: thread,
  client_address: "+15550001",
  last_activity_at: "2026-05-01T10:00:00.000Z",
  message_count: 3,
  last_status: "pending_delivery",
  live_until: null,
});

describe("noticesOfPush", () => {
  it("tells the row's route its thread, status and instant, and each failed record's id, nothing else", () => {
    const got = noticesOfPush({
      thread_id: "bridge:@person:p1",
      row: row("sales", "bridge:@person:p1"),
      failed: [{ message_id: "m1", route_name: "support", thread_id: "bridge:@person:p1", failed_at: "2026-05-01T10:00:00.000Z", expires_at: 1 }],
      updates: 1,
    });
    expect([...got.keys()].sort()).toEqual(["sales", "support"]);
    expect(got.get("sales")).toEqual([
      { type: "thread", route_name: "sales", thread_id: "bridge:@person:p1", status: "pending_delivery", at: "2026-05-01T10:00:00.000Z" },
    ]);
    expect(got.get("support")).toEqual([{ type: "failed", route_name: "support", thread_id: "bridge:@person:p1", message_id: "m1" }]);
    expect(JSON.stringify([...got.values()])).not.toContain("+15550001");
  });

  it("a thread's removal (no row, nothing failed) tells nobody", () => {
    expect(noticesOfPush({ thread_id: "bridge:a:b", row: null, failed: [], updates: 0 }).size).toBe(0);
  });
});

describe("tickets", () => {
  it("are ctk- and 43 url-safe characters, each one new", () => {
    const a = mintTicket();
    expect(isTicketShaped(a)).toBe(true);
    expect(a).not.toBe(mintTicket());
    for (const bad of ["", "ctk-", `ctk-${"a".repeat(42)}`, `ctk-${"a".repeat(44)}`, `itk-${"a".repeat(43)}`, `ctk-${"a".repeat(42)}=`])
      expect(isTicketShaped(bad)).toBe(false);
  });
});

/**
 * Callback tickets: an interaction with an audience sends the audience a one-time
 * answer link in its notification feed; the public doors show the question and take one answer;
 * the ticket is stored hashed, lives at most until the interaction's expiry, and every miss is
 * the same 404.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { send } from "../helpers/bridge";
import { admin, call, mintKey } from "../helpers/http";
import { eventually } from "../helpers/threads";
import { sha256Hex } from "../../src/access-control/crypto";
import { askRoute, listedAs, pendingOf, rawObject } from "./helpers";

/** An owned key whose user_id is the audience, so it reads its own notification feed. */
async function audienceKey() {
  const owner = await mintKey({ scopes: ["notifications", "interactions"] });
  return mintKey({ scopes: ["notifications:read", "interactions"], owner_user_id: owner.user_id });
}

/** The ticket the audience received (waits for the object's alarm to send it). */
async function ticketOf(key: string): Promise<string> {
  const feed = await eventually(
    () => call("GET", "/api/notifications", { key }),
    (r) => r.status === 200 && r.body.data.notifications.length > 0,
  );
  const message: string = feed.body.data.notifications[0].message;
  const m = /\/api\/interactions\/callback\/(itk-[A-Za-z0-9_-]{43})/.exec(message);
  if (!m) throw new Error("no ticket in the notification");
  return m[1];
}

async function parked(audience: string) {
  const route = await askRoute({ audience });
  const r = await send(route.name, { external_user_id: "tix", text: "Approve the refund?", wait_seconds: 10 });
  const [pending] = await pendingOf(r.body.data.thread_id);
  return { route, pending, threadId: r.body.data.thread_id as string };
}

describe("callback tickets", () => {
  it("the audience's feed carries the link; GET shows the question; one POST answers; then every door is 404", async () => {
    const aud = await audienceKey();
    const { pending } = await parked(aud.user_id);
    const ticket = await ticketOf(aud.key);
    const feed = (await call("GET", "/api/notifications", { key: aud.key })).body.data.notifications[0];
    expect(feed).toMatchObject({ audience: aud.user_id });
    expect(feed.message).toContain("Approve the refund?\n\n1. Yes\n2. No");
    // Only the audience's own feed: the shared feed (every unrestricted reader's) never holds a ticket.
    const shared = await call("GET", "/api/notifications", { key: await admin() });
    expect(JSON.stringify(shared.body)).not.toContain(ticket);

    // Public: no key needed, and a key changes nothing.
    const shown = await call("GET", `/api/interactions/callback/${ticket}`);
    expect(shown.status).toBe(200);
    expect(shown.body.data).toEqual({
      interaction_id: pending.interaction_id,
      status: "pending",
      question: "Approve the refund?",
      options: [
        { id: "yes", text: "Yes" },
        { id: "no", text: "No" },
      ],
      schema: null,
      expires_at: pending.expires_at,
    });
    expect((await call("GET", `/api/interactions/callback/${ticket}`, { key: "sk-not-a-key" })).status).toBe(200);
    // A body refusal does not spend the ticket.
    expect((await call("POST", `/api/interactions/callback/${ticket}`, { body: { option_id: "perhaps" } })).status).toBe(400);
    const answered = await call("POST", `/api/interactions/callback/${ticket}`, { body: { option_id: "no" } });
    expect(answered.status).toBe(200);
    expect(answered.body.data).toEqual({ interaction_id: pending.interaction_id, status: "answered" });
    const view = await listedAs(pending.interaction_id, "answered");
    expect(view.answer).toMatchObject({ text: "No", option: { id: "no" }, answered_by: { kind: "ticket", user_id: null, message_id: null } });

    for (const method of ["GET", "POST"]) {
      const again = await call(method, `/api/interactions/callback/${ticket}`, method === "POST" ? { body: { text: "yes" } } : {});
      expect(again.status, method).toBe(404);
      expect(again.body).toEqual({ error: "not found" });
    }
  });

  it("stores only the ticket's SHA-256, and its lifetime ends with the interaction's", async () => {
    const aud = await audienceKey();
    const { pending } = await parked(aud.user_id);
    const ticket = await ticketOf(aud.key);
    const row = await env.DB.prepare("SELECT ticket_hash, ticket_expires_at, expires_at, view FROM interactions WHERE interaction_id = ?")
      .bind(pending.interaction_id)
      .first<any>();
    expect(row.ticket_hash).toBe(await sha256Hex(ticket));
    expect(row.ticket_expires_at).toBeLessThanOrEqual(row.expires_at);
    expect(row.view).not.toContain(ticket);
    const stored = await runInDurableObject(rawObject(pending.interaction_id), (_o, state) =>
      JSON.stringify(state.storage.sql.exec("SELECT * FROM interaction").toArray()),
    );
    expect(stored).not.toContain(ticket);
    expect(stored).toContain(row.ticket_hash);
  });

  it("every miss is the same 404: misshapen, unknown, expired", async () => {
    const aud = await audienceKey();
    const { pending } = await parked(aud.user_id);
    const ticket = await ticketOf(aud.key);
    const unknown = `itk-${"A".repeat(43)}`;
    for (const t of ["nope", "itk-short", unknown, `${ticket}x`]) {
      const r = await call("GET", `/api/interactions/callback/${encodeURIComponent(t)}`);
      expect(r.status, t).toBe(404);
      expect(r.body).toEqual({ error: "not found" });
      expect((await call("POST", `/api/interactions/callback/${encodeURIComponent(t)}`, { body: { text: "x" } })).status, t).toBe(404);
    }
    // Expired: the listing and the object both check the ticket's lifetime.
    await env.DB.prepare("UPDATE interactions SET ticket_expires_at = 1 WHERE interaction_id = ?").bind(pending.interaction_id).run();
    expect((await call("GET", `/api/interactions/callback/${ticket}`)).status).toBe(404);
    await env.DB.prepare("UPDATE interactions SET ticket_expires_at = ? WHERE interaction_id = ?")
      .bind(Date.now() + 60_000, pending.interaction_id)
      .run();
    await runInDurableObject(rawObject(pending.interaction_id), (_o, state) => void state.storage.sql.exec("UPDATE interaction SET ticket_expires_at = 1"));
    expect((await call("POST", `/api/interactions/callback/${ticket}`, { body: { text: "yes" } })).status).toBe(404);
    // Still pending: an operator may answer it.
    expect((await call("POST", `/api/interactions/${pending.interaction_id}/answer`, { key: await admin(), body: { text: "yes" } })).status).toBe(200);
  });

  it("an interaction without an audience gets no ticket", async () => {
    const { pending } = await parked("");
    const row = await eventually(
      () => env.DB.prepare("SELECT ticket_hash FROM interactions WHERE interaction_id = ?").bind(pending.interaction_id).first<any>(),
      (r) => r !== null,
    );
    expect(row.ticket_hash).toBeNull();
  });
});

/**
 * `GET /api/interactions/stream` (docs/interactions.md "The stream"): server-sent events
 * tailing the hub's ring. Each event is one `id: <n>` line and one `data: <json>` line; a quiet
 * stream gets a `: keepalive` comment every 15 s (each long-poll of the hub waits at most that
 * long). A reader that asks from an id the ring no longer holds gets one `events.dropped` frame
 * first. The stream ends after `maxMs` (the client reconnects with Last-Event-ID) or when the
 * client goes away; nothing runs on after it (no waitUntil: a stream is a read).
 *
 * Before each push (a batch of events, a dropped-events frame, a keepalive) the caller's key is
 * checked again (`stillAllowed`, src/access-control/live-key.ts): once it was revoked, disabled or
 * narrowed, nothing more is written and the stream ends. A quiet stream is thus checked at least
 * every keepalive beat.
 */
import type { EventsSince, InteractionEvent, InteractionHubRpc } from "./rpc";
import { viewFor } from "./record";
import { guardedSender } from "../platform/http/live-stream";

export const STREAM_KEEPALIVE_MS = 15_000;
/** Events one hub read hands over. */
const BATCH = 100;

/** One event frame (pure). JSON never holds a raw newline, so one `data:` line suffices. */
export function eventFrame(e: InteractionEvent, admin: boolean): string {
  const data = { id: e.id, type: e.type, interaction_id: e.interaction_id, at: e.at, interaction: viewFor(e.interaction, admin) };
  return `id: ${e.id}\ndata: ${JSON.stringify(data)}\n\n`;
}

export function streamInteractionEvents(
  hub: InteractionHubRpc,
  opts: {
    after: number | null;
    audience: string | null;
    audienceSince?: string;
    admin: boolean;
    maxMs: number;
    keepaliveMs?: number;
    /** Whether the caller's key may still read the stream; asked before each push. */
    stillAllowed: () => Promise<boolean>;
  },
): Response {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const encoder = new TextEncoder();
  let open = true;
  // The client going away errors the writable side: stop waiting on the hub at once.
  const gone = writer.closed.then(
    () => "gone" as const,
    () => "gone" as const,
  );
  const write = async (chunk: string) => {
    if (!open) return;
    try {
      await writer.write(encoder.encode(chunk));
    } catch {
      open = false;
    }
  };
  const guard = guardedSender(write, opts.stillAllowed, () => {
    open = false;
    void writer.close().catch(() => undefined);
  });
  const send = guard.send;
  const keepaliveMs = opts.keepaliveMs ?? STREAM_KEEPALIVE_MS;
  void (async () => {
    const deadline = Date.now() + opts.maxMs;
    try {
      // A first line at once, so the client (and any proxy) sees the stream open.
      await send("retry: 3000\n: connected\n\n");
      let after = opts.after;
      if (after === null) after = (await hub.since({ after: null, audience: opts.audience, audience_since: opts.audienceSince, waitMs: 0, limit: 1 })).last_id;
      let gapTold = false;
      while (open && Date.now() < deadline) {
        const wait = Math.max(0, Math.min(keepaliveMs, deadline - Date.now()));
        const got: EventsSince | "gone" = await Promise.race([
          hub.since({ after, audience: opts.audience, audience_since: opts.audienceSince, waitMs: wait, limit: BATCH }),
          gone,
        ]);
        if (got === "gone") break;
        if (got.gap && !gapTold) {
          gapTold = true;
          await send(`data: ${JSON.stringify({ type: "events.dropped", after })}\n\n`);
        }
        for (const e of got.events) await send(eventFrame(e, opts.admin));
        // The hub's newest id is the next `after` (it is below ours only when ours was one it never gave).
        after = got.last_id;
        if (!got.events.length && Date.now() < deadline) await send(": keepalive\n\n");
      }
    } catch (err) {
      console.error("interaction stream failed", err instanceof Error ? err.message : "unknown error");
      await write(`data: ${JSON.stringify({ type: "stream.error", message: "the interaction stream failed; reconnect with Last-Event-ID" })}\n\n`);
    } finally {
      if (open) await writer.close().catch(() => undefined);
    }
  })();
  return new Response(readable, {
    status: 200,
    headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-accel-buffering": "no" },
  });
}

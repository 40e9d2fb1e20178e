/**
 * What the inbox itself says to the customer (docs/inbox.md, "The holding message" and "Closing and
 * the satisfaction question"): the route policy's holding message when the conversation turns to a
 * human, and on a resolve with `notify` its closing message and a 1-5 satisfaction question.
 *
 * Each is a record minted here, already answered, and accepted through the thread's own intake like
 * an operator send (src/conversations/operator/operator-send.ts): it is delivered by the thread's
 * delivery machine in the thread's order, with chunking, the rich part's capability check, receipts
 * and the callback. It is marked `origin: "operator"` with `caller_principal` and `submitted_by`
 * `"inbox"`, the record shape's way of saying "not the agent, not the customer". No turn runs on it
 * and it is no operator's answer: the accept carries no operator, so the wait and its clock stay.
 */
import { adapterFor } from "../../channels/registry";
import type { RichPart } from "../../channels/rich/types";
import type { TurnInbound } from "../model/payload";
import type { AnswerRecord } from "../model/record";
import type { Route } from "../model/route";
import type { AcceptRequest, AcceptResult } from "../model/thread-rpc";
import type { ThreadDeps } from "./deps";
import type { ThreadIdentity } from "./identity";
import { type InboxMessages, ratingOptions } from "./inbox";
import { type RouteSnapshots, deliveryRoute } from "./route-reads";
import { newestAddressOn } from "./store";

/** Who the inbox's own records name as their sender. */
export const INBOX_SENDER = "inbox";

/** The satisfaction question's text: with options on a channel that taps them, or alone to be answered with a number. */
export const RATING_QUESTION = "How did we do? Please rate this conversation from 1 (poor) to 5 (excellent).";
export const RATING_QUESTION_TEXT = "How did we do? Reply with a number from 1 (poor) to 5 (excellent).";

/** The record and turn input of one inbox message to `address` on `route` (pure, like an operator send's mint). */
export function mintInboxMessage(
  route: Pick<Route, "route_name" | "door" | "channel" | "our_identity" | "callback_url">,
  threadId: string,
  address: string,
  text: string,
  part: RichPart | null,
  nowMs: number,
): { record: AnswerRecord; inbound: TurnInbound } {
  const messageId = crypto.randomUUID();
  const at = new Date(nowMs).toISOString();
  const record: AnswerRecord = {
    message_id: messageId,
    route_name: route.route_name,
    door: route.door,
    thread_id: threadId,
    client_address: address,
    channel: route.channel,
    our_identity: route.our_identity,
    provider_message_id: null,
    callback_url: route.callback_url,
    caller_principal: INBOX_SENDER,
    origin: "operator",
    inbound_kind: "message",
    inbound_text: "",
    inbound_form: null,
    inbound_attachments: null,
    inbound_location: null,
    inbound_event: null,
    submitted_by: INBOX_SENDER,
    status: "accepted",
    answer_status: "answered",
    answer: text,
    answer_part: part,
    error: null,
    attempts: 0,
    outbound_message_ids: [],
    created_at: at,
    updated_at: at,
    expires_at: null,
  };
  // No turn runs; the turn input only names the record for the queue.
  const inbound: TurnInbound = {
    message_id: messageId,
    thread_id: threadId,
    kind: "message",
    inbound_id: messageId,
    source: INBOX_SENDER,
    text: null,
    sender: null,
    our_identity: route.our_identity,
    channel: route.channel,
  };
  return { record, inbound };
}

/** How the satisfaction question can go on `route`: as tappable options, as text answered with a number, or not at all (an api route). */
export function ratingWay(route: Pick<Route, "door" | "channel">): "options" | "text" | null {
  if (route.door !== "channel" || !route.channel) return null;
  return adapterFor(route.channel)?.capabilities.interactive ? "options" : "text";
}

/** The thread's inbox messages (ThreadInbox's `messages` part). */
export class InboxMessenger implements InboxMessages {
  constructor(
    private readonly deps: Pick<ThreadDeps, "storage" | "clock" | "env">,
    private readonly parts: { identity: ThreadIdentity; snapshots: RouteSnapshots; accept: (req: AcceptRequest) => Promise<AcceptResult> },
  ) {}

  async holding(routeName: string, text: string): Promise<boolean> {
    const to = await this.target(routeName);
    if (!to) return false;
    return this.send(to, text, null);
  }

  async closing(routeName: string, text: string | null, ask: boolean): Promise<boolean> {
    const to = await this.target(routeName);
    if (!to) return false;
    if (text !== null) await this.send(to, text, null);
    const way = ask ? ratingWay(to.route) : null;
    if (way === "options") {
      const options = ratingOptions().map((o) => ({ ...o, kind: "reply" as const }));
      return this.send(to, RATING_QUESTION, { options });
    }
    if (way === "text") return this.send(to, RATING_QUESTION_TEXT, null);
    return false;
  }

  /** The route (as the delivery reads it) and the customer's newest address on it; null when either is missing. */
  private async target(routeName: string): Promise<{ route: Route; address: string; threadId: string; readAt: number } | null> {
    const threadId = this.parts.identity.get();
    const now = this.deps.clock.now();
    const address = newestAddressOn(this.deps.storage, routeName, now);
    if (!threadId || address === null) return null;
    const route = await deliveryRoute(this.deps.env(), routeName, this.parts.snapshots.freshRoute(routeName, now));
    return route ? { route, address, threadId, readAt: now } : null;
  }

  private async send(to: { route: Route; address: string; threadId: string; readAt: number }, text: string, part: RichPart | null): Promise<boolean> {
    const { record, inbound } = mintInboxMessage(to.route, to.threadId, to.address, text, part, this.deps.clock.now());
    // A poll-only api route has nothing to deliver to: the stored answer is its delivery.
    const status = to.route.door === "api" && !to.route.callback_url ? "delivered" : "pending_delivery";
    try {
      const r = await this.parts.accept({
        record,
        inbound,
        waitMs: 0,
        preset: { status, outcome: { answer_status: "answered", answer: text, error: null } },
        route: to.route,
        routeReadAtMs: to.readAt,
      });
      return r.kind === "accepted" || r.kind === "answered";
    } catch (err) {
      console.error(
        JSON.stringify({ event: "inbox_message_failed", route_name: to.route.route_name, reason: err instanceof Error ? err.message : "unknown error" }),
      );
      return false;
    }
  }
}

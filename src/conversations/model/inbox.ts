/**
 * The inbox's shapes (docs/inbox.md): a thread's inbox state as its object keeps it, the view the
 * doors answer, the per-route inbox policy and the operator's actions. The thread object is the
 * single writer of the state, so a claim is a compare-and-set there and no race needs a lock.
 *
 * Statuses follow the support products operators know: `pending` while the agent owns the
 * conversation, `open` once a human does (the thread turned manual), `snoozed` until a time, and
 * `resolved`. "Waiting" is orthogonal: an open thread whose customer has had no human answer since
 * `waiting_since`.
 */
import { z } from "zod";
import { nonBlankText } from "../../platform/http/identifiers";
import { isHttpsUrl } from "./schemas";

export const INBOX_STATUSES = ["pending", "open", "snoozed", "resolved"] as const;
export const InboxStatus = z.enum(INBOX_STATUSES);
export type InboxStatus = z.infer<typeof InboxStatus>;

/** Why a thread waits for a human: the agent handed off, an operator switched it, the customer wrote, a snooze ended, it reopened. */
export const WAIT_REASONS = ["agent_handoff", "operator", "customer_message", "snooze_ended", "reopened"] as const;
export const WaitReason = z.enum(WAIT_REASONS);
export type WaitReason = z.infer<typeof WaitReason>;

/** A label: lowercase, 1–32 of `[a-z0-9_-]`, starting with a letter or digit. */
export const LABEL = /^[a-z0-9][a-z0-9_-]{0,31}$/;
export const Label = z.string().regex(LABEL, "a label is 1-32 of a-z, 0-9, _ and -, starting with a letter or digit");
export const MAX_LABELS = 16;

/** How far the waiting alert went: none yet, the first alert sent, the escalation sent. */
export const SLA_STAGES = ["none", "alerted", "escalated"] as const;
export const SlaStage = z.enum(SLA_STAGES);
export type SlaStage = z.infer<typeof SlaStage>;

/** The satisfaction scale (docs/inbox.md, "Closing and the satisfaction question"): 1 poor to 5 excellent. */
export const RATING_MIN = 1;
export const RATING_MAX = 5;
/** How long after the question a matching reply counts as the rating. */
export const RATING_WINDOW_MS = 24 * 3600 * 1000;

/** A thread's inbox state, kept in its object's meta (`inbox`). Instants are epoch ms. */
export const InboxState = z.object({
  status: InboxStatus,
  /** The route of the conversation's last customer message or action (a person thread spans several). */
  route_name: z.string().nullable(),
  waiting_since: z.number().nullable(),
  waiting_reason: WaitReason.nullable(),
  assignee: z.string().nullable(),
  assigned_at: z.number().nullable(),
  snoozed_until: z.number().nullable(),
  resolved_at: z.number().nullable(),
  labels: z.array(z.string()).max(MAX_LABELS),
  last_inbound_at: z.number().nullable(),
  /** An operator's last send. */
  last_reply_at: z.number().nullable(),
  /** When the waiting alert is due next (null: none due), and how far it went. */
  sla_due_at: z.number().nullable(),
  sla_stage: SlaStage,
  /** When an idle thread resolves by itself (null: never), and the interval it counts (the policy's, kept from its last read). */
  auto_resolve_at: z.number().nullable(),
  auto_resolve_ms: z.number().nullable().default(null),
  /**
   * When a human last took the conversation: it turned `open` from pending, from resolved, or for
   * the first time (null: no human has it since its last resolve). The team figures' first
   * response and resolution times run from here; states stored before it read as null.
   */
  opened_at: z.number().nullable().default(null),
  /** The first operator send since `opened_at` (null: none yet, so the next one is the first response). */
  first_reply_at: z.number().nullable().default(null),
  /** This handoff's holding message was sent (null: not yet; cleared when the agent takes over again or the thread resolves). */
  holding_sent_at: z.number().nullable().default(null),
  /**
   * When the customer was last told, out of hours, when a person is back (the away message at a
   * handoff, or the `handoff_note` beside the agent's answer); null: never. Once per closed period:
   * told again only after the route has opened since.
   */
  away_noted_at: z.number().nullable().default(null),
  /** When the satisfaction question went out; a matching reply within RATING_WINDOW_MS is the rating (null: none asked). */
  rating_asked_at: z.number().nullable().default(null),
  /** The customer's last rating, 1 (poor) to 5 (excellent), and when it came. */
  rating: z.number().int().min(RATING_MIN).max(RATING_MAX).nullable().default(null),
  rated_at: z.number().nullable().default(null),
});
export type InboxState = z.infer<typeof InboxState>;

export const EMPTY_INBOX: InboxState = Object.freeze({
  status: "pending",
  route_name: null,
  waiting_since: null,
  waiting_reason: null,
  assignee: null,
  assigned_at: null,
  snoozed_until: null,
  resolved_at: null,
  labels: [],
  last_inbound_at: null,
  last_reply_at: null,
  sla_due_at: null,
  sla_stage: "none",
  auto_resolve_at: null,
  auto_resolve_ms: null,
  opened_at: null,
  first_reply_at: null,
  holding_sent_at: null,
  away_noted_at: null,
  rating_asked_at: null,
  rating: null,
  rated_at: null,
}) as InboxState;

const iso = z.string().nullable();

/** A thread's inbox state as the doors answer it (ISO instants). */
export const InboxView = z.object({
  thread_id: z.string(),
  status: InboxStatus,
  route_name: z.string().nullable(),
  waiting_since: iso,
  waiting_reason: WaitReason.nullable(),
  assignee: z.string().nullable(),
  assigned_at: iso,
  snoozed_until: iso,
  resolved_at: iso,
  labels: z.array(z.string()),
  last_inbound_at: iso,
  last_reply_at: iso,
  sla_due_at: iso,
  sla_stage: SlaStage,
  auto_resolve_at: iso,
  /** The customer's last satisfaction rating (1 to 5) and when it came; null when none. */
  rating: z.number().nullable(),
  rated_at: iso,
});
export type InboxView = z.infer<typeof InboxView>;

const at = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function inboxView(threadId: string, s: InboxState): InboxView {
  return {
    thread_id: threadId,
    status: s.status,
    route_name: s.route_name,
    waiting_since: at(s.waiting_since),
    waiting_reason: s.waiting_reason,
    assignee: s.assignee,
    assigned_at: at(s.assigned_at),
    snoozed_until: at(s.snoozed_until),
    resolved_at: at(s.resolved_at),
    labels: s.labels,
    last_inbound_at: at(s.last_inbound_at),
    last_reply_at: at(s.last_reply_at),
    sla_due_at: at(s.sla_due_at),
    sla_stage: s.sla_stage,
    auto_resolve_at: at(s.auto_resolve_at),
    rating: s.rating,
    rated_at: at(s.rated_at),
  };
}

/** Where an alert goes: the internal feed (optionally one identity's), and a channel when named. */
export const AlertTarget = z
  .object({
    /** A key's user_id: the alert also lands in that identity's own feed. */
    audience: z.string().min(1).max(128).nullable().default(null),
    channel: z.enum(["slack", "telegram", "whatsapp", "twilio"]).nullable().default(null),
    /** The channel's recipient (a Slack channel id, a chat id, a phone number); the channel's default when null. */
    recipient: z.string().min(1).max(256).nullable().default(null),
  })
  .strict();
export type AlertTarget = z.infer<typeof AlertTarget>;

/** Seconds bounds of the policy's timers: a minute to thirty days. */
const seconds = z
  .number()
  .int()
  .min(60)
  .max(30 * 86_400);

/**
 * A route's inbox policy (`PUT /api/conversations/{route_name}/inbox`). Every field is optional; a
 * route without a policy uses the settings' defaults (INBOX_SLA_SECONDS, no escalation, no
 * messages, no auto-resolve).
 */
export const InboxPolicy = z
  .object({
    /** Seconds a waiting customer may wait before the alert (null: INBOX_SLA_SECONDS). */
    sla_seconds: seconds.nullable().default(null),
    alert: AlertTarget.nullable().default(null),
    /** Seconds after the alert, with nobody answering, before the one escalation (null: none). */
    escalate_after_seconds: seconds.nullable().default(null),
    escalate_to: AlertTarget.nullable().default(null),
    /** Sent to the customer when the thread turns to a human (null: nothing). */
    holding_message: nonBlankText(1024).nullable().default(null),
    /** Seconds without a message either way after which an open or pending thread resolves (null: never). */
    auto_resolve_after_seconds: seconds.nullable().default(null),
    /** Sent to the customer when an operator resolves with `notify: true` (null: nothing). */
    closing_message: nonBlankText(1024).nullable().default(null),
    /** Private notes join the agent's memory on this route. */
    notes_in_agent_memory: z.boolean().default(false),
    /** A resolve with `notify: true` also asks the customer to rate the conversation, where the channel can (docs/inbox.md). */
    ask_rating: z.boolean().default(true),
    /**
     * Where the thread's inbox events are POSTed, signed (docs/inbox.md, "Conversation events");
     * checked by the outbound address guard here and before each POST (null: none).
     */
    events_url: z.string().max(2048).refine(isHttpsUrl, { message: "must be an absolute https:// URL with a host and no userinfo" }).nullable().default(null),
  })
  .strict();
export type InboxPolicy = z.infer<typeof InboxPolicy>;

/**
 * The policy as `route_inbox` stores it: with the secret that signs its events on a route that has
 * no callback secret of its own (minted at the PUT, shown once, never read back by a door).
 */
export const StoredInboxPolicy = InboxPolicy.extend({ events_secret: z.string().nullable().default(null) });
export type StoredInboxPolicy = z.infer<typeof StoredInboxPolicy>;

export const DEFAULT_POLICY: InboxPolicy = InboxPolicy.parse({});

/** An operator's action on a thread's inbox state. `force` overrides another operator's claim (and is recorded). */
export type InboxAction =
  | { kind: "claim"; by: string; force: boolean }
  | { kind: "release"; by: string; force: boolean }
  | { kind: "transfer"; by: string; to: string; force: boolean }
  /** `notify`: the closing message and the satisfaction question go to the customer (docs/inbox.md). */
  | { kind: "resolve"; by: string; notify?: boolean }
  | { kind: "snooze"; by: string; until: number }
  | { kind: "reopen"; by: string }
  | { kind: "labels"; by: string; add: string[]; remove: string[] };

/** What an action answers: the new state, or why it was refused (nothing changed). */
export type InboxActionResult =
  | { ok: true; state: InboxState; changed: boolean }
  | { ok: false; reason: "claimed"; assignee: string }
  | { ok: false; reason: "not_assignee"; assignee: string | null }
  | { ok: false; reason: "no_thread" }
  | { ok: false; reason: "too_many_labels" }
  | { ok: false; reason: "snooze_in_past" };

/** The conversation events the inbox emits (the route's event callback and the metrics count them). */
export const INBOX_EVENTS = [
  "waiting",
  "replied",
  "assigned",
  "labelled",
  "released",
  "resolved",
  "reopened",
  "snoozed",
  "note_added",
  "rated",
  "forced_send",
  "alerted",
  "escalated",
] as const;
export type InboxEventKind = (typeof INBOX_EVENTS)[number];

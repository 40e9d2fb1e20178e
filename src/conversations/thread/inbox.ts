/**
 * The thread's inbox state (docs/inbox.md): who owns the conversation, whether a customer waits for
 * a human and since when, its status and labels. Kept in the object's meta (`inbox`) and changed
 * only here, in one synchronous step per change, so a claim is a compare-and-set on the one writer
 * and two operators can never both hold a thread.
 *
 * The timers (the waiting alert and its escalation, a snooze's end, auto-resolve) are instants in
 * the state; the thread's one alarm is armed at the earliest (`dueAt`) and `tick` acts on what is
 * due, so they survive restarts: whatever an instance believed, the alarm re-reads the state.
 */
import {
  EMPTY_INBOX,
  type InboxAction,
  type InboxActionResult,
  type InboxEventKind,
  type InboxPolicy,
  InboxState,
  MAX_LABELS,
  RATING_MAX,
  RATING_MIN,
  RATING_WINDOW_MS,
  type WaitReason,
} from "../model/inbox";
import type { Mode } from "../../shared/kinds";
import { type BusinessHours, awayMessage, isOpen, nextOpening } from "../business-hours";
import { parseStored } from "../../platform/persistence/stored-json";
import type { ThreadDeps } from "./deps";
import { deleteMeta, getMeta, newestPersonLocale, setMeta } from "./store";
import { seedOf } from "./inbox-instants";

const META = "inbox";

/** An inbox event: what changed, on which route, by whom, with what it needs to be told. */
export interface InboxEvent {
  kind: InboxEventKind;
  at: number;
  route_name: string | null;
  by: string | null;
  /**
   * For `assigned`: the new assignee; for `waiting`: the reason; for `replied`: `waited_ms`, and
   * `first_response_ms` on the first reply since a human took the thread; for `resolved`: `auto`
   * (1 or 0) and `open_ms`, how long since a human took it (null when none had).
   */
  detail: Record<string, string | number | null>;
}

/**
 * `next` with the conversation's opening kept up: noted when a human takes it anew (it turns open
 * from pending or resolved, or for the first time), dropped when it resolves. A snooze that ends
 * keeps the opening it had: a snooze puts a conversation aside without closing it.
 */
export function withOpening(prev: InboxState, next: InboxState, now: number): InboxState {
  if (next.status === "resolved") return next.opened_at === null && next.first_reply_at === null ? next : { ...next, opened_at: null, first_reply_at: null };
  if (next.status !== "open" || prev.status === "open") return next;
  if (prev.status === "snoozed" && prev.opened_at !== null) return next;
  return { ...next, opened_at: now, first_reply_at: null };
}

/** How long since a human took the thread (null: none had). */
function openFor(s: InboxState, now: number): number | null {
  return s.opened_at === null ? null : now - s.opened_at;
}

/** A due alert the alarm must send (the state already records it as sent). */
export interface DueAlert {
  stage: "alerted" | "escalated";
  route_name: string | null;
  waiting_since: number;
}

export interface InboxParts {
  /**
   * The route's inbox policy with its business hours when it has some (an isolate cache over D1,
   * read only when a timer is set).
   */
  policy(routeName: string | null): Promise<InboxPolicy & { business_hours?: BusinessHours | null }>;
  /** The settings' default wait before the alert, in ms. */
  defaultSlaMs(): number;
  /** Told of every event (the metrics and the route's event callback follow from it). */
  emit(events: InboxEvent[]): void;
  /** Told of every stored change: the listing row carries the state, so it is pushed again. */
  changed(): void;
  /** What the inbox says to the customer itself (src/conversations/thread/inbox-messages.ts); absent: nothing. */
  messages?: InboxMessages;
  /** Told when the state is cleared (forget, the last record pruned): what was kept beside it goes too. */
  cleared?(): void;
}

/** The inbox's own messages to the customer, delivered like an operator's (docs/inbox.md). */
export interface InboxMessages {
  /** The holding message, to the thread's newest address on the route; false when nothing was sent (no address, no route). */
  holding(routeName: string, text: string): Promise<boolean>;
  /** The closing message (when `text` is set), then the satisfaction question when `ask`; answers whether the question went out. */
  closing(routeName: string, text: string | null, ask: boolean): Promise<boolean>;
}

/** A customer's message as the rating check reads it: its text and the id of the option it tapped. */
export interface InboundReply {
  text: string | null;
  reply_id: string | null;
}

/** The satisfaction question's options: one per point of the scale, its text the number, its id `rating-<n>`. */
export function ratingOptions(): Array<{ id: string; text: string }> {
  const out: Array<{ id: string; text: string }> = [];
  for (let n = RATING_MIN; n <= RATING_MAX; n++) out.push({ id: `rating-${n}`, text: String(n) });
  return out;
}

/** The rating a reply names (an option's text or id, tapped or typed), or null. */
export function ratingOf(reply: InboundReply): number | null {
  const said = [reply.reply_id, reply.text].map((v) => (v ?? "").trim().toLowerCase()).filter((v) => v !== "");
  for (const o of ratingOptions()) if (said.some((v) => v === o.id || v === o.text)) return Number(o.text);
  return null;
}

/**
 * `s` resolved at `now`, by an operator or its idle timer alike: the wait, the timers and the
 * handoff's holding message end; a new satisfaction question, if any, is asked after.
 */
function resolvedState(s: InboxState, now: number): InboxState {
  return {
    ...s,
    status: "resolved",
    resolved_at: now,
    snoozed_until: null,
    waiting_since: null,
    waiting_reason: null,
    sla_due_at: null,
    sla_stage: "none",
    auto_resolve_at: null,
    holding_sent_at: null,
    rating_asked_at: null,
  };
}

/** Whether the route opened between `since` (when it was closed) and `now`; a week with no hours never opens. */
function openedSince(hours: BusinessHours, since: number, now: number): boolean {
  const next = nextOpening(hours, new Date(since));
  return next !== null && next.getTime() <= now;
}

/** The policy's auto-resolve interval in ms (null: never). */
function autoResolveMs(policy: InboxPolicy): number | null {
  return policy.auto_resolve_after_seconds === null ? null : policy.auto_resolve_after_seconds * 1000;
}

export class ThreadInbox {
  /** The state as stored (undefined: not read by this instance yet). */
  private cached: InboxState | null | undefined = undefined;

  constructor(
    private readonly deps: Pick<ThreadDeps, "storage" | "clock">,
    private readonly parts: InboxParts,
  ) {}

  /** The stored state, or null when the thread never had one (it then reads as `pending`, unowned). */
  stored(): InboxState | null {
    if (this.cached === undefined) {
      const seed = seedOf(this.deps.storage, "inbox");
      const raw = seed !== undefined ? seed : getMeta(this.deps.storage, META);
      this.cached = raw === null ? null : parseStored(InboxState, raw, "thread meta inbox");
    }
    return this.cached;
  }

  /** The state in force (the empty state when none is stored). */
  state(): InboxState {
    return this.stored() ?? EMPTY_INBOX;
  }

  /**
   * Decides a change on the state as it stands once the route's policy is in hand. The policy read
   * is the only wait inside a change; reading the state after it (again when the policy it needs
   * changed meanwhile) keeps a change that landed during the wait from being overwritten.
   * `needs` names the route whose policy the decision reads, or false when it reads none.
   */
  private async withPolicy<T>(
    needs: (s: InboxState | null) => string | null | false,
    decide: (s: InboxState | null, policy: (InboxPolicy & { business_hours?: BusinessHours | null }) | null) => T,
  ): Promise<T> {
    let held: { route: string | null; policy: InboxPolicy & { business_hours?: BusinessHours | null } } | null = null;
    for (;;) {
      const s = this.stored();
      const route = needs(s);
      if (route === false) return decide(s, null);
      if (held !== null && held.route === route) return decide(s, held.policy);
      held = { route, policy: await this.parts.policy(route) };
    }
  }

  private save(proposed: InboxState): void {
    // Every change passes here, so the opening is kept up for all of them alike.
    const next = withOpening(this.state(), proposed, this.deps.clock.now());
    setMeta(this.deps.storage, META, JSON.stringify(next));
    this.cached = next;
    this.parts.changed();
  }

  /** This instance has read the state and there is none (only this object writes it). */
  knownEmpty(): boolean {
    return this.cached === null;
  }

  /** The alarm fired: the next look reads the stored state again (src/conversations/thread/inbox-instants.ts). */
  reload(): void {
    this.cached = undefined;
  }

  /** The earliest instant a timer of the state is due, or null. */
  dueAt(): number | null {
    const s = this.stored();
    if (!s) return null;
    const due = [s.sla_due_at, s.status === "snoozed" ? s.snoozed_until : null, s.auto_resolve_at].filter((t): t is number => t !== null);
    return due.length ? Math.min(...due) : null;
  }

  /**
   * The thread turned to `mode` (the agent's tool, an operator's mode door, a rule). To a human:
   * the thread opens and waits, in this same step; back to the agent: it is pending, nobody waits.
   * `locale`: the person's, for the away message (undefined: the newest one the thread's customer
   * messages carried, read only when an away message is written).
   */
  async modeChanged(mode: Mode, routeName: string | null, reason: WaitReason, by: string | null, locale?: string | null): Promise<void> {
    if (mode === "manual") {
      const handed = await this.withPolicy(
        (stored) => {
          const s = stored ?? EMPTY_INBOX;
          return s.status === "open" && s.waiting_since !== null ? false : (routeName ?? s.route_name);
        },
        (stored, policy) => {
          if (policy === null) return null;
          const now = this.deps.clock.now();
          const s = stored ?? EMPTY_INBOX;
          // Out of hours the away message, with the next opening, takes the holding message's place:
          // one message saying when a person is back, rather than a promise nobody is there to keep.
          const hours = policy.business_hours;
          const away =
            hours && !isOpen(hours, new Date(now))
              ? awayMessage(hours, new Date(now), locale !== undefined ? locale : newestPersonLocale(this.deps.storage, now))
              : null;
          const text = away ?? policy.holding_message;
          // Once per handoff: recorded before it is sent, so a repeated switch never sends it twice.
          const holding = text !== null && s.holding_sent_at === null && this.parts.messages !== undefined ? text : null;
          const next: InboxState = {
            ...s,
            status: "open",
            route_name: routeName ?? s.route_name,
            waiting_since: now,
            waiting_reason: reason,
            snoozed_until: null,
            resolved_at: null,
            sla_due_at: now + this.slaMs(policy),
            sla_stage: "none",
            auto_resolve_ms: autoResolveMs(policy),
            auto_resolve_at: this.autoResolveAt(policy, now),
            holding_sent_at: holding !== null ? now : s.holding_sent_at,
            away_noted_at: holding !== null && away !== null ? now : s.away_noted_at,
          };
          this.save(next);
          this.parts.emit([{ kind: "waiting", at: now, route_name: next.route_name, by, detail: { reason } }]);
          return { holding, route: next.route_name };
        },
      );
      // Not a human's answer: the wait and its clock stay as just set.
      if (handed !== null && handed.holding !== null && handed.route !== null) await this.parts.messages?.holding(handed.route, handed.holding);
      return;
    }
    // A thread the inbox never touched is already the agent's.
    const s = this.stored();
    if (!s) return;
    this.save({
      ...s,
      status: "pending",
      waiting_since: null,
      waiting_reason: null,
      sla_due_at: null,
      sla_stage: "none",
      route_name: routeName ?? s.route_name,
      // The next handoff is a new one: its holding message goes again.
      holding_sent_at: null,
    });
  }

  /**
   * A customer's message was accepted. A resolved or snoozed thread reopens; on a thread a human
   * owns (`manual`), the customer now waits, unless already waiting. Auto-resolve moves ahead.
   */
  async inbound(routeName: string, mode: Mode, reply?: InboundReply): Promise<"rated" | undefined> {
    // What the message starts, on a given state: the policy is read only when a timer starts; later
    // messages reuse the auto-resolve interval kept in the state.
    const starts = (stored: InboxState | null) => {
      const s = stored ?? EMPTY_INBOX;
      const reopening = s.status === "resolved" || s.status === "snoozed";
      return { s, reopening, startsWait: mode === "manual" && (reopening || s.waiting_since === null) };
    };
    const rates = (stored: InboxState | null) => stored !== null && reply !== undefined && this.answeredRating(stored, reply) !== null;
    return this.withPolicy(
      (stored) => {
        if (rates(stored)) return false;
        // A thread the inbox never touched, still with the agent, keeps no state and reads no policy:
        // the agent's own conversations pay nothing for the inbox.
        if (!stored && mode !== "manual") return false;
        const { reopening, startsWait } = starts(stored);
        return reopening || startsWait ? routeName : false;
      },
      (stored, policy) => {
        const now = this.deps.clock.now();
        // The answer to the satisfaction question: recorded, and the conversation stays resolved.
        if (stored && reply && this.rate(stored, routeName, reply, now)) return "rated" as const;
        if (!stored && mode !== "manual") return undefined;
        const { s, reopening, startsWait } = starts(stored);
        const events: InboxEvent[] = [];
        const autoMs = policy ? autoResolveMs(policy) : s.auto_resolve_ms;
        let next: InboxState = {
          ...s,
          route_name: routeName,
          last_inbound_at: now,
          auto_resolve_ms: autoMs,
          auto_resolve_at: autoMs === null ? null : now + autoMs,
        };
        if (reopening) {
          next = { ...next, status: mode === "manual" ? "open" : "pending", snoozed_until: null, resolved_at: null, rating_asked_at: null };
          events.push({ kind: "reopened", at: now, route_name: routeName, by: null, detail: { from: s.status } });
        }
        // Only a human can keep a customer waiting: while the agent owns the thread, it answers.
        if (mode === "manual" && next.status !== "open") next = { ...next, status: "open" };
        if (startsWait && policy) {
          const reason: WaitReason = reopening ? "reopened" : "customer_message";
          next = { ...next, waiting_since: now, waiting_reason: reason, sla_due_at: now + this.slaMs(policy), sla_stage: "none" };
          events.push({ kind: "waiting", at: now, route_name: routeName, by: null, detail: { reason } });
        }
        this.save(next);
        if (events.length) this.parts.emit(events);
        return undefined;
      },
    );
  }

  /**
   * The agent is about to answer a customer's message. On a route whose hours say `handoff_note`,
   * while it is closed, the customer is also told when a person is back: once per closed period
   * (not again until the route has opened since the last time they were told, by this note or by
   * a handoff's away message). The hours come with the turn's route read, so this reads nothing;
   * `locale` (the person's, when known) writes the next opening in their language.
   */
  async agentAnswering(routeName: string, hours: BusinessHours | null | undefined, locale: string | null): Promise<void> {
    if (!hours || hours.agent_out_of_hours !== "handoff_note" || this.parts.messages === undefined) return;
    const now = this.deps.clock.now();
    const text = awayMessage(hours, new Date(now), locale);
    if (text === null) return;
    const s = this.state();
    if (s.away_noted_at !== null && !openedSince(hours, s.away_noted_at, now)) return;
    // Recorded before it is sent, so a turn that runs again never sends it twice.
    this.save({ ...s, away_noted_at: now });
    await this.parts.messages.holding(routeName, text);
  }

  /** The rating `reply` gives when it answers an open satisfaction question on `s`, or null. */
  private answeredRating(s: InboxState, reply: InboundReply): number | null {
    if (s.status !== "resolved" || s.rating_asked_at === null || this.deps.clock.now() - s.rating_asked_at > RATING_WINDOW_MS) return null;
    return ratingOf(reply);
  }

  /** Records `reply` as the rating when it answers an open satisfaction question; false when it does not. */
  private rate(s: InboxState, routeName: string, reply: InboundReply, now: number): boolean {
    const rating = this.answeredRating(s, reply);
    if (rating === null) return false;
    this.save({ ...s, rating, rated_at: now, rating_asked_at: null, last_inbound_at: now });
    this.parts.emit([{ kind: "rated", at: now, route_name: routeName, by: null, detail: { rating } }]);
    return true;
  }

  /** May `by` send into this thread? Refused while another operator holds it, unless forced. */
  operatorMaySend(by: string, force: boolean): { ok: true } | { ok: false; assignee: string } {
    const s = this.state();
    if (s.assignee !== null && s.assignee !== by && !force) return { ok: false, assignee: s.assignee };
    return { ok: true };
  }

  /**
   * An operator's message was accepted: the customer has their answer. Synchronous, and called in the same step as `operatorMaySend` and the record's insert,
   * so a second sender sees the first one's claim.
   */
  operatorSent(by: string, routeName: string, forced: boolean): void {
    const now = this.deps.clock.now();
    const s = this.state();
    const events: InboxEvent[] = [];
    if (forced && s.assignee !== null && s.assignee !== by) {
      events.push({ kind: "forced_send", at: now, route_name: routeName, by, detail: { assignee: s.assignee } });
    }
    // A send does not claim the thread: operators claim explicitly (the console claims on take-over).
    // The first send since a human took the thread is its first response; later ones are not.
    let next: InboxState = { ...s, route_name: routeName, last_reply_at: now, first_reply_at: s.first_reply_at ?? now };
    if (s.waiting_since !== null) {
      const first = s.first_reply_at === null ? openFor(s, now) : null;
      const detail: InboxEvent["detail"] = { waited_ms: now - s.waiting_since };
      if (first !== null) detail.first_response_ms = first;
      events.push({ kind: "replied", at: now, route_name: routeName, by, detail });
    }
    // The idle count for auto-resolve starts again from the reply: the customer may still answer it.
    next = { ...next, auto_resolve_at: s.auto_resolve_ms === null ? null : now + s.auto_resolve_ms };
    // The status stays: a send alone does not hand the conversation to a human (the mode does).
    next = { ...next, waiting_since: null, waiting_reason: null, sla_due_at: null, sla_stage: "none" };
    this.save(next);
    if (events.length) this.parts.emit(events);
  }

  /** An operator's action, decided and written in one step (the compare-and-set). */
  async act(action: InboxAction): Promise<InboxActionResult> {
    const now = this.deps.clock.now();
    const s = this.state();
    const route = s.route_name;
    const event = (kind: InboxEventKind, detail: InboxEvent["detail"] = {}): InboxEvent => ({ kind, at: now, route_name: route, by: action.by, detail });
    switch (action.kind) {
      case "claim": {
        if (s.assignee === action.by) return { ok: true, state: s, changed: false };
        if (s.assignee !== null && !action.force) return { ok: false, reason: "claimed", assignee: s.assignee };
        const next = { ...s, assignee: action.by, assigned_at: now };
        this.save(next);
        this.parts.emit([event("assigned", { assignee: action.by, previous: s.assignee })]);
        return { ok: true, state: next, changed: true };
      }
      case "release": {
        if (s.assignee === null) return { ok: true, state: s, changed: false };
        if (s.assignee !== action.by && !action.force) return { ok: false, reason: "not_assignee", assignee: s.assignee };
        const next = { ...s, assignee: null, assigned_at: null };
        this.save(next);
        this.parts.emit([event("released", { previous: s.assignee })]);
        return { ok: true, state: next, changed: true };
      }
      case "transfer": {
        if (s.assignee !== null && s.assignee !== action.by && !action.force) return { ok: false, reason: "not_assignee", assignee: s.assignee };
        if (s.assignee === action.to) return { ok: true, state: s, changed: false };
        const next = { ...s, assignee: action.to, assigned_at: now };
        this.save(next);
        this.parts.emit([event("assigned", { assignee: action.to, previous: s.assignee })]);
        return { ok: true, state: next, changed: true };
      }
      case "resolve": {
        if (s.status === "resolved") return { ok: true, state: s, changed: false };
        const next = resolvedState(s, now);
        this.save(next);
        this.parts.emit([event("resolved", { auto: 0, open_ms: openFor(s, now) })]);
        if (!action.notify || !this.parts.messages || route === null) return { ok: true, state: next, changed: true };
        const policy = await this.parts.policy(route);
        const asked = await this.parts.messages.closing(route, policy.closing_message, policy.ask_rating);
        if (!asked) return { ok: true, state: next, changed: true };
        // The window for the answer starts with the question; an earlier rating is kept until a new one comes.
        const cur = this.state();
        if (cur.status !== "resolved") return { ok: true, state: cur, changed: true };
        const rated: InboxState = { ...cur, rating_asked_at: this.deps.clock.now() };
        this.save(rated);
        return { ok: true, state: rated, changed: true };
      }
      case "snooze": {
        if (action.until <= now) return { ok: false, reason: "snooze_in_past" };
        const next: InboxState = {
          ...s,
          status: "snoozed",
          snoozed_until: action.until,
          waiting_since: null,
          waiting_reason: null,
          sla_due_at: null,
          sla_stage: "none",
          auto_resolve_at: null,
        };
        this.save(next);
        this.parts.emit([event("snoozed", { until: new Date(action.until).toISOString() })]);
        return { ok: true, state: next, changed: true };
      }
      case "reopen":
        return this.withPolicy(
          (stored) => {
            const c = stored ?? EMPTY_INBOX;
            return c.status === "resolved" || c.status === "snoozed" ? c.route_name : false;
          },
          (stored, policy): InboxActionResult => {
            const c = stored ?? EMPTY_INBOX;
            if (policy === null) return { ok: true, state: c, changed: false };
            const at = this.deps.clock.now();
            const next: InboxState = {
              ...c,
              status: "open",
              resolved_at: null,
              snoozed_until: null,
              waiting_since: at,
              waiting_reason: "reopened",
              sla_due_at: at + this.slaMs(policy),
              sla_stage: "none",
              auto_resolve_ms: autoResolveMs(policy),
              auto_resolve_at: this.autoResolveAt(policy, at),
            };
            this.save(next);
            this.parts.emit([{ kind: "reopened", at, route_name: c.route_name, by: action.by, detail: { from: c.status } }]);
            return { ok: true, state: next, changed: true };
          },
        );
      case "labels": {
        const labels = [...new Set([...s.labels.filter((l) => !action.remove.includes(l)), ...action.add])].sort();
        if (labels.length > MAX_LABELS) return { ok: false, reason: "too_many_labels" };
        const changed = labels.join(",") !== s.labels.join(",");
        if (!changed) return { ok: true, state: s, changed: false };
        const next = { ...s, labels };
        this.save(next);
        const added = labels.filter((l) => !s.labels.includes(l));
        if (added.length) this.parts.emit(added.map((label) => event("labelled", { label })));
        return { ok: true, state: next, changed: true };
      }
    }
  }

  /**
   * The alarm's pass: a snooze that ended opens the thread and it waits again; an idle thread past
   * its auto-resolve resolves; a wait past its alert is alerted, then escalated once. Each is
   * recorded before the alert is returned for sending, so a restart never repeats one.
   */
  async tick(): Promise<DueAlert[]> {
    const snoozeEnded = (s: InboxState, now: number) => s.status === "snoozed" && s.snoozed_until !== null && s.snoozed_until <= now;
    const waitDue = (s: InboxState, now: number) => s.sla_due_at !== null && s.sla_due_at <= now && s.waiting_since !== null;
    return this.withPolicy(
      (s) => {
        const now = this.deps.clock.now();
        return s !== null && (snoozeEnded(s, now) || waitDue(s, now)) ? s.route_name : false;
      },
      (s, policy) => {
        const now = this.deps.clock.now();
        if (!s) return [];
        let next = s;
        const events: InboxEvent[] = [];
        const alerts: DueAlert[] = [];
        const route = s.route_name;
        if (policy && snoozeEnded(next, now)) {
          next = {
            ...next,
            status: "open",
            snoozed_until: null,
            waiting_since: now,
            waiting_reason: "snooze_ended",
            sla_due_at: now + this.slaMs(policy),
            sla_stage: "none",
            auto_resolve_ms: autoResolveMs(policy),
            auto_resolve_at: this.autoResolveAt(policy, now),
          };
          events.push({ kind: "reopened", at: now, route_name: route, by: null, detail: { from: "snoozed" } });
          events.push({ kind: "waiting", at: now, route_name: route, by: null, detail: { reason: "snooze_ended" } });
        }
        // A customer waiting for a human is never resolved away: auto-resolve waits until someone answered.
        if (
          next.auto_resolve_at !== null &&
          next.auto_resolve_at <= now &&
          next.waiting_since === null &&
          (next.status === "open" || next.status === "pending")
        ) {
          const openMs = openFor(next, now);
          next = resolvedState(next, now);
          events.push({ kind: "resolved", at: now, route_name: route, by: null, detail: { auto: 1, open_ms: openMs } });
        }
        if (policy && waitDue(next, now)) {
          if (next.sla_stage === "none") {
            const escalateMs = policy.escalate_after_seconds === null ? null : policy.escalate_after_seconds * 1000;
            next = { ...next, sla_stage: "alerted", sla_due_at: escalateMs === null ? null : now + escalateMs };
            alerts.push({ stage: "alerted", route_name: route, waiting_since: next.waiting_since as number });
            events.push({ kind: "alerted", at: now, route_name: route, by: null, detail: { waited_ms: now - (next.waiting_since as number) } });
          } else if (next.sla_stage === "alerted") {
            next = { ...next, sla_stage: "escalated", sla_due_at: null };
            alerts.push({ stage: "escalated", route_name: route, waiting_since: next.waiting_since as number });
            events.push({ kind: "escalated", at: now, route_name: route, by: null, detail: { waited_ms: now - (next.waiting_since as number) } });
          } else {
            next = { ...next, sla_due_at: null };
          }
        }
        if (next !== s) this.save(next);
        if (events.length) this.parts.emit(events);
        return alerts;
      },
    );
  }

  /** Another inbox part's events (a private note written): told like the state's own. */
  emit(events: InboxEvent[]): void {
    if (events.length) this.parts.emit(events);
  }

  /** Forget: the state goes with the records. */
  clear(): void {
    deleteMeta(this.deps.storage, META);
    this.cached = null;
    this.parts.cleared?.();
  }

  private slaMs(policy: InboxPolicy): number {
    return policy.sla_seconds === null ? this.parts.defaultSlaMs() : policy.sla_seconds * 1000;
  }

  private autoResolveAt(policy: InboxPolicy, now: number): number | null {
    const ms = autoResolveMs(policy);
    return ms === null ? null : now + ms;
  }
}

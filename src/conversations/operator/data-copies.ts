/**
 * Every place the service copies a message, an answer or an address (docs/security.md "Every copy
 * of a conversation"), and how each of the three ends of a conversation reaches it:
 *
 * - **forget**: an operator forgets a thread (`DELETE /api/conversations/{route_name}/thread`,
 *   src/conversations/operator/threads.ts `forgetThread`);
 * - **erase**: an operator erases a linked person (`DELETE /api/conversations/persons/{person_id}`,
 *   `erasePerson`), which forgets the person's thread and removes the person everywhere;
 * - **retention**: the stored copy's own expiry runs out (the setting named), after which reads
 *   treat it as gone and a prune pass deletes it.
 *
 * The list is data: the generated data-lifetime suite (test/hardening/data-lifetime.test.ts) writes
 * through each copy with the real doors, applies each end, and reads every door and stream that
 * exposed the copy. It fails when a copy listed here has no fixture there, so a copy added here is
 * covered the moment it exists. A copy that holds nothing of a conversation is listed too, with
 * `holds: "nothing"`, so the claim is checked rather than assumed.
 */

/** How one end of a conversation reaches a copy. */
export interface CopyReach {
  /**
   * `deletes`: the end removes the copy (or the part of it that belongs to the conversation).
   * `expires`: the copy carries its own expiry; reads treat it as gone once past, a prune deletes it.
   * `ends`: the copy is not stored (in transit only) and nothing is sent once the conversation ends.
   * `none`: the end leaves the copy, for the reason given (it is not part of what the end removes).
   */
  kind: "deletes" | "expires" | "ends" | "none";
  /** What does it, in words (the docs table reads this). */
  how: string;
  /** The settings that bound it, for `expires`. */
  settings?: readonly string[];
}

/** One copy of (part of) a conversation. */
export interface DataCopy {
  /** A stable name: the suite's fixture key. */
  name: string;
  /** Where it lives: the object or table, and the module that writes it. */
  where: string;
  /** What of the conversation it holds: message text, answers, addresses, or `nothing`. */
  holds: string;
  /** The doors and streams that read it back. */
  readBy: string;
  forget: CopyReach;
  erase: CopyReach;
  retention: CopyReach;
}

const RETENTION = ["CONVERSATIONS_ANSWER_RETENTION_TTL_SECONDS"] as const;

/** Every copy. Order is the docs table's. */
export const DATA_COPIES: readonly DataCopy[] = [
  {
    name: "thread-records",
    where: "ThreadObject `records` and the answers' ratings beside them, `answer_feedback` (src/conversations/thread/store.ts)",
    holds:
      "each message's text or form, its answer and rich part, the customer's rating of the answer, the client address, the caller's principal, a web visitor's profile (pre-chat answers, the site's vouched name and email)",
    readBy: "record read, thread transcript and search doors; the turn payloads of later turns",
    forget: { kind: "deletes", how: "`deleteAllRecords` in the thread's forget (refused while a turn is queued or running)" },
    erase: { kind: "deletes", how: "erase forgets the person's thread" },
    retention: { kind: "expires", how: "`expires_at` from the terminal transition; reads treat it as gone; the alarm prunes it", settings: RETENTION },
  },
  {
    name: "thread-inbox",
    where: "ThreadObject meta `inbox` (src/conversations/thread/inbox.ts)",
    holds: "the thread's inbox status, assignee, labels and when its customer waited, wrote and was answered",
    readBy: "the thread inbox door (`GET …/thread/inbox`); the listing's inbox columns",
    forget: { kind: "deletes", how: "cleared in the thread's forget, with the records" },
    erase: { kind: "deletes", how: "erase forgets the person's thread" },
    retention: { kind: "expires", how: "cleared when the alarm prunes the thread's last record", settings: RETENTION },
  },
  {
    name: "inbox-events",
    where: "ThreadObject `inbox_events` (src/conversations/thread/inbox-events.ts); the route policy's `events_url` receiver",
    holds: "each inbox event not yet POSTed: its kind, route, thread id (it carries the client address), who acted, its detail; no message or note text",
    readBy: "the route's events receiver (one signed POST each); no door",
    forget: { kind: "deletes", how: "cleared with the inbox state in the thread's forget; an event already POSTed is the receiver's" },
    erase: { kind: "deletes", how: "erase forgets the person's thread" },
    retention: {
      kind: "expires",
      how: "cleared with the inbox state when the alarm prunes the thread's last record; a queued event is also dropped once POSTed or after `CONVERSATIONS_DELIVERY_MAX_ATTEMPTS`",
      settings: [...RETENTION, "CONVERSATIONS_DELIVERY_MAX_ATTEMPTS"],
    },
  },
  {
    name: "thread-notes",
    where: "ThreadObject `notes` (src/conversations/thread/notes.ts)",
    holds: "operators' private notes on the conversation: their text and author",
    readBy:
      "the thread notes door (`GET …/thread/notes`), the transcript door with `include_notes=true`; the agent's memory when the route's inbox policy opts in (the `agent-memory` copy)",
    forget: { kind: "deletes", how: "cleared in the thread's forget, with the records" },
    erase: { kind: "deletes", how: "erase forgets the person's thread" },
    retention: {
      kind: "expires",
      how: "each note's `expires_at`, a retention window from its write; reads treat it as gone; the alarm prunes it, and clears every note when it prunes the thread's last record",
      settings: RETENTION,
    },
  },
  {
    name: "web-transcript",
    where:
      "ThreadObject `web_transcript` and `web_ratings` in the visitor's own thread on the route (src/conversations/thread/web-visitor.ts), also for a linked person's records",
    holds:
      "the visitor's words and forms, the answers and operator messages shown on the page with the visitor's ratings of them, notifications to the visitor",
    readBy: "the web stream door's replay and live pushes",
    forget: {
      kind: "deletes",
      how: "the visitor's own thread: its whole transcript and session; a linked person's thread: the entries of its records in each visitor's thread (`webForget`), whose session ends (open pages get `ended`)",
    },
    erase: { kind: "deletes", how: "each web address of the person: its session and transcript (`webEnd`); then the person's thread is forgotten as above" },
    retention: {
      kind: "expires",
      how: "each entry carries `expires_at`: a retention window from its write, moved to its record's own expiry at the record's terminal transition (`webExpire` across objects); reads treat it as gone; the alarm prunes it; a notification entry expires a retention window after it was shown",
      settings: RETENTION,
    },
  },
  {
    name: "web-attachments",
    where:
      "the WEB_ATTACHMENTS bucket (R2) under `web/<id>`, and ThreadObject `web_attachments` in the visitor's own thread on the route (src/conversations/thread/web-attachments.ts), also for a linked person's records",
    holds: "the files and images a web visitor uploaded, with their names and types",
    readBy:
      "`GET /api/channels/web/attachments/{id}` (the visitor's session), `GET /api/conversations/{route_name}/attachments/{id}` (the route's readers, resolving a turn's `web-attachment:` reference)",
    forget: {
      kind: "deletes",
      how: "the visitor's own thread: every upload; a linked person's thread: the uploads its records carried, in each visitor's thread (`webForget`), and the ended session's unsent ones. The rows read as gone at once; the objects are deleted from the bucket next (a failed delete is retried by the alarm)",
    },
    erase: { kind: "deletes", how: "each web address's own thread is forgotten as above; then the person's thread" },
    retention: {
      kind: "expires",
      how: "an upload a message carried expires with that record's transcript entry (`webExpire` across objects); one never sent an hour after it was made; a session's end takes the unsent ones; the alarm deletes the object, then the row",
      settings: RETENTION,
    },
  },
  {
    name: "web-session",
    where: "ThreadObject `web_session`, `web_ticket`, `web_profile` (src/conversations/thread/web-visitor.ts)",
    holds:
      "the link parameters each session (one per device of a signed-in user) was opened with; the visitor's profile (pre-chat answers, the site's vouched name and email); the visitor's address is the thread's id",
    readBy: "the web doors (turn payloads carry the params and the profile)",
    forget: {
      kind: "deletes",
      how: "ended with the transcript (the visitor's own thread, or each visitor of a forgotten linked person); the profile ends with the last session",
    },
    erase: { kind: "deletes", how: "ended for each web address of the person" },
    retention: {
      kind: "expires",
      how: "the session's own expiry (pending sessions a short one), which ends the profile with the last session; a ticket's lifetime",
      settings: ["CHANNEL_WEB_SESSION_TTL_SECONDS"],
    },
  },
  {
    name: "live-turn",
    where: "ThreadObject memory: the running turn's draft (src/conversations/thread/live-turn.ts), pushed to the visitor's open pages",
    holds: "the answer's text a running turn has written so far; in memory only, never stored",
    readBy: "the web stream's `draft` frames; `GET /api/conversations/{route_name}/thread/live`",
    forget: { kind: "ends", how: "forget is refused while a turn is queued or running; a settled turn holds no draft" },
    erase: { kind: "ends", how: "as forget" },
    retention: { kind: "ends", how: "the draft goes when its turn settles (its text is then the record's answer); nothing is stored" },
  },
  {
    name: "turn-traces",
    where: "ThreadObject `run_traces`; D1 `runs` summary rows; IndexShard run log (src/observability/runs/)",
    holds: "each turn's input, steps and output (trace); the summary row: route, thread id, user id, no text",
    readBy: "`GET /api/observability/runs`, `…/runs/{trace_id}/trace` and its export",
    forget: { kind: "deletes", how: "the traces go with the records; `dropThreadRuns` deletes the summary rows" },
    erase: { kind: "deletes", how: "the person's thread as forget, and every trace attributed to the person (`eraseUserRuns`)" },
    retention: {
      kind: "expires",
      how: "a turn's trace goes with its record; the summary row with the pruned record (the outbox's `runsDropped`) and `RUNS_TRACE_RETENTION_SECONDS`",
      settings: [...RETENTION, "RUNS_TRACE_RETENTION_SECONDS"],
    },
  },
  {
    name: "listing",
    where: "ThreadObject `index_outbox`; IndexShard listing buffer; D1 `threads`, `failed_records`, `thread_loads` (src/shards/, src/shards/listing-table.ts)",
    holds: "the thread id (it carries the client address), the client address, status and counts; no text",
    readBy: "`GET /api/conversations/{route_name}/threads`, the failed listing, metrics",
    forget: { kind: "deletes", how: "the outbox is cleared; every shard drops its buffered rows; `dropThreadListing`" },
    erase: { kind: "deletes", how: "the person's thread as forget" },
    retention: {
      kind: "expires",
      how: "the thread's row goes when its last record is pruned (a null row in the push); failed rows carry `expires_at` (cron prune)",
      settings: RETENTION,
    },
  },
  {
    name: "message-directory",
    where: "IndexShard ledgers: message directory, inbound dedupe keys, outbound provider ids (src/shards/ledger.ts)",
    holds: "message ids with their thread id (which carries the client address)",
    readBy: "the record read door (finds the thread of a message id), provider receipts",
    forget: { kind: "deletes", how: "every shard's `forgetThread`" },
    erase: { kind: "deletes", how: "the person's thread as forget" },
    retention: {
      kind: "expires",
      how: "a pruned record's directory entry goes with it (the outbox's `dropped`); an outbound id expires a receipt grace plus a retention window after its send; a dedupe claim after the dedupe window, which can outlast a shorter answer retention",
      settings: [...RETENTION, "CONVERSATIONS_DELIVERY_GRACE_SECONDS", "CONVERSATIONS_INBOUND_DEDUPE_TTL_SECONDS"],
    },
  },
  {
    name: "agent-memory",
    where: "the checkpoint provider: kv in the ThreadObject's memory tables, or D1 `checkpoint_threads`/`checkpoint_messages`",
    holds: "the agent's view of the conversation: every message and answer",
    readBy: "later turns of the thread (the agent's context)",
    forget: { kind: "deletes", how: "`deleteCheckpoint` in the object; other providers are told by the forget door" },
    erase: { kind: "deletes", how: "the person's thread as forget" },
    retention: { kind: "expires", how: "the checkpoint's own expiry", settings: ["LLM_PROVIDER_CHECKPOINT_TTL_MINUTES"] },
  },
  {
    name: "interactions",
    where: "Interaction objects, D1 `interactions`, the InteractionHub's events, media in R2 (src/interactions/)",
    holds: "the question a turn asked, the participant's answer and media",
    readBy: "`GET /api/interactions`, `…/pending`, `…/stream`, `…/media/{media_id}`, ticket pages",
    forget: { kind: "deletes", how: "`eraseThreadInteractions`: the ones the thread parks on and every one listed for it" },
    erase: { kind: "deletes", how: "the person's thread as forget" },
    retention: { kind: "expires", how: "an ended interaction is purged with its media", settings: ["INTERACTIONS_RETENTION_SECONDS"] },
  },
  {
    name: "states",
    where: "StateStore objects: records whose subject is a thread or a person, their audit rows and fold aliases (src/states/)",
    holds: "whatever a turn's state binding (or a writer) stored about the thread or the person",
    readBy: "the state record, search and subject doors; later turns' bindings",
    forget: { kind: "deletes", how: "`eraseStateSubjects(thread)` in every declared state" },
    erase: { kind: "deletes", how: "`eraseStateSubjects(person)`, and each forgotten thread's" },
    retention: { kind: "expires", how: "the state's `retention_days` (reads treat an expired record as absent; the prune door and the cron sweep it)" },
  },
  {
    name: "notification-feed",
    where: "NotificationFeed rings: `shared` and `identity:<user_id>` (src/notifications/feed-ring.ts)",
    holds: "each recorded notification: its text and its recipient (a visitor id, a phone number, a chat id)",
    readBy: "`GET /api/notifications`",
    forget: {
      kind: "none",
      how: "a notification is the sender's message, not one of the thread's: its page copy goes with the visitor's transcript, its feed record stays",
    },
    erase: { kind: "deletes", how: "every entry sent to one of the person's addresses, in the shared feed and each identity feed it names" },
    retention: {
      kind: "none",
      how: "the feed's own bounds: the newest `NOTIFICATIONS_FEED_MAX` entries; an identity feed is deleted after `NOTIFICATIONS_IDENTITY_FEED_TTL_SECONDS` idle",
      settings: ["NOTIFICATIONS_FEED_MAX", "NOTIFICATIONS_IDENTITY_FEED_TTL_SECONDS"],
    },
  },
  {
    name: "tool-runs",
    where: "ToolRun objects and D1 `tool_runs` (src/tool-runs/)",
    holds: "nothing of a conversation: the kwargs its own caller sent (a turn's tool calls are not tool runs)",
    readBy: "`GET /api/tool-runs`, `GET /api/tool-runs/{run_id}`",
    forget: { kind: "none", how: "holds nothing of a conversation (checked)" },
    erase: { kind: "none", how: "holds nothing of a conversation (checked)" },
    retention: {
      kind: "none",
      how: "holds nothing of a conversation (checked); a run is deleted after `TOOL_RUNS_RETENTION_SECONDS`",
      settings: ["TOOL_RUNS_RETENTION_SECONDS"],
    },
  },
  {
    name: "person-directory",
    where: "PersonDirectory objects: persons (with their profile), their addresses, pairing codes (src/persons/)",
    holds:
      "every address a person was seen at (phone numbers, chat ids, web visitor ids); the person's profile (a web visitor's pre-chat answers, the site's vouched name and email)",
    readBy: "`GET /api/conversations/persons/{person_id}`; every person turn's payload",
    forget: {
      kind: "none",
      how: "a thread forget removes what was said, not who the person is: the link and the profile stay until the person is erased or unlinks",
    },
    erase: { kind: "deletes", how: "`directory.erase`, last, in one transaction" },
    retention: {
      kind: "none",
      how: "a person lives until erased or unlinked; a pairing code expires after a fixed `CODE_TTL_SECONDS`",
    },
  },
  {
    name: "console-notices",
    where: "ConsoleHub sockets (src/console/notices.ts, src/shards/console-announce.ts)",
    holds: "route, thread id (it carries the client address), status, a turn's message id and state; in transit only, the hub stores tickets",
    readBy: "the console's live socket",
    forget: { kind: "ends", how: "a forget pushes no row and runs no turn, so nothing is announced; nothing is stored to replay" },
    erase: { kind: "ends", how: "as forget" },
    retention: { kind: "ends", how: "a pruned thread pushes a null row, which announces nothing" },
  },
  {
    name: "backups",
    where: "the backup export (src/backup/)",
    holds: "nothing of a conversation: routes, configs, keys and settings only",
    readBy: "`POST /api/backup/export`",
    forget: { kind: "none", how: "holds nothing of a conversation (checked)" },
    erase: { kind: "none", how: "holds nothing of a conversation (checked)" },
    retention: { kind: "none", how: "holds nothing of a conversation (checked); an exported file is the operator's" },
  },
];

/** The copy named `name` (the suite and the docs look copies up by name). */
export function dataCopy(name: string): DataCopy | undefined {
  return DATA_COPIES.find((c) => c.name === name);
}

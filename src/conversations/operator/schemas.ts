/**
 * Zod schemas of the operator doors (spec §4.4–§4.7, §4.9 shapes; decisions §6, §9, §10).
 * Rich-field contract rules are checked here, so a contract-invalid send is a 400 before anything
 * is written; whether a channel can carry the part is decided at delivery (see channels/rich).
 */
import { z } from "zod";
import { InboxStatus, Label } from "../model/inbox";
import { AnswerRecordView, DELIVERY_STATUSES } from "../model/record";
import { NoteView } from "../model/notes";
import { waitSecondsSchema } from "../model/schemas";
import { Mode } from "../../shared/kinds";
import { MAX_OPTION_ROWS, RichPart } from "../../channels/rich/types";
import { jsonObjectSchema } from "../../platform/http/bounded-json";
import { identifierSchema, intactIdentifier, nonBlankText } from "../../platform/http/identifiers";
import { pageSchema, pagingQuery } from "../../platform/http/paging";

export const MAX_OPERATOR_TEXT = 100_000;

/** A thread id as a door receives it (blank and off-route ids are the thread guard's 400s). */
export const threadIdField = intactIdentifier(z.string().max(2048));

/** Operator send body (spec §4.7 plus location, sections, header, footer; decisions §10): the text and a rich part, with the rules across the part's fields. */
export const operatorSendBody = z
  .object({
    thread_id: threadIdField,
    text: z.string().max(MAX_OPERATOR_TEXT),
    address: identifierSchema(512).optional(),
    /** Send although another operator holds the thread (docs/inbox.md); the send is recorded as forced. */
    force: z.boolean().optional(),
    // The rich fields: each field's rules are the part's own (channels/rich/types.ts).
    ...RichPart.shape,
  })
  .strict()
  .superRefine((b, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
    const has = (k: "media" | "location" | "options" | "sections" | "header" | "footer" | "schema") => b[k] !== undefined;
    if (b.template) {
      for (const k of ["media", "location", "options", "sections", "header", "footer", "schema"] as const)
        if (has(k)) issue(k, "cannot be combined with template");
    }
    if (b.schema) {
      if (b.options) issue("options", "cannot be combined with schema");
      if (b.sections) issue("sections", "cannot be combined with schema");
      if (b.location) issue("location", "cannot be combined with schema");
    }
    if (b.options && b.sections) issue("sections", "cannot be combined with options (options XOR sections)");
    if ((b.header || b.footer) && !b.options && !b.sections) issue(b.header ? "header" : "footer", "needs options or sections");
    if (b.sections) {
      const rows = b.sections.reduce((n, s) => n + s.rows.length, 0);
      if (rows > MAX_OPTION_ROWS) issue("sections", `may hold at most ${MAX_OPTION_ROWS} rows in all`);
    }
    // The text is the message; only media, a location or a template can carry a send without it.
    if (b.text.trim() === "" && !b.media && !b.location && !b.template)
      issue("text", "must not be blank unless media, location or template carries the message");
  });
export type OperatorSendBody = z.infer<typeof operatorSendBody>;

export const threadIdQuery = z.object({ thread_id: threadIdField });

export const threadsQuery = pagingQuery.extend({
  status: z.enum(DELIVERY_STATUSES).optional(),
  address: identifierSchema(512).optional(),
  /** The inbox's filters (docs/inbox.md): the thread's inbox status, its assignee, a label, waiting for a human. */
  inbox_status: InboxStatus.optional(),
  assignee: identifierSchema(256).optional(),
  label: Label.optional(),
  waiting: z.enum(["true", "false"]).optional(),
  /** `down`: only threads with an answer their customer rated down (docs/inbox.md, "Answer feedback"). */
  rated: z.enum(["down"]).optional(),
});

export const searchQuery = pagingQuery.extend({ q: nonBlankText(1000) });

export const transcriptQuery = pagingQuery.extend({
  thread_id: threadIdField,
  order: z.enum(["asc", "desc"]).default("asc"),
  q: z.string().max(1000).optional(),
  /** `true`: the thread's private notes ride along in `notes` (docs/inbox.md, "Private notes"). */
  include_notes: z.enum(["true", "false"], { error: 'must be "true" or "false"' }).optional(),
});

export const modeBody = z.object({ thread_id: threadIdField, mode: Mode }).strict();

export const eventBody = z
  .object({
    address: intactIdentifier(z.string().max(512)).optional(),
    thread_id: threadIdField.optional(),
    event: z
      .object({
        event_id: intactIdentifier(z.string().trim().min(1, { message: "must not be blank" }).max(256, { message: "must be at most 256 characters" })),
        kind: z.string().regex(/^[A-Za-z0-9_.:-]{1,128}$/, { message: "must match ^[A-Za-z0-9_.:-]{1,128}$" }),
        payload: jsonObjectSchema,
      })
      .strict(),
    wait_seconds: waitSecondsSchema.optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    const address = b.address !== undefined && b.address.trim() !== "";
    const thread = b.thread_id !== undefined && b.thread_id.trim() !== "";
    if (b.address !== undefined && !address) ctx.addIssue({ code: "custom", path: ["address"], message: "must not be blank" });
    if (b.thread_id !== undefined && !thread) ctx.addIssue({ code: "custom", path: ["thread_id"], message: "must not be blank" });
    if (b.address !== undefined && b.thread_id !== undefined)
      ctx.addIssue({ code: "custom", path: ["address"], message: "give exactly one of address or thread_id" });
    if (b.address === undefined && b.thread_id === undefined)
      ctx.addIssue({ code: "custom", path: ["thread_id"], message: "give exactly one of address or thread_id" });
  });
export type EventBody = z.infer<typeof eventBody>;

// ───────────── answers (for the OpenAPI document) ─────────────

export const threadItem = z.object({
  thread_id: z.string(),
  client_address: z.string().nullable(),
  last_activity_at: z.string(),
  message_count: z.number().int(),
  last_status: z.string(),
  /** How many of the thread's answers their customer rated down (docs/inbox.md, "Answer feedback"). */
  rated_down: z.number().int(),
});
export const threadsPage = pageSchema(threadItem);
export const recordsPage = pageSchema(AnswerRecordView);
export const transcriptPage = pageSchema(AnswerRecordView).extend({
  order: z.enum(["asc", "desc"]),
  /** Only with `include_notes=true`: the thread's live private notes, oldest first, whatever the page. */
  notes: z.array(NoteView).optional(),
});
export const forgetAnswer = z.object({ removed: z.number().int(), route_name: z.string(), thread_id: z.string() });
export const modeAnswer = z.object({ mode: Mode, source: z.enum(["thread", "route"]) });
export const modeSetAnswer = z.object({ route_name: z.string(), thread_id: z.string(), mode: Mode, source: z.literal("thread") });
export const sentAnswer = z.object({ message_id: z.string(), thread_id: z.string() });

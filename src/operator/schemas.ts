/**
 * Zod schemas of the operator doors (spec §4.4–§4.7, §4.9 shapes; decisions §6, §9, §10).
 * Rich-field contract rules are checked here, so a contract-invalid send is a 400 before anything
 * is written; whether a channel can carry the part is decided at delivery (see channels/rich).
 */
import { z } from "zod";
import { DELIVERY_STATUSES } from "../bridge/record";
import { attachmentSchema, jsonObjectSchema, locationSchema, recordSchema, waitSecondsSchema } from "../bridge/schemas";
import { MAX_ATTACHMENTS, MAX_URL } from "../bridge/transport-bounds";
import { identifierSchema, intactIdentifier } from "../http/identifiers";
import { pageSchema, pagingQuery } from "../http/paging";

/** Rows of options across all sections (the spec leaves the cap open; WhatsApp lists hold 10). */
export const MAX_OPTION_ROWS = 10;
export const MAX_OPTION_TEXT = 256;
export const MAX_OPTION_DESCRIPTION = 512;
export const MAX_OPTION_ID = 256;
export const MAX_FOOTER = 256;
export const MAX_TEMPLATE_PARAMETERS = 32;
export const MAX_TEMPLATE_PARAMETER = 1024;
export const MAX_TEMPLATE_BUTTONS = 10;
export const MAX_OPERATOR_TEXT = 100_000;

const nonBlank = (max: number) => z.string().trim().min(1, { message: "must not be blank" }).max(max);

/** A thread id as a door receives it (blank and off-route ids are the thread guard's 400s). */
const threadIdField = intactIdentifier(z.string().max(2048));

function isWebUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === "https:" || u.protocol === "http:") && u.hostname.length > 0;
  } catch {
    return false;
  }
}

/** A typed option: `reply` (submits its text) or `link` (opens its url). A bare string is refused. */
export const optionSchema = z
  .object({
    text: nonBlank(MAX_OPTION_TEXT),
    description: nonBlank(MAX_OPTION_DESCRIPTION).optional(),
    id: identifierSchema(MAX_OPTION_ID).optional(),
    kind: z.enum(["reply", "link"]),
    url: z.string().max(MAX_URL).optional(),
  })
  .strict()
  .superRefine((o, ctx) => {
    if (o.kind === "link" && (!o.url || !isWebUrl(o.url))) ctx.addIssue({ code: "custom", path: ["url"], message: "a link option needs an absolute http(s) url" });
    if (o.kind === "reply" && o.url !== undefined) ctx.addIssue({ code: "custom", path: ["url"], message: "is only for link options" });
  });

export const sectionSchema = z
  .object({
    title: nonBlank(MAX_OPTION_TEXT),
    rows: z.array(optionSchema).min(1, { message: "must not be empty" }),
  })
  .strict();

export const templateSchema = z
  .object({
    name: identifierSchema(512),
    language: identifierSchema(32),
    body_parameters: z.array(z.string().max(MAX_TEMPLATE_PARAMETER)).min(1, { message: "must not be empty" }).max(MAX_TEMPLATE_PARAMETERS).optional(),
    buttons: z
      .array(z.object({ payload: nonBlank(256), kind: z.literal("quick_reply") }).strict())
      .min(1, { message: "must not be empty" })
      .max(MAX_TEMPLATE_BUTTONS)
      .optional(),
    header_media: attachmentSchema.optional(),
  })
  .strict();

/** `{}` is contract-invalid ("empty dict"), the rest is transport-bounded like a form. */
const formSchema = jsonObjectSchema.refine((o) => Object.keys(o).length > 0, { message: "must not be empty" });

/** Operator send body (spec §4.7 plus location, sections, header, footer; decisions §10). */
export const operatorSendBody = z
  .object({
    thread_id: threadIdField,
    text: z.string().max(MAX_OPERATOR_TEXT),
    address: identifierSchema(512).optional(),
    media: z.array(attachmentSchema).min(1, { message: "must not be empty" }).max(MAX_ATTACHMENTS).optional(),
    location: locationSchema.optional(),
    template: templateSchema.optional(),
    options: z.array(optionSchema).min(1, { message: "must not be empty" }).max(MAX_OPTION_ROWS).optional(),
    sections: z.array(sectionSchema).min(1, { message: "must not be empty" }).optional(),
    header: attachmentSchema.optional(),
    footer: nonBlank(MAX_FOOTER).optional(),
    schema: formSchema.optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
    const has = (k: "media" | "location" | "options" | "sections" | "header" | "footer" | "schema") => b[k] !== undefined;
    if (b.template) {
      for (const k of ["media", "location", "options", "sections", "header", "footer", "schema"] as const) if (has(k)) issue(k, "cannot be combined with template");
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
    if (b.text.trim() === "" && !b.media && !b.location && !b.template) issue("text", "must not be blank unless media, location or template carries the message");
  });
export type OperatorSendBody = z.infer<typeof operatorSendBody>;

export const threadIdQuery = z.object({ thread_id: threadIdField });

export const threadsQuery = pagingQuery.extend({
  status: z.enum(DELIVERY_STATUSES as unknown as [string, ...string[]]).optional(),
  address: identifierSchema(512).optional(),
});

export const searchQuery = pagingQuery.extend({ q: nonBlank(1000) });

export const transcriptQuery = pagingQuery.extend({
  thread_id: threadIdField,
  order: z.enum(["asc", "desc"]).default("asc"),
  q: z.string().max(1000).optional(),
});

export const modeBody = z.object({ thread_id: threadIdField, mode: z.enum(["agent", "manual"]) }).strict();

export const eventBody = z
  .object({
    address: intactIdentifier(z.string().max(512)).optional(),
    thread_id: threadIdField.optional(),
    event: z
      .object({
        event_id: intactIdentifier(
          z
            .string()
            .trim()
            .min(1, { message: "must not be blank" })
            .max(256, { message: "must be at most 256 characters" }),
        ),
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
    if (b.address !== undefined && b.thread_id !== undefined) ctx.addIssue({ code: "custom", path: ["address"], message: "give exactly one of address or thread_id" });
    if (b.address === undefined && b.thread_id === undefined) ctx.addIssue({ code: "custom", path: ["thread_id"], message: "give exactly one of address or thread_id" });
  });
export type EventBody = z.infer<typeof eventBody>;

// ───────────── answers (for the OpenAPI document) ─────────────

export const threadItem = z.object({
  thread_id: z.string(),
  client_address: z.string().nullable(),
  last_activity_at: z.string(),
  message_count: z.number().int(),
  last_status: z.string(),
});
export const threadsPage = pageSchema(threadItem);
export const recordsPage = pageSchema(recordSchema);
export const transcriptPage = pageSchema(recordSchema).extend({ order: z.enum(["asc", "desc"]) });
export const forgetAnswer = z.object({ removed: z.number().int(), route_name: z.string(), thread_id: z.string() });
export const modeAnswer = z.object({ mode: z.enum(["agent", "manual"]), source: z.enum(["thread", "route"]) });
export const modeSetAnswer = z.object({ route_name: z.string(), thread_id: z.string(), mode: z.enum(["agent", "manual"]), source: z.literal("thread") });
export const sentAnswer = z.object({ message_id: z.string(), thread_id: z.string() });

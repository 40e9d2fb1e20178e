/** Zod schemas of the bridge's doors (spec §4.1–§4.5, decisions §5–§7). */
import { z } from "zod";
import { userIdSchema } from "../auth/schemas";
import { boundedJsonObject } from "../http/bounded-json";
import { identifierSchema, intactIdentifier } from "../http/identifiers";
import { templatedTextSchema } from "../templating/templated-text";
import { MAX_ATTACHMENTS, MAX_JSON_BYTES, MAX_URL, checkParams } from "./transport-bounds";

export const RESERVED_ROUTE_NAMES = new Set(["messages", "persons"]);

export const routeNameSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, { message: "must match ^[a-z0-9][a-z0-9-]{0,62}$" })
  .refine((n) => !RESERVED_ROUTE_NAMES.has(n), { message: "is reserved" });

export const routeParams = z.object({ route_name: routeNameSchema });

const exprSchema = z.union([z.string().min(1).max(16_384), templatedTextSchema]);

const channelName = intactIdentifier(
  z
    .string()
    .trim()
    .min(1)
    .max(64)
    .regex(/^[^:]+$/, { message: "must not contain ':'" }),
);
const ourIdentity = intactIdentifier(z.string().trim().min(1).max(256));

/** Create-or-replace body. Cross-field rules are checked here so they answer 400 before the 501 gate. */
export const routeCreateBody = z
  .object({
    route_name: z.string().optional(),
    door: z.enum(["api", "channel"]),
    target_kind: z.enum(["agent", "tool"]).default("agent"),
    target_name: identifierSchema(128),
    execution_key: userIdSchema,
    payload_expr: exprSchema.nullable().optional(),
    reply_expr: exprSchema.nullable().optional(),
    initial_mode: z.enum(["agent", "manual"]).default("agent"),
    channel: channelName.nullable().optional(),
    our_identity: ourIdentity.nullable().optional(),
    identity: ourIdentity.nullable().optional(),
    callback_url: z.string().max(2048).nullable().optional(),
    turns_per_hour_override: z.number().int().positive().nullable().optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    const identity = b.our_identity ?? b.identity;
    if (b.our_identity && b.identity && b.our_identity !== b.identity) {
      ctx.addIssue({ code: "custom", path: ["identity"], message: "conflicts with our_identity" });
    }
    if (b.target_kind === "agent") {
      if (b.payload_expr) ctx.addIssue({ code: "custom", path: ["payload_expr"], message: "is only for tool targets" });
      if (b.reply_expr) ctx.addIssue({ code: "custom", path: ["reply_expr"], message: "is only for tool targets" });
    }
    if (b.door === "channel") {
      if (!b.channel) ctx.addIssue({ code: "custom", path: ["channel"], message: "is required for a channel route" });
      if (!identity) ctx.addIssue({ code: "custom", path: ["our_identity"], message: "is required for a channel route" });
      if (b.callback_url) ctx.addIssue({ code: "custom", path: ["callback_url"], message: "is only for api routes" });
    } else {
      if (b.channel) ctx.addIssue({ code: "custom", path: ["channel"], message: "is only for channel routes" });
      if (identity) ctx.addIssue({ code: "custom", path: ["our_identity"], message: "is only for channel routes" });
      if (b.callback_url && !isHttpsUrl(b.callback_url)) {
        ctx.addIssue({ code: "custom", path: ["callback_url"], message: "must be an absolute https:// URL with a host and no userinfo" });
      }
    }
  });
export type RouteCreateBody = z.infer<typeof routeCreateBody>;

export function isHttpsUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === "https:" && u.hostname.length > 0 && !u.username && !u.password && /^https:\/\//i.test(s);
  } catch {
    return false;
  }
}

export const routeView = z.object({
  route_name: z.string(),
  door: z.enum(["api", "channel"]),
  target_kind: z.enum(["agent", "tool"]),
  target_name: z.string(),
  execution_key: z.string(),
  execution_key_fingerprint: z.string(),
  payload_expr: z.unknown(),
  reply_expr: z.unknown(),
  initial_mode: z.enum(["agent", "manual"]),
  channel: z.string().nullable(),
  our_identity: z.string().nullable(),
  callback_url: z.string().nullable(),
  turns_per_hour_override: z.number().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

const EXT_KIND: Array<[RegExp, "image" | "video" | "audio"]> = [
  [/\.(png|jpe?g|gif|webp|heic|bmp|svg)$/i, "image"],
  [/\.(mp4|mov|webm|3gp|mkv|avi)$/i, "video"],
  [/\.(mp3|ogg|oga|opus|wav|m4a|aac|amr|flac)$/i, "audio"],
];

/** Infers an attachment kind when absent: `document` with a filename, else by URL extension, else document. */
export function inferKind(a: { url: string; filename?: string }): "image" | "document" | "video" | "audio" {
  if (a.filename) return "document";
  let path = a.url;
  try {
    path = new URL(a.url).pathname;
  } catch {
    /* not absolute: use as is */
  }
  return EXT_KIND.find(([re]) => re.test(path))?.[1] ?? "document";
}

export const attachmentSchema = z
  .object({
    kind: z.enum(["image", "document", "video", "audio"]).optional(),
    url: z.string().min(1).max(MAX_URL),
    caption: z.string().max(4096).optional(),
    filename: z.string().max(512).optional(),
  })
  .strict()
  .transform((a) => ({ ...a, kind: a.kind ?? inferKind(a) }));

export const locationSchema = z
  .object({
    latitude: z.number().min(-90).max(90),
    longitude: z.number().min(-180).max(180),
    name: z.string().max(1024).optional(),
    address: z.string().max(1024).optional(),
  })
  .strict();

export const paramsSchema = z.record(z.string(), z.string()).superRefine((p, ctx) => {
  const broken = checkParams(p);
  if (broken) ctx.addIssue({ code: "custom", message: broken });
});

/** `form`, `event.payload` and an operator form `schema`: free-form, transport-bounded (decisions §6). */
export const jsonObjectSchema = boundedJsonObject(MAX_JSON_BYTES);

export const waitSecondsSchema = z.number().min(0).finite();

export const messageBody = z
  .object({
    external_user_id: identifierSchema(256),
    text: z.string().max(100_000),
    wait_seconds: waitSecondsSchema.optional(),
    params: paramsSchema.optional(),
    form: jsonObjectSchema.optional(),
    attachments: z.array(attachmentSchema).max(MAX_ATTACHMENTS).optional(),
    location: locationSchema.optional(),
  })
  .strict();
export type MessageBody = z.infer<typeof messageBody>;

export const messageAccepted = z.object({ message_id: z.string(), thread_id: z.string() });
export const messageAnswered = z.object({
  message_id: z.string(),
  thread_id: z.string(),
  status: z.enum(["answered", "error", "silent"]),
  answer: z.string().optional(),
});

/** The record as documented (decisions §7); non-admins get the caller-safe subset. */
export const recordSchema = z
  .object({
    message_id: z.string(),
    route_name: z.string(),
    door: z.enum(["api", "channel"]),
    thread_id: z.string(),
    client_address: z.string().nullable(),
    channel: z.string().nullable(),
    our_identity: z.string().nullable(),
    provider_message_id: z.string().nullable().optional(),
    callback_url: z.string().nullable().optional(),
    caller_principal: z.string().nullable(),
    origin: z.enum(["client", "operator"]),
    inbound_kind: z.enum(["message", "event"]),
    inbound_text: z.string(),
    inbound_form: z.record(z.string(), z.unknown()).optional(),
    inbound_attachments: z.array(z.unknown()).optional(),
    inbound_location: z.unknown().optional(),
    inbound_event: z.unknown().optional(),
    submitted_by: z.string().optional(),
    status: z.enum(["accepted", "pending_delivery", "provisional", "delivered", "failed", "shed", "silent"]),
    answer_status: z.enum(["answered", "error", "silent"]).nullable(),
    answer: z.string().nullable(),
    answer_part: z.record(z.string(), z.unknown()).optional().describe("An operator message's rich part (media, location, template, options, sections, header, footer, schema)"),
    error: z.string().nullable().optional(),
    attempts: z.number().optional(),
    outbound_message_ids: z.array(z.string()).optional(),
    created_at: z.string(),
    updated_at: z.string(),
    expires_at: z.string().nullable().optional(),
  })
  .describe("AnswerRecord");

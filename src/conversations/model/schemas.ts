/** Zod schemas of the bridge's doors (spec §4.1–§4.5, decisions §5–§7). */
import { z } from "zod";
import { userIdSchema } from "../../access-control/schemas";
import { AttachmentInput, LocationInput, MAX_ATTACHMENTS } from "../../shared/media";
import { Door, Mode, TargetKind } from "../../shared/kinds";
import { jsonObjectSchema } from "../../platform/http/bounded-json";
import { identifierSchema, intactIdentifier } from "../../platform/http/identifiers";
import { templatedTextSchema } from "../../templates/templated-text";
import { checkParams } from "./transport-bounds";
import { WEB_IDENTITY } from "./web";

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
    door: Door,
    target_kind: TargetKind.default("agent"),
    target_name: identifierSchema(128),
    execution_key: userIdSchema,
    payload_expr: exprSchema.nullable().optional(),
    reply_expr: exprSchema.nullable().optional(),
    initial_mode: Mode.default("agent"),
    channel: channelName.nullable().optional(),
    our_identity: ourIdentity.nullable().optional(),
    identity: ourIdentity.nullable().optional(),
    callback_url: z.string().max(2048).nullable().optional(),
    turns_per_hour_override: z.number().int().positive().nullable().optional(),
    /** Channel routes: 👍/👎 reply buttons under the target's answers (docs/channels.md, "Answer feedback buttons"). */
    answer_feedback: z.boolean().optional(),
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
      // A web identity is the chat page's path segment and its cookie's name.
      else if (b.channel === "web" && !WEB_IDENTITY.test(identity.trim()))
        ctx.addIssue({ code: "custom", path: ["our_identity"], message: "of a web route must be 1 to 64 characters of [A-Za-z0-9_-]" });
      if (b.callback_url) ctx.addIssue({ code: "custom", path: ["callback_url"], message: "is only for api routes" });
    } else {
      if (b.channel) ctx.addIssue({ code: "custom", path: ["channel"], message: "is only for channel routes" });
      if (b.answer_feedback) ctx.addIssue({ code: "custom", path: ["answer_feedback"], message: "is only for channel routes" });
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

export const paramsSchema = z.record(z.string(), z.string()).superRefine((p, ctx) => {
  const broken = checkParams(p);
  if (broken) ctx.addIssue({ code: "custom", message: broken });
});

export const waitSecondsSchema = z.number().min(0).finite();

export const messageBody = z
  .object({
    external_user_id: identifierSchema(256),
    text: z.string().max(100_000),
    wait_seconds: waitSecondsSchema.optional(),
    params: paramsSchema.optional(),
    form: jsonObjectSchema.optional(),
    attachments: z.array(AttachmentInput).max(MAX_ATTACHMENTS).optional(),
    location: LocationInput.optional(),
  })
  .strict();
export type MessageBody = z.infer<typeof messageBody>;

export const messageAccepted = z.object({ message_id: z.string(), thread_id: z.string() });
export const messageAnswered = z.object({
  message_id: z.string(),
  thread_id: z.string(),
  status: z.enum(["answered", "error", "silent"]),
  answer: z.string().optional(),
  /** A stop door ended the turn: `answer` is the draft it had written (docs/targets.md "Stopping a turn"). */
  stopped: z.literal(true).optional(),
});

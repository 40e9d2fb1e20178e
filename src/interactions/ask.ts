/**
 * What `ask_user` takes and how a question and its answer are shaped (docs/interactions.md),
 * pure. The options are the reply options of spec §4.9 (a tapped one submits its text as the next
 * message, its `id` rides as `params.reply_id` where the channel carries it); the schema is the
 * ask-less form shape of §4.7/§4.9. A leaf of the interactions area: the built-in tool imports it,
 * so it imports nothing from targets or interactions.
 */
import { z } from "zod";
import { userIdSchema } from "../access-control/schemas";
import { jsonObjectSchema } from "../platform/http/bounded-json";
import { identifierSchema, nonBlankText } from "../platform/http/identifiers";
import { MAX_OPTION_DESCRIPTION, MAX_OPTION_ID, MAX_OPTION_ROWS, MAX_OPTION_TEXT, type RichOption } from "../channels/rich/types";

/** Longest question (the text the participant reads). */
export const MAX_QUESTION = 4000;

/** One reply option of a question: a tap (or typing its text or number) picks it. */
export const AskOption = z
  .object({
    text: nonBlankText(MAX_OPTION_TEXT),
    id: identifierSchema(MAX_OPTION_ID).optional(),
    description: nonBlankText(MAX_OPTION_DESCRIPTION).optional(),
  })
  .strict();
export type AskOption = z.infer<typeof AskOption>;

/** The ask-less form's answer schema: a non-empty JSON object within the transport bounds. */
const formSchema = jsonObjectSchema.refine((o) => Object.keys(o).length > 0, { message: "must not be empty" });

/** `ask_user`'s input: a question, optionally reply options XOR a form schema, and an optional audience. */
export const AskUserInput = z
  .object({
    question: nonBlankText(MAX_QUESTION),
    options: z.array(AskOption).min(1, { message: "must not be empty" }).max(MAX_OPTION_ROWS).optional(),
    schema: formSchema.optional(),
    /** The user_id whose callers may see and answer it (restricted keys see only their own). */
    audience: userIdSchema.optional(),
  })
  .strict()
  .superRefine((a, ctx) => {
    if (a.options && a.schema) ctx.addIssue({ code: "custom", path: ["schema"], message: "options and schema are exclusive" });
    const opts = a.options ?? [];
    const ids = effectiveOptions(opts).map((o) => o.id);
    if (new Set(ids).size !== ids.length)
      ctx.addIssue({ code: "custom", path: ["options"], message: "option ids must be unique (an option without id takes its position, 1-based)" });
    const texts = opts.map((o) => o.text.trim().toLowerCase());
    if (new Set(texts).size !== texts.length) ctx.addIssue({ code: "custom", path: ["options"], message: "option texts must be unique" });
  });
export type AskUserInput = z.infer<typeof AskUserInput>;

/** The JSON Schema a model sees for `ask_user` (the zod schema above is the one that decides). */
export const ASK_USER_JSON_SCHEMA = {
  type: "object",
  properties: {
    question: { type: "string", minLength: 1, maxLength: MAX_QUESTION, description: "The question the user reads." },
    options: {
      type: "array",
      minItems: 1,
      maxItems: MAX_OPTION_ROWS,
      description: "Reply options the user can tap or type (optional; not with schema).",
      items: {
        type: "object",
        properties: { text: { type: "string", minLength: 1, maxLength: MAX_OPTION_TEXT }, id: { type: "string" }, description: { type: "string" } },
        required: ["text"],
      },
    },
    schema: { type: "object", description: "An ask-less form's answer schema (optional; not with options)." },
    audience: { type: "string", description: "The user_id an operator answering it must be (optional)." },
  },
  required: ["question"],
} as const;

/** An option as an interaction keeps it: its effective id is the author's, else its 1-based position. */
export const InteractionOption = z.object({ id: z.string(), text: z.string(), description: z.string().optional() }).strict();
export type InteractionOption = z.infer<typeof InteractionOption>;

/** The options with their effective ids (pure). */
export function effectiveOptions(options: readonly AskOption[] | undefined): InteractionOption[] {
  return (options ?? []).map((o, i) => ({ id: o.id ?? String(i + 1), text: o.text, ...(o.description ? { description: o.description } : {}) }));
}

/** The options as a channel's reply options (spec §4.9), each carrying its effective id. */
export function replyOptions(options: readonly InteractionOption[]): RichOption[] {
  return options.map((o) => ({ kind: "reply" as const, text: o.text, id: o.id, ...(o.description ? { description: o.description } : {}) }));
}

/**
 * The question as plain text, for a door or channel that cannot show reply options: the options
 * numbered under it, one per line (`1. Yes`), so the participant can answer with the number or the text.
 */
export function numberedQuestion(question: string, options: readonly InteractionOption[] | null): string {
  if (!options?.length) return question;
  return `${question}\n\n${options.map((o, i) => `${i + 1}. ${o.text}`).join("\n")}`;
}

const norm = (s: string) => s.trim().toLowerCase();

/**
 * The option an answer picks, or null: `replyId` (a tap's `params.reply_id`) equal to an option's
 * id or text; else the text equal to an option's text (trimmed, case-insensitive), its id, or its
 * number as listed by `numberedQuestion`. Pure.
 */
export function pickOption(options: readonly InteractionOption[] | null, answer: { text?: string | null; replyId?: string | null }): InteractionOption | null {
  if (!options?.length) return null;
  if (answer.replyId) {
    const hit = options.find((o) => o.id === answer.replyId) ?? options.find((o) => o.text === answer.replyId);
    if (hit) return hit;
  }
  const text = answer.text ? norm(answer.text) : "";
  if (!text) return null;
  const byText = options.find((o) => norm(o.text) === text) ?? options.find((o) => norm(o.id) === text);
  if (byText) return byText;
  const n = /^\d{1,3}$/.test(text) ? Number(text) : NaN;
  return Number.isInteger(n) && n >= 1 && n <= options.length ? options[n - 1] : null;
}

/**
 * The pre-chat form (docs/channels.md, "Pre-chat form"): per web identity, the fields a visitor
 * fills in before their first message. The operator writes it as a list of fields; it is kept on
 * the identity's site row (`web_sites.prechat`, migration 0033), so it reaches every isolate with
 * the site, under the identity's access epoch, and a visitor's message reads it without a D1
 * statement. The visitor's page renders it with the chat's form renderer, which reads a JSON
 * Schema (`prechatSchema`); the answers come back as the message's `profile` and are checked here
 * against the form before anything is stored.
 */
import { z } from "zod";
import { HttpError } from "../platform/http/errors";
import { JsonObject } from "../platform/http/bounded-json";
import { type ProfileValue, VOUCHED_KEYS } from "../shared/visitor-profile";

/** Most fields one form holds. */
export const MAX_PRECHAT_FIELDS = 10;
/** Most choices of an enum field. */
export const MAX_PRECHAT_OPTIONS = 20;
/** The longest text answer a field may allow, and the default bound. */
export const MAX_TEXT_ANSWER = 1000;
export const DEFAULT_TEXT_ANSWER = 200;
/** The longest email address (RFC 5321's path limit). */
const MAX_EMAIL = 254;

const FIELD_NAME = /^[a-z][a-z0-9_]{0,31}$/;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export const PRECHAT_TYPES = ["text", "email", "number", "boolean", "enum"] as const;

const Label = z
  .string()
  .max(100)
  .refine((s) => s.trim() !== "", { message: "must not be blank" });

/** One field of the form, as the operator writes it. */
export const PrechatField = z
  .object({
    name: z.string().regex(FIELD_NAME, { message: "must be 1-32 lowercase letters, digits or '_', starting with a letter" }),
    label: Label,
    type: z.enum(PRECHAT_TYPES),
    required: z.boolean().default(false),
    /** An enum field's choices (and only an enum field's). */
    options: z.array(Label).min(1).max(MAX_PRECHAT_OPTIONS).optional(),
    /** A text field's longest answer (default 200); only a text field's. */
    max_length: z.number().int().min(1).max(MAX_TEXT_ANSWER).optional(),
  })
  .strict();
export type PrechatField = z.output<typeof PrechatField>;

/** The form: its fields in the order the page shows them. Names are unique. */
export const PrechatBody = z
  .object({ fields: z.array(PrechatField).min(1).max(MAX_PRECHAT_FIELDS) })
  .strict()
  .superRefine((form, ctx) => {
    const seen = new Set<string>();
    form.fields.forEach((f, i) => {
      // Issues name the index, never the name: a name is the caller's text.
      if (seen.has(f.name)) ctx.addIssue({ code: "custom", path: ["fields", i, "name"], message: "names a field an earlier one already has" });
      seen.add(f.name);
      if (f.type === "enum" && !f.options) ctx.addIssue({ code: "custom", path: ["fields", i, "options"], message: "an enum field needs its options" });
      if (f.type !== "enum" && f.options) ctx.addIssue({ code: "custom", path: ["fields", i, "options"], message: "only an enum field has options" });
      if (f.type !== "text" && f.max_length !== undefined)
        ctx.addIssue({ code: "custom", path: ["fields", i, "max_length"], message: "only a text field has max_length" });
      if (f.options && new Set(f.options).size !== f.options.length)
        ctx.addIssue({ code: "custom", path: ["fields", i, "options"], message: "must not repeat a choice" });
    });
  });
export type PrechatForm = z.output<typeof PrechatBody>;

/** The form as the operator's doors show it (`fields: null`: the identity has none). */
export const PrechatView = z
  .object({ identity: z.string(), fields: z.array(PrechatField).nullable() })
  .strict()
  .describe("WebPrechat");
export type PrechatView = z.infer<typeof PrechatView>;

/** A form the page renders: the JSON Schema of an ask-less form (webchat/src/ui.ts `formBox`). */
export const PrechatSchema = z
  .object({
    type: z.literal("object"),
    properties: z.record(
      z.string(),
      z.object({
        type: z.enum(["string", "number", "boolean"]),
        title: z.string(),
        format: z.literal("email").optional(),
        enum: z.array(z.string()).optional(),
        maxLength: z.number().optional(),
      }),
    ),
    required: z.array(z.string()),
  })
  .describe("WebPrechatSchema");
export type PrechatSchema = z.infer<typeof PrechatSchema>;

/**
 * What the visitor's page renders: the fields the site does not already vouch for (`vouched`, the
 * claims of a verified visitor's token), as a form schema; null when there is no form or nothing
 * is left to ask.
 */
export function prechatSchema(form: PrechatForm | null, vouched: ReadonlySet<string> = new Set()): PrechatSchema | null {
  const fields = (form?.fields ?? []).filter((f) => !vouched.has(f.name));
  if (!fields.length) return null;
  const properties: PrechatSchema["properties"] = {};
  for (const f of fields) {
    const type = f.type === "number" ? "number" : f.type === "boolean" ? "boolean" : "string";
    properties[f.name] = {
      type,
      title: f.label,
      ...(f.type === "email" ? { format: "email" as const } : {}),
      ...(f.options ? { enum: f.options } : {}),
      ...(f.type === "text" ? { maxLength: f.max_length ?? DEFAULT_TEXT_ANSWER } : {}),
    };
  }
  return { type: "object", properties, required: fields.filter((f) => f.required).map((f) => f.name) };
}

/**
 * The `profile` of a visitor's message: a flat object of answers. Its values are checked here
 * without naming a key (a key is the visitor's text); each answer is checked against its field by
 * `checkAnswers` once the form is known.
 */
export const ProfileAnswers = JsonObject.check(
  z.superRefine((o, ctx) => {
    const entries = Object.entries(o);
    if (entries.length > MAX_PRECHAT_FIELDS) ctx.addIssue({ code: "custom", message: `must hold at most ${MAX_PRECHAT_FIELDS} answers` });
    if (entries.some(([k]) => k.length > 32)) ctx.addIssue({ code: "custom", message: "field names are at most 32 characters" });
    const ok = (v: unknown) =>
      (typeof v === "string" && v.length <= MAX_TEXT_ANSWER) || (typeof v === "number" && Number.isFinite(v)) || typeof v === "boolean";
    if (!entries.every(([, v]) => ok(v)))
      ctx.addIssue({ code: "custom", message: `each answer must be a text of at most ${MAX_TEXT_ANSWER} characters, a number or a boolean` });
  }),
);

const refused = (what: string) => new HttpError(400, `invalid body: profile${what}`, "invalid_profile");

/**
 * Checks a visitor's answers against the form and answers them as kept: every answer names a field
 * of the form that the site does not vouch for, has its field's type, and every required field is
 * answered (a blank text counts as no answer and is left out). A refusal names the field (the
 * form's own name), never the answer; nothing is stored before this passes.
 */
export function checkAnswers(form: PrechatForm | null, answers: Record<string, unknown>, vouched: ReadonlySet<string>): Record<string, ProfileValue> {
  if (!form) throw refused(": this chat has no pre-chat form");
  const byName = new Map(form.fields.map((f) => [f.name, f]));
  const out: Record<string, ProfileValue> = {};
  for (const [name, value] of Object.entries(answers)) {
    const f = byName.get(name);
    if (!f) throw refused(": names a field the pre-chat form does not have");
    if (vouched.has(name)) throw refused(`.${name}: the site already vouches for this field`);
    const kept = answerOf(f, value);
    if (kept === undefined) continue;
    out[name] = kept;
  }
  // Own keys only: a field may be named like an Object.prototype member ("constructor").
  for (const f of form.fields) if (f.required && !vouched.has(f.name) && !Object.hasOwn(out, f.name)) throw refused(`.${f.name}: is required`);
  return out;
}

/** One answer as kept (undefined: a blank text, no answer), or a refusal naming the field. */
function answerOf(f: PrechatField, value: unknown): ProfileValue | undefined {
  const where = `.${f.name}`;
  switch (f.type) {
    case "number":
      if (typeof value !== "number" || !Number.isFinite(value)) throw refused(`${where}: must be a number`);
      return value;
    case "boolean":
      if (typeof value !== "boolean") throw refused(`${where}: must be true or false`);
      return value;
    default: {
      if (typeof value !== "string") throw refused(`${where}: must be a text`);
      const text = value.trim();
      if (!text) return undefined;
      if (f.type === "email" && (text.length > MAX_EMAIL || !EMAIL.test(text))) throw refused(`${where}: must be an email address`);
      if (f.type === "enum" && !f.options?.includes(text)) throw refused(`${where}: must be one of the field's options`);
      if (f.type === "text" && text.length > (f.max_length ?? DEFAULT_TEXT_ANSWER))
        throw refused(`${where}: must be at most ${f.max_length ?? DEFAULT_TEXT_ANSWER} characters`);
      return text;
    }
  }
}

/**
 * The text of a message that carries only the form's answers: one `label: answer` line per answered
 * field, in the form's order. It is what the transcript shows of the visitor's first message and
 * what an agent reads as it, so an agent that sees only text learns the answers too.
 */
export function answersText(form: PrechatForm | null, answers: Record<string, ProfileValue>): string {
  return (form?.fields ?? [])
    .filter((f) => Object.hasOwn(answers, f.name))
    .map((f) => `${f.label}: ${String(answers[f.name])}`)
    .join("\n");
}

/** The claims a visitor's site vouched for, as field names (the fields their form skips). */
export function vouchedNames(vouched: Partial<Record<string, string>> | null | undefined): ReadonlySet<string> {
  return new Set(VOUCHED_KEYS.filter((k) => typeof vouched?.[k] === "string"));
}

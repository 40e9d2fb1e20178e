/**
 * The schedule create body and its normal form (platform-facts B7; docs/schedules.md).
 * `schedule_kwargs` is a crontab string (`cron`) XOR crontab fields (`minute`, `hour`,
 * `day_of_month`, `month_of_year`, `day_of_week`, each `*` when absent, as celery's crontab), with
 * an optional IANA `timezone` (UTC when absent); `{}` runs the tool once, now. The normal form is
 * the one five-field expression both spellings compile to.
 */
import { z } from "zod";
import { userIdSchema } from "../access-control/schemas";
import { type JsonObject, MAX_KWARGS_BYTES, boundedJsonObject } from "../platform/http/bounded-json";
import { StateBinding } from "../shared/state-binding";
import { isMaintenanceTool } from "../tool-runs/maintenance";
import { RunToolName } from "../tool-runs/submit";
import { type SlotSource, canonicalTimezone, compileCron } from "./cron";

/** A schedule's name: also its object's name and a path segment. */
export const ScheduleName = z.string().regex(/^[A-Za-z0-9_.-]{1,128}$/, { message: "must be 1-128 characters of letters, digits, _ . and -" });

/** One crontab field: its text (`*`, `*\/15`, `1-5`, `mon-fri`, `1,15`) or a whole number. */
const CronField = z.union([
  z.number().int().min(0).max(59),
  z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9*,/#-]+$/, { message: "must be one crontab field (digits, names, * , / - #)" }),
]);

const FIELDS = ["minute", "hour", "day_of_month", "month_of_year", "day_of_week"] as const;

export const ScheduleKwargs = z
  .object({
    cron: z
      .string()
      .trim()
      .min(1, { message: "must not be blank" })
      .max(256)
      .regex(/^[^\u0000-\u001F\u007F]*$/, { message: "must be one line" })
      .optional(),
    minute: CronField.optional(),
    hour: CronField.optional(),
    day_of_month: CronField.optional(),
    month_of_year: CronField.optional(),
    day_of_week: CronField.optional(),
    timezone: z.string().min(1).max(64).optional(),
  })
  .strict()
  .refine((k) => k.cron === undefined || FIELDS.every((f) => k[f] === undefined), { message: "give cron or the crontab fields, not both" })
  .refine((k) => k.timezone === undefined || k.cron !== undefined || FIELDS.some((f) => k[f] !== undefined), {
    message: "timezone needs cron or a crontab field ({} alone runs the tool once, now)",
  });
export type ScheduleKwargs = z.infer<typeof ScheduleKwargs>;

export const ScheduleCreateBody = z
  .object({
    tool_name: RunToolName,
    tool_kwargs: boundedJsonObject(MAX_KWARGS_BYTES).default({}),
    schedule_kwargs: ScheduleKwargs,
    /** The key every fire runs as (pass-role bound; its fingerprint is stored). */
    execution_key: userIdSchema,
    /** Default: derived from the spec (`<tool>_<12 hex>`), so re-adding the same spec updates it in place. */
    name: ScheduleName.optional(),
    /** States each fire's run reads before and writes after its dispatch (spec §2.6). */
    state_binding: StateBinding.nullable().optional(),
  })
  .strict()
  .refine((b) => !b.state_binding || !isMaintenanceTool(b.tool_name), { path: ["state_binding"], message: "a maintenance tool takes no state binding" });
export type ScheduleCreateBody = z.infer<typeof ScheduleCreateBody>;

/** What a schedule's kwargs mean: once, now; or a five-field expression in a timezone. */
export type Cadence = { kind: "once" } | { kind: "cron"; expression: string; timezone: string; slots: SlotSource };

/** The normal form, or a 400 text naming the field (never the value). */
export function cadenceOf(k: ScheduleKwargs): Cadence | { error: string } {
  const fieldsGiven = FIELDS.some((f) => k[f] !== undefined);
  if (k.cron === undefined && !fieldsGiven) return { kind: "once" };
  const timezone = canonicalTimezone(k.timezone ?? "UTC");
  if (!timezone) return { error: "schedule_kwargs.timezone: not an IANA timezone name this service knows" };
  const expression = k.cron !== undefined ? k.cron.split(/\s+/).join(" ") : FIELDS.map((f) => String(k[f] ?? "*")).join(" ");
  const slots = compileCron(expression, timezone);
  const where = k.cron !== undefined ? "schedule_kwargs.cron" : "schedule_kwargs (crontab fields)";
  if (!slots) return { error: `${where}: not a valid five-field crontab expression` };
  return { kind: "cron", expression, timezone, slots };
}

/** JSON with object keys sorted at every level: the same spec always reads the same. */
function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(o[key])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}

/**
 * The name a schedule gets when the body gives none: `<tool_name>_<first 12 hex of SHA-256>` over
 * the canonical spec (tool, its kwargs, the normal expression and timezone). The same spec always
 * yields the same name, so adding it again updates that schedule in place (the execution key is
 * not part of the spec: re-adding with another key re-binds the schedule).
 */
export async function derivedScheduleName(tool: string, kwargs: JsonObject, expression: string, timezone: string): Promise<string> {
  const spec = canonicalJson({ tool_name: tool, tool_kwargs: kwargs, cron: expression, timezone });
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(spec)));
  const hex = [...digest.slice(0, 6)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${tool}_${hex}`;
}

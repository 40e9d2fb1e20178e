/**
 * A hook's shapes (platform-facts B6; docs/hooks.md), one definition each: the
 * registration body, the view the doors answer, and the row D1 keeps (the view plus the rendered
 * programs the fires run).
 */
import { z } from "zod";
import { userIdSchema } from "../access-control/schemas";
import { JsonObject, MAX_KWARGS_BYTES, boundedJsonObject } from "../platform/http/bounded-json";
import { intactIdentifier } from "../platform/http/identifiers";
import { StateBinding } from "../shared/state-binding";
import { jsonColumn } from "../platform/persistence/stored-json";
import { toolNameSchema } from "../shared/tool-names";
import { isMaintenanceTool } from "../tool-runs/maintenance";
import { targetNameSchema } from "../shared/target-names";
import { HookName, HookTopic } from "./names";

const program = z.string().min(1, { message: "must not be blank" }).max(16_384);
const resourceId = intactIdentifier(z.string().min(1).max(256));
const kwargs = boundedJsonObject(MAX_KWARGS_BYTES);

/** `POST /api/hooks`. `condition` XOR `condition_id` (+ `condition_kwargs`); the same for `expr`. */
export const HookCreateBody = z
  .object({
    name: HookName,
    topic: HookTopic,
    /** A registry tool (decisions §4), an MCP server's included: what each fire runs. Never a maintenance tool (admin-only passes). */
    tool: toolNameSchema.refine((n) => !isMaintenanceTool(n), { message: "a hook cannot fire a maintenance tool (schedule it instead)" }),
    /** The key every fire runs as (pass-role bound; its fingerprint is stored). */
    execution_key: userIdSchema,
    /** The strongest layer of the tool input: shallow-merged over the expr output and a trigger link's kwargs. */
    tool_kwargs: kwargs.default({}),
    /** jq over the delivery's payload; the hook fires only when it emits exactly `true`. Absent: always. */
    condition: program.optional(),
    condition_id: resourceId.optional(),
    condition_kwargs: kwargs.optional(),
    /** jq over the payload emitting exactly one object: the weakest layer of the tool input. Absent: `{}`. */
    expr: program.optional(),
    expr_id: resourceId.optional(),
    expr_kwargs: kwargs.optional(),
    state_binding: StateBinding.nullable().optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    for (const what of ["condition", "expr"] as const) {
      const id = b[`${what}_id`];
      if (b[what] !== undefined && id !== undefined) ctx.addIssue({ code: "custom", path: [what], message: `give ${what} or ${what}_id, not both` });
      if (b[`${what}_kwargs`] !== undefined && id === undefined)
        ctx.addIssue({ code: "custom", path: [`${what}_kwargs`], message: `needs ${what}_id (kwargs render a stored text resource)` });
    }
  });
export type HookCreateBody = z.infer<typeof HookCreateBody>;

const iso = z.string().describe("ISO-8601 UTC");

/** A hook as the doors show it: the registration as given, the bound key's fingerprint, and who wrote it when. */
export const HookView = z
  .object({
    name: z.string(),
    topic: z.string(),
    tool: z.string(),
    execution_key: z.string(),
    execution_key_fingerprint: z.string(),
    tool_kwargs: JsonObject,
    condition: z.string().nullable(),
    condition_id: z.string().nullable(),
    condition_kwargs: JsonObject.nullable(),
    expr: z.string().nullable(),
    expr_id: z.string().nullable(),
    expr_kwargs: JsonObject.nullable(),
    state_binding: StateBinding.nullable(),
    created_by: z.string(),
    created_at: iso,
    updated_at: iso,
  })
  .strict()
  .describe("Hook");
export type HookView = z.infer<typeof HookView>;

/**
 * The stored hook: the view plus the programs the fires run, rendered once at registration (so a
 * fire reads no text resource and a later edit of one does not change a registered hook).
 */
export const HookRow = HookView.extend({ condition_program: z.string().nullable(), expr_program: z.string().nullable() });
export type HookRow = z.infer<typeof HookRow>;

/** The D1 row as read: the JSON columns decoded. */
export const StoredHookRow = HookRow.extend({
  tool_kwargs: jsonColumn(JsonObject),
  condition_kwargs: jsonColumn(JsonObject).nullable(),
  expr_kwargs: jsonColumn(JsonObject).nullable(),
  state_binding: jsonColumn(StateBinding).nullable(),
});

export function hookView(row: HookRow): HookView {
  const { condition_program: _c, expr_program: _e, ...view } = row;
  return view;
}

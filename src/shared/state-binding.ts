/**
 * StateBinding and its parts (spec §2.6): frozen shapes, extra fields refused. One definition,
 * shared by everything that carries a binding: target configs, presets, hooks, schedules and the
 * runs they submit. The shape is all this module checks: that a named state is declared,
 * that a `template_jq` names a template, and turn-time binding belong to the States area.
 */
import { z } from "zod";
import { intactIdentifier } from "../platform/http/identifiers";
import { templatedTextSchema } from "./templated-text";

const name = (what: string, max: number) =>
  intactIdentifier(
    z
      .string()
      .trim()
      .min(1, { message: `${what} must not be blank` })
      .max(max),
  );

const exactlyOneSource = (v: { template_jq?: string | null; jq?: unknown }, ctx: z.RefinementCtx) => {
  const named = v.template_jq !== undefined && v.template_jq !== null;
  const custom = v.jq !== undefined && v.jq !== null;
  if (named === custom) ctx.addIssue({ code: "custom", message: "exactly one of template_jq or jq must be set" });
};

export const StateInjection = z
  .object({
    into: name("into", 256),
    template_jq: name("template_jq", 256).nullable().default(null),
    jq: templatedTextSchema.nullable().default(null),
  })
  .strict()
  .superRefine(exactlyOneSource);
export type StateInjection = z.infer<typeof StateInjection>;

export const StateUpdate = z
  .object({
    template_jq: name("template_jq", 256).nullable().default(null),
    jq: templatedTextSchema.nullable().default(null),
    adapter: templatedTextSchema.nullable().default(null),
    op_id: templatedTextSchema.nullable().default(null),
  })
  .strict()
  .superRefine((u, ctx) => {
    exactlyOneSource(u, ctx);
    if (u.jq !== null && u.adapter !== null) ctx.addIssue({ code: "custom", message: "a custom jq update carries no adapter" });
  });
export type StateUpdate = z.infer<typeof StateUpdate>;

export const StateAttach = z
  .object({
    state: name("state", 128),
    subject_expr: templatedTextSchema,
    templates: z.array(name("template", 128)).max(64).default([]),
    scope_expr: templatedTextSchema.nullable().default(null),
    input_injections: z.array(StateInjection).max(64).default([]),
    updates: z.array(StateUpdate).max(64).default([]),
  })
  .strict();
export type StateAttach = z.infer<typeof StateAttach>;

export const StateBinding = z
  .object({
    states: z.array(StateAttach).min(1, { message: "must list at least one state" }).max(32),
  })
  .strict();
export type StateBinding = z.infer<typeof StateBinding>;

/**
 * The shape of a TemplatedText (spec §2.6): `{content | id, kwargs}`, exactly one of content/id.
 * Rendering it is the templates area's work (src/templates/templated-text.ts); the shape sits here
 * because routes, states and presets store it.
 */
import { z } from "zod";
import { MAX_KWARGS_BYTES, boundedJsonObject } from "../platform/http/bounded-json";
import { intactIdentifier } from "../platform/http/identifiers";

export const templatedTextSchema = z
  .object({
    content: z.string().nullable().optional(),
    id: intactIdentifier(z.string().min(1).max(256)).nullable().optional(),
    // Bounded: kwargs are stored with the route and rendered on every turn, so an unbounded
    // value would break the route for good.
    kwargs: boundedJsonObject(MAX_KWARGS_BYTES).default({}),
  })
  .strict()
  .superRefine((t, ctx) => {
    const hasContent = t.content !== undefined && t.content !== null;
    const hasId = t.id !== undefined && t.id !== null;
    if (hasContent === hasId) ctx.addIssue({ code: "custom", message: "exactly one of content or id must be set" });
  });
export type TemplatedText = z.infer<typeof templatedTextSchema>;

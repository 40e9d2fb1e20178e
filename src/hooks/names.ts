/**
 * Hook names and topics (platform-facts B6): each is one lowercase URL segment,
 * `^[a-z0-9][a-z0-9_-]*$`, at most 128 characters. A topic names the public door
 * `/api/hooks/incoming/{topic}`; a hook's name is a path segment of `DELETE /api/hooks/{name}`,
 * so the literal segments under `/api/hooks/` are reserved for hook names.
 */
import { z } from "zod";

const SEGMENT = /^[a-z0-9][a-z0-9_-]*$/;
const RULE = "must be one lowercase URL segment (^[a-z0-9][a-z0-9_-]*$, at most 128 characters)";

/** Literal segments of the hooks doors: a hook named so would be shadowed by (or shadow) them. */
export const RESERVED_HOOK_NAMES: ReadonlySet<string> = new Set(["verifiers", "trigger-links", "topics", "incoming", "trigger"]);

export const HookTopic = z.string().max(128, { message: RULE }).regex(SEGMENT, { message: RULE });

export const HookName = z
  .string()
  .max(128, { message: RULE })
  .regex(SEGMENT, { message: RULE })
  .refine((n) => !RESERVED_HOOK_NAMES.has(n), { message: "is reserved (a literal segment of the hooks doors)" });

/** A trigger link's name: the same grammar (it is a path segment of the delete door). */
export const TriggerLinkName = z.string().max(128, { message: RULE }).regex(SEGMENT, { message: RULE });

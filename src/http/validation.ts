import type { z } from "zod";
import { badRequest } from "./errors";

/**
 * Turns a zod failure into a 400 that names where and what was wrong, never the value:
 * zod's own messages state expectations ("expected string"), not the rejected input.
 */
export function describeIssues(error: z.ZodError, where: string): string {
  const parts = error.issues.slice(0, 5).map((issue) => {
    const path = issue.path.map(String).join(".");
    const field = path ? `${where === "body" ? "" : where + "."}${path}` : where;
    return `${field}: ${issue.message}`;
  });
  return `invalid ${where}: ${parts.join("; ")}`;
}

/** Parses `value` or throws a 400 naming the failing fields. */
export function parseOr400<T extends z.ZodType>(schema: T, value: unknown, where: string): z.output<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw badRequest(describeIssues(result.error, where));
  return result.data;
}

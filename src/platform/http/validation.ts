import type { z } from "zod";
import { badRequest } from "./errors";

/**
 * Turns a zod failure into a 400 that names where and what was wrong, never the value:
 * zod's own messages state expectations ("expected string"), not the rejected input.
 */
export function describeIssues(error: z.ZodError, where: string): string {
  const parts = error.issues
    .flatMap((issue) => expandUnion(issue, []))
    .slice(0, 5)
    .map((issue) => {
      const path = issue.path.map(String).join(".");
      const field = path ? `${where === "body" ? "" : where + "."}${path}` : where;
      return `${field}: ${issue.message}`;
    });
  return `invalid ${where}: ${parts.join("; ")}`;
}

type FlatIssue = { path: PropertyKey[]; message: string };

/**
 * A union's own message is a bare "Invalid input". When exactly one branch matched the value's
 * type (e.g. a TemplatedText object where a string or an object is allowed), that branch's issues
 * say what is wrong and where, so they are reported instead.
 */
function expandUnion(issue: z.core.$ZodIssue, base: PropertyKey[]): FlatIssue[] {
  const path = [...base, ...issue.path];
  if (issue.code === "invalid_union" && issue.errors.length) {
    const typed = issue.errors.filter((branch) => !branch.some((i) => i.code === "invalid_type" && i.path.length === 0));
    if (typed.length === 1 && typed[0].length) return typed[0].flatMap((i) => expandUnion(i, path));
  }
  return [{ path, message: issue.message }];
}

/** Parses `value` or throws a 400 naming the failing fields. */
export function parseOr400<T extends z.ZodType>(schema: T, value: unknown, where: string): z.output<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw badRequest(describeIssues(result.error, where));
  return result.data;
}

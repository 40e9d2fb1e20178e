import type { Context } from "hono";
import type { AppEnv } from "./app-env";

/** The request's `waitUntil`, when it has an execution context (a test may call the app without one). */
export function waitUntilOf(c: Context<AppEnv>): ((p: Promise<unknown>) => void) | undefined {
  try {
    const ctx = c.executionCtx;
    return (p) => ctx.waitUntil(p);
  } catch {
    return undefined;
  }
}

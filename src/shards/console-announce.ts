/**
 * The listing push's one side effect for the operator console (docs/console.md "Live
 * updates"): each route the push touches gets its notices (src/console/notices.ts) at its
 * ConsoleHub, fire-and-forget. The call is handed to the shard's `waitUntil`, never awaited by the
 * push, and any failure is swallowed: a console missing a notice catches up at its next read,
 * while a push that failed would hold the thread's outbox. No D1 statement is involved.
 */
import { consoleHubStub } from "../console/rpc";
import type { ListingPush } from "./rpc";
import type { Env } from "../platform/env";
import { noticesOfPush } from "../console/notices";

export function announceToConsoles(env: Env, p: ListingPush, waitUntil: (work: Promise<unknown>) => void): void {
  try {
    for (const [route, notices] of noticesOfPush(p))
      waitUntil(
        consoleHubStub(env, route)
          .notify(notices)
          .catch(() => 0),
      );
  } catch {
    // A missing binding or a stub that cannot be made: the console just hears nothing.
  }
}

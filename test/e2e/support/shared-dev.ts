/**
 * The e2e project's shared `wrangler dev` (started by test/e2e/support/shared-server.ts on first
 * use). A file may use it instead of starting its own server when all of these hold:
 *   - it needs no vars, env or start flags of its own, and never restarts or stops the server;
 *   - it does not bootstrap (the server's admin key is handed out here) nor change runtime settings;
 *   - it names its routes, tools, keys, states, topics and other records with names no other
 *     sharing file uses;
 *   - it asserts nothing another sharing file could change: no totals over the whole server (runs,
 *     metrics, the notification feed, the manifest's env references), only its own records.
 * Every sharing file's turns through the api door count against the admin key's hourly turn cap
 * (CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR, 20 by default); together they stay well below it.
 *
 * The sharing files: hooks, mcp and states (*.e2e.test.ts). The others keep their own server.
 */
import { inject } from "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    /** The loopback URL that starts the shared server on first use and answers its SharedDev. */
    e2eSharedServer: string;
  }
}

export interface SharedDev {
  baseUrl: string;
  /** An admin key of the shared server (its bootstrap key, `root`). */
  adminKey: string;
}

/** The shared server, started by the first file that asks; the others wait for the same one. */
export async function sharedDev(): Promise<SharedDev> {
  const res = await fetch(inject("e2eSharedServer"), { method: "POST" });
  if (!res.ok) throw new Error(`the shared wrangler dev did not start:\n${await res.text()}`);
  return (await res.json()) as SharedDev;
}

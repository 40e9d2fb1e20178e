/** Shared set-up for the run-trace tests. */
import { expect } from "vitest";
import { createRoute, echoKey, send } from "../../helpers/bridge";
import { admin, call, mintKey, uniq } from "../../helpers/http";
import { listingCaughtUp } from "../../helpers/listing";

/** Declares an HTTP tool answered (or not) by the fake network; answers its name. */
export async function declareHttpTool(url: string, extra: Record<string, unknown> = {}): Promise<string> {
  const title = uniq("rtool").toLowerCase();
  const r = await call("POST", "/api/tools-config/entries", {
    key: await admin(),
    body: { title, kind: "http", description: "run trace test tool", url, ...extra },
  });
  if (r.status !== 200) throw new Error(`declare failed: ${r.status} ${JSON.stringify(r.body)}`);
  return title;
}

/** An api route to `tool` bound to a key that may run it. */
export async function toolRoute(tool: string, extra: Record<string, unknown> = {}) {
  const k = tool === "echo" ? await echoKey() : await mintKey({ scopes: [`tool:${tool}`] });
  const route = await createRoute({ door: "api", target_kind: "tool", target_name: tool, execution_key: k.user_id, turns_per_hour_override: 1000, ...extra });
  return { ...route, key: k };
}

/** Sends one message and waits inline for its answer; answers the inline data. */
export async function turn(routeName: string, text: string, opts: { user?: string; key?: string } = {}) {
  const r = await send(routeName, { external_user_id: opts.user ?? "u", text, wait_seconds: 10 }, opts.key);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data as { message_id: string; thread_id: string; status: string; answer?: string };
}

/** The runs index has caught up with these threads (their pushes taken, every shard flushed). */
export async function runsCaughtUp(...threadIds: string[]): Promise<void> {
  await listingCaughtUp(...threadIds);
}

/** GET a door as admin (or `key`), expecting 200; answers `data`. */
export async function read(path: string, key?: string) {
  const r = await call("GET", path, { key: key ?? (await admin()) });
  expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
  return r.body.data;
}

/**
 * The doors of backend, fleet and system status (platform-facts B8, B9). Tag
 * `system`: reads need `system:read`; `POST /api/fleet/reload-config` is admin-only. They say only
 * what a Workers deployment can state truthfully (src/system/status.ts).
 */
import { Hono } from "hono";
import { z } from "zod";
import { baseEnvOf, isolateIdentity, isolateSettings } from "../../config/isolate-settings";
import { reloadSettings } from "../../config/overlay-writes";
import { BackendView, FleetView, KindRow, backendView, fleetView, systemKinds } from "../status";
import type { AppEnv } from "../../platform/http/app-env";
import { addRoute } from "../../platform/http/route";

export const systemRouter = new Hono<AppEnv>();

addRoute(
  systemRouter,
  {
    method: "get",
    path: "/api/backend",
    summary: "The runtime this service runs on",
    area: "system",
    auth: { tag: "system" },
    response: BackendView,
  },
  () => backendView(),
);

addRoute(
  systemRouter,
  {
    method: "get",
    path: "/api/fleet/workers",
    summary: "This isolate and the bound Durable Object namespaces",
    description:
      "Workers cannot enumerate their isolates, so `workers` lists only the isolate that answered: its name (random per isolate), when it started, the settings generation in force there and its last settings operation. `objects` are the bound Durable Object namespaces by binding name.",
    area: "system",
    auth: { tag: "system" },
    response: FleetView,
  },
  (c) => fleetView(isolateIdentity(), isolateSettings.generation(), isolateSettings.lastOp(), baseEnvOf(c.env), Date.now()),
);

addRoute(
  systemRouter,
  {
    method: "post",
    path: "/api/fleet/reload-config",
    summary: "Bump the settings generation: every isolate re-reads the overlay",
    description:
      "The same as `POST /api/config/reload`: this isolate re-reads at once, every other within `SETTINGS_REFRESH_SECONDS` (there is no bus to address isolates one by one).",
    area: "system",
    auth: { tag: "system", admin: true },
    body: z.object({}).strict(),
    bodyOptional: true,
    response: z.object({ generation: z.number().int(), resealed: z.number().int() }).strict(),
    errors: [409],
  },
  (c) => reloadSettings(c.env, c.env.DB, new Date().toISOString()),
);

addRoute(
  systemRouter,
  {
    method: "get",
    path: "/api/system/kinds",
    summary: "The pluggable kinds and what each is configured with",
    description: "Rows `{kind, state: active|default|off, plugin, detail}`; details name env vars and whether they are configured, never a value.",
    area: "system",
    auth: { tag: "system" },
    response: z.array(KindRow),
  },
  (c) => {
    const snap = isolateSettings.current();
    return systemKinds(c.get("settings"), c.env as unknown as Record<string, unknown>, {
      generation: snap?.generation ?? null,
      names: snap ? Object.keys(snap.values).length : 0,
    });
  },
);

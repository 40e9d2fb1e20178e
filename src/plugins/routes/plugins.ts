/**
 * Plugins (docs/plugins.md): the installed marketplace plugins with their console panels,
 * and the panels' static files from the content store. Tagged `plugins`; 501
 * `marketplace-not-configured` without the install store. The asset door also needs the content
 * store (501 `storage-not-configured`). `{name}` is the plugin's ref `namespace/name` and `{path}`
 * a file below its studio directory, each one URL segment (`/` as `%2F`).
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import { notFound } from "../../platform/http/errors";
import { addRoute } from "../../platform/http/route";
import { getInstalled } from "../../marketplace/installs";
import { PluginRef } from "../../marketplace/index-format";
import { PluginListing, listPlugins } from "../listing";
import { serveStudioAsset } from "../console-assets";
import { bucketIn, requireBucket } from "../../storage/bucket";
import { StoragePath } from "../../storage/paths";

export const pluginsRouter = new Hono<AppEnv>();

const DOOR = { area: "plugins", auth: { tag: "plugins" }, store: "marketplace" } as const;

addRoute(
  pluginsRouter,
  {
    method: "get",
    path: "/api/plugins",
    summary: "Installed plugins with their console panels",
    description:
      "Every installed marketplace plugin (as GET /api/marketplace/installed shows it) with `studio`: its asset directory in the content store and its panels (the HTML files at the top of that directory, each with the URL that serves it); `studio` is null when no content store is configured.",
    ...DOOR,
    response: PluginListing,
  },
  (c) => listPlugins(c.env.DB, bucketIn(c.env, c.get("settings").storage.bucketBinding)),
);

addRoute(
  pluginsRouter,
  {
    method: "get",
    path: "/api/plugins/{name}/studio/{path}",
    summary: "Serve a static file of an installed plugin's console panels",
    description:
      "Not enveloped: the file from `plugins/<ref>/studio/<path>` in the content store, typed by its extension (html, js, mjs, css, json, map, txt, svg, png, jpg, jpeg, gif, webp, ico, woff, woff2; anything else 404), with `nosniff` and a content security policy allowing only this origin's scripts, styles, images and fonts and framing by this origin. 404 when the plugin is not installed or the file is absent.",
    ...DOOR,
    params: z.object({ name: PluginRef, path: StoragePath }),
    produces: "text/html",
    alsoResponds: [{ status: 304, description: "Not modified (If-None-Match)" }],
    errors: [404],
  },
  async (c, { params }) => {
    const bucket = requireBucket(c.env, c.get("settings").storage.bucketBinding);
    if (!(await getInstalled(c.env.DB, params.name))) throw notFound("plugin not installed");
    return serveStudioAsset(bucket, params.name, params.path, c.req.raw);
  },
);

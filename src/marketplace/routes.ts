/**
 * The marketplace doors (spec §4.10 upgrade-all, §4.11; platform-facts A6; docs/marketplace.md).
 * A plugin is a versioned bundle of declarations (HTTP tools, agents, presets) published in a
 * registry index. Every door is tagged `marketplace` and answers 501 `marketplace-not-configured`
 * without MARKETPLACE_STORE_URL. Reads are `marketplace:read`; every write changes what runs with
 * whose authority, so install, preview, update, uninstall and upgrade-all are admin-only, and the
 * writes run under the fleet lock (503 + Retry-After while another holds it).
 */
import { type Context, Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../platform/http/app-env";
import { pageSchema, pagingQuery, toPage, toWindow } from "../platform/http/paging";
import { addRoute } from "../platform/http/route";
import { waitUntilOf } from "../platform/http/wait-until";
import { refuseWhileReloading } from "../config/reload-gate";
import { withFleetLock } from "./fleet-lock";
import { Category, KindName, PluginNamePart, PluginRef, Semver, findPlugin, refOf } from "./index-format";
import { InstalledPlugin, installedVersions, listInstalled } from "./installs";
import { type MarketplaceDeps, installPlugin, previewChange, uninstallPlugin, updatePlugin, upgradeAll } from "./operations";
import { pluginNotFound, registryNotConfigured } from "./refusals";
import { loadIndex } from "./registry";
import { ChangeResult, Preview, UninstallResult, UpgradeAllResult } from "./results";
import { AdvisoryView, CategoryView, KindsView, PluginDetail, PluginSummary, advisoryView, categories, kinds, pluginDetail, searchPlugins } from "./views";

export const marketplaceRouter = new Hono<AppEnv>();

const READ = { area: "marketplace", auth: { tag: "marketplace" }, store: "marketplace" } as const;
const ADMIN = { area: "marketplace", auth: { tag: "marketplace", admin: true }, store: "marketplace" } as const;

const deps = (c: Context<AppEnv>): MarketplaceDeps => ({ db: c.env.DB, settings: c.get("settings"), env: c.env });

const flag = z.enum(["true", "false"], { error: 'must be "true" or "false"' }).transform((v) => v === "true");

/** The registry is needed before the lock is taken: without one, 501 and no lock. */
function requireRegistry(c: Context<AppEnv>): void {
  if (!c.get("settings").marketplace.registry) throw registryNotConfigured();
}

addRoute(
  marketplaceRouter,
  {
    method: "get",
    path: "/api/marketplace/search",
    summary: "Search the registry's plugins",
    description:
      "Filters, all optional and combined: `q` (case-insensitive substring of namespace/name or description), `category`, `kind`, `compatible` (has a release this build installs), `installed`. Sorted by ref, offset-paged. The index is read from the registry on every call (502 when it cannot be read or is invalid; 501 `marketplace-registry-not-configured` without MARKETPLACE_REGISTRY_URL).",
    ...READ,
    query: pagingQuery.extend({
      q: z.string().trim().max(200).optional(),
      category: Category.optional(),
      kind: KindName.optional(),
      compatible: flag.optional(),
      installed: flag.optional(),
    }),
    response: pageSchema(PluginSummary),
    errors: [502],
  },
  async (c, { query }) => {
    const index = await loadIndex(c.get("settings"));
    const found = searchPlugins(index, await installedVersions(c.env.DB), query);
    const w = toWindow(query);
    return toPage(found.slice(w.offset, w.offset + w.pageSize), found.length, w);
  },
);

addRoute(
  marketplaceRouter,
  {
    method: "get",
    path: "/api/marketplace/categories",
    summary: "The registry's categories, each with how many plugins list it",
    ...READ,
    response: z.object({ items: z.array(CategoryView), total: z.number().int() }),
    errors: [502],
  },
  async (c) => {
    const items = categories(await loadIndex(c.get("settings")));
    return { items, total: items.length };
  },
);

addRoute(
  marketplaceRouter,
  {
    method: "get",
    path: "/api/marketplace/kinds",
    summary: "Declaration kinds: the ones this build installs and the ones the registry's plugins advertise",
    description: "Also names the declaration contract this build speaks (bridge-declarations 1): a plugin version is installable when it lists it.",
    ...READ,
    response: KindsView,
    errors: [502],
  },
  async (c) => kinds(await loadIndex(c.get("settings"))),
);

addRoute(
  marketplaceRouter,
  {
    method: "get",
    path: "/api/marketplace/advisories",
    summary: "The registry's advisories, each with the installed version it may affect",
    description: "Filters: `ref` (one plugin), `installed=true` (only advisories naming an installed plugin's installed version), `severity`.",
    ...READ,
    query: z.object({ ref: PluginRef.optional(), installed: flag.optional(), severity: z.enum(["low", "moderate", "high", "critical"]).optional() }),
    response: z.object({ items: z.array(AdvisoryView), total: z.number().int() }),
    errors: [502],
  },
  async (c, { query }) => {
    const index = await loadIndex(c.get("settings"));
    const installed = await installedVersions(c.env.DB);
    const items = index.plugins
      .filter((p) => !query.ref || refOf(p) === query.ref)
      .flatMap((p) => p.advisories.map((a) => advisoryView(p, a, installed)))
      .filter((a) => (!query.installed || a.affects_installed) && (!query.severity || a.severity === query.severity))
      .sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : a.id < b.id ? -1 : 1));
    return { items, total: items.length };
  },
);

addRoute(
  marketplaceRouter,
  {
    method: "get",
    path: "/api/marketplace/plugins/{ns}/{name}",
    summary: "One plugin of the registry: its versions (newest first) and advisories",
    description:
      "Namespace and name compare without case. Each version says whether this build can install it (`bundle`: ok, incompatible, invalid) and, when it can, the declarations it holds by kind. Unknown plugin 404.",
    ...READ,
    params: z.object({ ns: PluginNamePart, name: PluginNamePart }),
    response: PluginDetail,
    errors: [404, 502],
  },
  async (c, { params }) => {
    const index = await loadIndex(c.get("settings"));
    const plugin = findPlugin(index, `${params.ns}/${params.name}`.toLowerCase());
    if (!plugin) throw pluginNotFound();
    return pluginDetail(plugin, await installedVersions(c.env.DB));
  },
);

addRoute(
  marketplaceRouter,
  {
    method: "get",
    path: "/api/marketplace/installed",
    summary: "Installed plugins with their versions and the declarations each owns",
    description: "Read from the install store only (no registry call).",
    ...READ,
    response: z.object({ items: z.array(InstalledPlugin), total: z.number().int() }),
  },
  async (c) => {
    const items = await listInstalled(c.env.DB);
    return { items, total: items.length };
  },
);

const version = Semver.optional();
const force = z.boolean().default(false);

addRoute(
  marketplaceRouter,
  {
    method: "post",
    path: "/api/marketplace/install",
    summary: "Install a plugin (admin)",
    description:
      "Installs `version` (default: the latest compatible release) of `ref` (namespace/name, any case): every declaration of its bundle is validated with the kinds' own rules, then written in one D1 batch, and recorded as the plugin's. Refusals: unknown plugin or version 404; already installed 409 PLUGIN_ALREADY_INSTALLED (use update); a version this build cannot install 409 VERSION_INCOMPATIBLE / NO_COMPATIBLE_VERSION; a bundle that breaks its contract 502 PLUGIN_BUNDLE_INVALID; a declaration this deployment refuses (outbound address guard, secret-reference scope, a preset's base tool) 422 PLUGIN_DECLARATION_REFUSED with `problems`; a name held by a declaration the plugin does not own 409 DECLARATION_COLLISION with `collisions`. Runs under the fleet lock (503 + Retry-After while held elsewhere).",
    ...ADMIN,
    body: z.object({ ref: PluginRef, version }).strict(),
    response: ChangeResult,
    errors: [404, 409, 422, 502, 503],
  },
  async (c, { body }) => {
    requireRegistry(c);
    const settings = c.get("settings");
    return withFleetLock(c.env, settings, `install ${body.ref}`, async () => installPlugin(deps(c), await loadIndex(settings), body));
  },
);

addRoute(
  marketplaceRouter,
  {
    method: "post",
    path: "/api/marketplace/install/preview",
    summary: "Preview an install, or the update of an installed plugin, writing nothing (admin)",
    description:
      "Plans exactly what install (for a plugin not installed) or update (for an installed one) would do with the same body, and answers the declarations it would add, replace and remove, with the advisories naming the target version. Refuses as install and update would. Writes nothing and takes no lock.",
    ...ADMIN,
    body: z.object({ ref: PluginRef, version, force }).strict(),
    response: Preview,
    errors: [404, 409, 422, 502],
  },
  async (c, { body }) => {
    requireRegistry(c);
    return previewChange(deps(c), await loadIndex(c.get("settings")), body);
  },
);

addRoute(
  marketplaceRouter,
  {
    method: "post",
    path: "/api/marketplace/update",
    summary: "Move an installed plugin to a version (default: the latest compatible) (admin)",
    description:
      "Replaces what the plugin owns with the target version's declarations and removes what that version no longer declares, in one D1 batch (a preset whose body changed gets a new version). Moving to the installed version again re-applies it. Removing a declaration that a route, another preset or an llm agent still uses is 409 PLUGIN_IN_USE with `dependents` unless `force: true`. Not installed 404; otherwise refuses as install does. Runs under the fleet lock.",
    ...ADMIN,
    body: z.object({ ref: PluginRef, version, force }).strict(),
    response: ChangeResult,
    errors: [404, 409, 422, 502, 503],
  },
  async (c, { body }) => {
    requireRegistry(c);
    const settings = c.get("settings");
    return withFleetLock(c.env, settings, `update ${body.ref}`, async () => updatePlugin(deps(c), await loadIndex(settings), body));
  },
);

addRoute(
  marketplaceRouter,
  {
    method: "post",
    path: "/api/marketplace/uninstall",
    summary: "Uninstall a plugin: remove every declaration it owns (admin)",
    description:
      "Refused with 409 PLUGIN_IN_USE (`dependents`) while a conversation route targets one of its tools or agents, a preset outside the plugin stands on one of its HTTP tools, or an llm agent outside it lists one of its tools; `force: true` removes them anyway (the dependents then fail at run time, as after removing a declaration by hand). Needs no registry. Not installed 404. Runs under the fleet lock.",
    ...ADMIN,
    body: z.object({ ref: PluginRef, force }).strict(),
    response: UninstallResult,
    errors: [404, 409, 503],
  },
  async (c, { body }) => withFleetLock(c.env, c.get("settings"), `uninstall ${body.ref}`, async () => uninstallPlugin(deps(c), body)),
);

addRoute(
  marketplaceRouter,
  {
    method: "post",
    path: "/api/marketplace/upgrade-all",
    summary: "Move every installed plugin onto its latest compatible version (admin)",
    description:
      'No body (an empty object is accepted). One batch under one hold of the fleet lock; each installed ref gets one result `{ref, outcome, detail}`: `upgraded` ("<old> -> <new>"), `up-to-date` ("<v> is the latest compatible version", plus " (<newer> exists but does not support bridge-declarations 1)" when a newer release exists for another contract), `no-compatible-version` ("no published version supports bridge-declarations 1", same optional suffix) or `failed` (the reason). A ref\'s failure never aborts the batch. The operation-level refusals: the lock held elsewhere (503 `marketplace_locked` + Retry-After), and a settings reload in progress, i.e. the stored settings generation moved past the one in force in the answering isolate (503 `settings_reloading` `{error, code, reloading: true}` + Retry-After; the reload is started, so the retry runs on the new settings).',
    ...ADMIN,
    body: z.object({}).strict(),
    bodyOptional: true,
    response: UpgradeAllResult,
    errors: [503],
  },
  async (c) => {
    const settings = c.get("settings");
    await refuseWhileReloading(c.env, settings.config.refreshSeconds, waitUntilOf(c));
    return withFleetLock(c.env, settings, "upgrade-all", async (keepAlive) => ({ results: await upgradeAll(deps(c), () => loadIndex(settings), keepAlive) }));
  },
);

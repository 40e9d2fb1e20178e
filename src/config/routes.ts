/**
 * The doors of runtime settings and profiles (docs/runtime-settings.md).
 * Tag `config`: reads (GET, and the profile diff) need `config:read`; every write is admin-only.
 * The overlay and the profiles live in the main D1 (`DB`), which access control already needs, so
 * these doors have no store switch and work under the default `npm start`.
 */
import { Hono } from "hono";
import { z } from "zod";
import { baseEnvOf, envConfig, isolateSettings } from "./isolate-settings";
import { readOverlay } from "./overlay-store";
import { changeEnv, reloadSettings } from "./overlay-writes";
import {
  ProfileBody,
  ProfileDiff,
  ProfileName,
  ProfileSummary,
  ProfileVersion,
  ProfileView,
  applyProfile,
  deleteProfile,
  diffProfile,
  listProfiles,
  listVersions,
  pick,
  putProfile,
  rollbackProfile,
  viewOf,
} from "./profiles";
import { settingsSchema } from "./settings-schema";
import { SettingView, settingViews } from "./views";
import type { AppEnv } from "../platform/http/app-env";
import { boundedJsonObject } from "../platform/http/bounded-json";
import { MAX_BODY_BYTES } from "../platform/http/body";
import { pageSchema, pagingQuery, toPage, toWindow } from "../platform/http/paging";
import { addRoute } from "../platform/http/route";
import { SETTINGS, isOverlayable } from "../platform/settings/registry";

export const configRouter = new Hono<AppEnv>();

const READ = { area: "config", auth: { tag: "config" } } as const;
const READ_BY_POST = { area: "config", auth: { tag: "config", action: "read" } } as const;
const ADMIN = { area: "config", auth: { tag: "config", admin: true } } as const;

const nowIso = () => new Date().toISOString();
const names = z.array(z.string().max(128)).max(200);

const EnvView = z
  .object({
    generation: z.number().int(),
    in_force_generation: z.number().int().nullable(),
    settings: z.array(SettingView),
  })
  .strict();

addRoute(
  configRouter,
  {
    method: "get",
    path: "/api/config/env",
    summary: "Every setting with its source and value (secrets: only whether set)",
    description:
      "One entry per known setting (and per family member present, e.g. `NOTIFICATIONS_FROM_TWILIO`): `source` is `overlay` (the D1 overlay sets it), `env` (the Worker's env) or `default`; `value` is the text in force, absent for secrets, which only say `set`. `generation` is the overlay's stored generation, `in_force_generation` the one this isolate runs with.",
    ...READ,
    response: EnvView,
  },
  async (c) => {
    const stored = await readOverlay(c.env.DB);
    return { generation: stored.generation, in_force_generation: isolateSettings.generation(), settings: settingViews(baseEnvOf(c.env), stored.rows) };
  },
);

export const EnvChangeBody = z
  .object({
    set: boundedJsonObject(MAX_BODY_BYTES)
      .optional()
      .meta({ description: "Setting name → value (text; numbers, booleans, objects and arrays are stored as their text)." }),
    unset: names.optional().meta({ description: "Names to drop from the overlay (they fall back to the env)." }),
    secret_keys: names.optional().meta({ description: "Names of `set` to treat as secret besides the registry's secrets." }),
  })
  .strict();

addRoute(
  configRouter,
  {
    method: "post",
    path: "/api/config/env",
    summary: "Set or unset overlay settings (validated whole, atomic, bumps the generation)",
    description:
      "The Worker's env with the resulting overlay on top must pass the service's settings validation, else 400 naming the variables and nothing is written. Unknown names and env-only settings (bindings, `ACCESS_CONTROL_BOOTSTRAP_TOKEN`, `SETTINGS_*`) are 400. Secret values are sealed at rest (AES-256-GCM under `SETTINGS_ENCRYPTION_KEY`; without it a secret write is 501 `settings-encryption-not-configured`). This isolate applies the change at once, every other isolate within `SETTINGS_REFRESH_SECONDS`. 409 when another write landed meanwhile.",
    ...ADMIN,
    body: EnvChangeBody,
    response: z.object({ generation: z.number().int(), set: z.array(z.string()), unset: z.array(z.string()) }).strict(),
    errors: [409, 501],
  },
  (c, { body }) => changeEnv(c.env, c.env.DB, body, nowIso()),
);

addRoute(
  configRouter,
  {
    method: "get",
    path: "/api/config/mode",
    summary: "How this deployment reads its settings",
    ...READ,
    response: z
      .object({
        mode: z.literal("env+overlay"),
        generation: z.number().int(),
        in_force_generation: z.number().int().nullable(),
        refresh_seconds: z.number(),
        checked_at: z.string().nullable(),
        overlay_names: z.array(z.string()),
        ignored_names: z.array(z.string()),
        env_only: z.array(z.string()),
        encryption: z.enum(["configured", "not configured"]),
        valid: z.boolean(),
        errors: z.array(z.string()),
      })
      .strict(),
  },
  async (c) => {
    const base = baseEnvOf(c.env);
    const stored = await readOverlay(c.env.DB);
    const eff = await isolateSettings.forRequest(base);
    const config = envConfig(base);
    const checked = isolateSettings.checkedAtMs();
    return {
      mode: "env+overlay" as const,
      generation: stored.generation,
      in_force_generation: isolateSettings.generation(),
      refresh_seconds: isolateSettings.refreshMs(base) / 1000,
      checked_at: checked ? new Date(checked).toISOString() : null,
      overlay_names: stored.rows.filter((r) => isOverlayable(r.name)).map((r) => r.name),
      ignored_names: stored.rows.filter((r) => !isOverlayable(r.name)).map((r) => r.name),
      env_only: SETTINGS.filter((s) => !s.overlay).map((s) => s.name),
      encryption: config.keys.current ? ("configured" as const) : ("not configured" as const),
      valid: eff.result.ok,
      errors: eff.result.ok ? [] : eff.result.errors,
    };
  },
);

addRoute(
  configRouter,
  {
    method: "get",
    path: "/api/config/settings-schema",
    summary: "JSON Schema (draft 2020-12) of every setting",
    description:
      "Generated from the settings registry: types, bounds, defaults, descriptions; secrets are `writeOnly`; `x-setting.overlay` says whether the overlay may set it.",
    ...READ,
    response: z.record(z.string(), z.unknown()),
  },
  () => settingsSchema(),
);

addRoute(
  configRouter,
  {
    method: "post",
    path: "/api/config/reload",
    summary: "Bump the settings generation (every isolate re-reads the overlay)",
    description:
      "This isolate re-reads at once, every other within `SETTINGS_REFRESH_SECONDS`. Also re-seals under the current `SETTINGS_ENCRYPTION_KEY` every overlay and profile secret an older key (`SETTINGS_ENCRYPTION_KEY_PREVIOUS`) sealed.",
    ...ADMIN,
    body: z.object({}).strict(),
    bodyOptional: true,
    response: z.object({ generation: z.number().int(), resealed: z.number().int() }).strict(),
    errors: [409],
  },
  (c) => reloadSettings(c.env, c.env.DB, nowIso()),
);

// Profiles ------------------------------------------------------------------------------------

const profileParams = z.object({ name: ProfileName });
const versionParams = z.object({ name: ProfileName, version: ProfileVersion });
const versionBody = z.object({ version: z.number().int().min(1).max(1_000_000_000).optional() }).strict();

addRoute(
  configRouter,
  {
    method: "get",
    path: "/api/config/profiles",
    summary: "List settings profiles (newest version of each)",
    ...READ,
    query: pagingQuery,
    response: pageSchema(ProfileSummary),
  },
  async (c, { query }) => {
    const w = toWindow(query);
    const { items, total } = await listProfiles(c.env.DB, w.offset, w.pageSize);
    return toPage(items, total, w);
  },
);

addRoute(
  configRouter,
  {
    method: "get",
    path: "/api/config/profiles/{name}",
    summary: "Read a settings profile (its newest version; secret values are null)",
    ...READ,
    params: profileParams,
    response: ProfileView,
    errors: [404],
  },
  async (c, { params }) => viewOf(await pick(c.env.DB, params.name)),
);

addRoute(
  configRouter,
  {
    method: "put",
    path: "/api/config/profiles/{name}",
    summary: "Write a settings profile (appends a version)",
    description:
      "`env` names settings the overlay may set; the Worker's env with `env` as the overlay must pass validation (400 naming the variables). Secret entries (the registry's secrets and `secret_keys`) are sealed at rest; null for a secret keeps its value from the current version. Names starting with `@` are reserved (400).",
    ...ADMIN,
    params: profileParams,
    body: ProfileBody,
    response: z.object({ created: z.boolean(), profile: ProfileView }).strict(),
    errors: [501],
  },
  (c, { params, body }) => putProfile(c.env, c.env.DB, params.name, body, nowIso()),
);

addRoute(
  configRouter,
  {
    method: "delete",
    path: "/api/config/profiles/{name}",
    summary: "Delete a settings profile and all its versions",
    description: "The live overlay is untouched (apply copied the values).",
    ...ADMIN,
    params: profileParams,
    response: z.object({ name: z.string(), deleted: z.literal(true), versions: z.number().int() }).strict(),
    errors: [404],
  },
  async (c, { params }) => ({ name: params.name, deleted: true as const, versions: await deleteProfile(c.env.DB, params.name) }),
);

addRoute(
  configRouter,
  {
    method: "get",
    path: "/api/config/profiles/{name}/versions",
    summary: "A profile's versions, newest first",
    ...READ,
    params: profileParams,
    query: pagingQuery,
    response: pageSchema(ProfileSummary),
    errors: [404],
  },
  async (c, { params, query }) => {
    const w = toWindow(query);
    const { items, total } = await listVersions(c.env.DB, params.name, w.offset, w.pageSize);
    return toPage(items, total, w);
  },
);

addRoute(
  configRouter,
  {
    method: "get",
    path: "/api/config/profiles/{name}/versions/{version}",
    summary: "Read one version of a profile (secret values are null)",
    ...READ,
    params: versionParams,
    response: ProfileView,
    errors: [404],
  },
  async (c, { params }) => viewOf(await pick(c.env.DB, params.name, params.version)),
);

addRoute(
  configRouter,
  {
    method: "post",
    path: "/api/config/profiles/{name}/diff",
    summary: "What applying a profile (newest or a given version) would change in the live overlay",
    description:
      "Names the profile adds, removes (overlaid now, absent from the profile), changes and leaves unchanged; values of non-secrets only. A read: `config:read` suffices.",
    ...READ_BY_POST,
    params: profileParams,
    body: versionBody,
    bodyOptional: true,
    response: ProfileDiff,
    errors: [404],
  },
  (c, { params, body }) => diffProfile(c.env, c.env.DB, params.name, body.version),
);

addRoute(
  configRouter,
  {
    method: "post",
    path: "/api/config/profiles/{name}/apply",
    summary: "Make the overlay exactly a profile's env (validated, atomic, bumps the generation)",
    description:
      "Replaces the whole overlay with the profile's (newest or given) version after validating the Worker's env with it on top (400 naming the variables; nothing written).",
    ...ADMIN,
    params: profileParams,
    body: versionBody,
    bodyOptional: true,
    response: z.object({ name: z.string(), version: z.number().int(), generation: z.number().int(), names: z.array(z.string()) }).strict(),
    errors: [404, 409, 501],
  },
  (c, { params, body }) => applyProfile(c.env, c.env.DB, params.name, body.version, nowIso()),
);

addRoute(
  configRouter,
  {
    method: "post",
    path: "/api/config/profiles/{name}/rollback",
    summary: "Append a copy of an older version as the profile's newest",
    description: "The live overlay is untouched; apply the profile to put the restored version in force.",
    ...ADMIN,
    params: profileParams,
    body: z.object({ version: z.number().int().min(1).max(1_000_000_000) }).strict(),
    response: ProfileView,
    errors: [404],
  },
  (c, { params, body }) => rollbackProfile(c.env.DB, params.name, body.version, nowIso()),
);

/** Preset doors (decisions §4, spec §2.11 and §4.10): named, versioned tools over a base tool. */
import { type Context, Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../http/app-env";
import { HttpError, badRequest, notConfigured } from "../http/errors";
import { checkBindingForSave } from "../states/binding-save";
import type { StateBinding } from "../states/state-binding";
import { addRoute } from "../http/route";
import { targetNameSchema } from "../targets/names";
import {
  carryForward,
  initialBody,
  parseVersionSegment,
  presetBodyOf,
  presetCreateSchema,
  presetPatchSchema,
  presetVersionViewSchema,
  presetViewSchema,
  tagsSchema,
  versionView,
} from "../targets/presets/model";
import {
  appendVersion,
  createPreset,
  deletePreset,
  getPreset,
  getVersion,
  listPresets,
  listVersions,
  presetNotFound,
  setCurrentVersion,
  setVersionTags,
  versionNotFound,
} from "../targets/presets/store";
import { resolveBaseTool, resolveTool } from "../targets/tools/registry";

export const presetsRouter = new Hono<AppEnv>();

/**
 * A preset's state binding is checked as a target config's is (src/states/binding-save.ts): the
 * states exist, programs resolve, templates are attached on use; it needs the states store.
 */
async function checkPresetBinding(c: Context<AppEnv>, binding: StateBinding | null): Promise<void> {
  if (!binding) return;
  if (!c.get("settings").states.storeUrl) throw notConfigured("states", "a state_binding needs the states store (set STATES_STORE_URL)");
  await checkBindingForSave(c.env, binding, Date.now());
}

const nameParams = z.object({ name: targetNameSchema });
// The version stays a string here so a non-integer gets the spec's own 400 message.
const versionParams = z.object({ name: targetNameSchema, version: z.string() });

function versionOr400(segment: string): number {
  const v = parseVersionSegment(segment);
  if (v === null) throw badRequest("version must be an integer");
  return v;
}

/** A preset stands on a built-in or declared tool: not on nothing (404), not on a preset (400). */
async function assertBaseTool(db: D1Database, name: string): Promise<void> {
  if (await resolveBaseTool(db, name)) return;
  if (await resolveTool(db, name)) throw badRequest("base_tool must name a built-in or declared HTTP tool, not a preset");
  throw new HttpError(404, "base_tool not found");
}

async function presetOr404(db: D1Database, name: string) {
  const p = await getPreset(db, name);
  if (!p) throw presetNotFound();
  return p;
}

addRoute(
  presetsRouter,
  {
    method: "post",
    path: "/api/presets",
    summary: "Create a preset (version 1)",
    description:
      "A preset is a live tool name: dispatching it merges fixed_kwargs over the caller's arguments (fixed wins), validates the merge against input_schema, runs base_tool and checks the result against output_schema. The name may not be a tool's (409), nor an existing preset's (409: append versions instead). base_tool must exist (404) and not be a preset (400).",
    area: "presets",
    auth: { tag: "presets" },
    body: presetCreateSchema,
    response: presetViewSchema,
    errors: [404, 409],
  },
  async (c, { body }) => {
    await assertBaseTool(c.env.DB, body.base_tool);
    await checkPresetBinding(c, body.state_binding ?? null);
    return createPreset(c.env.DB, body.name, initialBody(body), new Date().toISOString());
  },
);

addRoute(
  presetsRouter,
  {
    method: "get",
    path: "/api/presets",
    summary: "List presets, each with its active version's body",
    area: "presets",
    auth: { tag: "presets" },
    response: z.object({ items: z.array(presetViewSchema), total: z.number().int() }),
  },
  async (c) => {
    const items = await listPresets(c.env.DB);
    return { items, total: items.length };
  },
);

addRoute(
  presetsRouter,
  {
    method: "get",
    path: "/api/presets/{name}",
    summary: "Read a preset (its active version's body and version pointers)",
    area: "presets",
    auth: { tag: "presets" },
    params: nameParams,
    response: presetViewSchema,
    errors: [404],
  },
  (c, { params }) => presetOr404(c.env.DB, params.name),
);

addRoute(
  presetsRouter,
  {
    method: "delete",
    path: "/api/presets/{name}",
    summary: "Delete a preset and every version",
    area: "presets",
    auth: { tag: "presets" },
    params: nameParams,
    response: z.object({ removed: z.literal(true), name: z.string() }),
    errors: [404],
  },
  async (c, { params }) => {
    if (!(await deletePreset(c.env.DB, params.name))) throw presetNotFound();
    return { removed: true as const, name: params.name };
  },
);

addRoute(
  presetsRouter,
  {
    method: "get",
    path: "/api/presets/{name}/versions",
    summary: "List a preset's versions, oldest first",
    area: "presets",
    auth: { tag: "presets" },
    params: nameParams,
    response: z.object({ items: z.array(presetVersionViewSchema), total: z.number().int() }),
    errors: [404],
  },
  async (c, { params }) => {
    const p = await presetOr404(c.env.DB, params.name);
    const items = (await listVersions(c.env.DB, params.name)).map((v) => versionView(v, p.current_version));
    return { items, total: items.length };
  },
);

addRoute(
  presetsRouter,
  {
    method: "post",
    path: "/api/presets/{name}/versions",
    summary: "Append a version and make it active",
    description: "Omitted fields carry forward from the active version; null clears input_schema or output_schema.",
    area: "presets",
    auth: { tag: "presets" },
    params: nameParams,
    body: presetPatchSchema,
    response: presetVersionViewSchema,
    errors: [404],
  },
  async (c, { params, body }) => {
    const p = await presetOr404(c.env.DB, params.name);
    if (body.base_tool !== undefined) await assertBaseTool(c.env.DB, body.base_tool);
    if (body.state_binding) await checkPresetBinding(c, body.state_binding);
    const v = await appendVersion(c.env.DB, params.name, carryForward(presetBodyOf(p), body), new Date().toISOString());
    return versionView(v, v.version);
  },
);

addRoute(
  presetsRouter,
  {
    method: "get",
    path: "/api/presets/{name}/versions/{version}",
    summary: "Read one preset version",
    description: "version must be an integer (else 400); an unknown version is 404. is_current is computed at read.",
    area: "presets",
    auth: { tag: "presets" },
    params: versionParams,
    response: presetVersionViewSchema,
    errors: [404],
  },
  async (c, { params }) => {
    const version = versionOr400(params.version);
    const p = await presetOr404(c.env.DB, params.name);
    const v = await getVersion(c.env.DB, params.name, version);
    if (!v) throw versionNotFound();
    return versionView(v, p.current_version);
  },
);

addRoute(
  presetsRouter,
  {
    method: "post",
    path: "/api/presets/{name}/rollback",
    summary: "Make an existing version active (no new version is written)",
    area: "presets",
    auth: { tag: "presets" },
    params: nameParams,
    body: z.object({ version: z.number().int() }).strict(),
    response: presetViewSchema,
    errors: [404],
  },
  async (c, { params, body }) => {
    await setCurrentVersion(c.env.DB, params.name, body.version, new Date().toISOString());
    return presetOr404(c.env.DB, params.name);
  },
);

addRoute(
  presetsRouter,
  {
    method: "put",
    path: "/api/presets/{name}/versions/{version}/tags",
    summary: "Replace one version's tags",
    description: "Tags are free per-version labels (duplicates in the request collapse). version must be an integer (else 400).",
    area: "presets",
    auth: { tag: "presets" },
    params: versionParams,
    body: z.object({ tags: tagsSchema }).strict(),
    response: presetVersionViewSchema,
    errors: [404],
  },
  async (c, { params, body }) => {
    const version = versionOr400(params.version);
    await setVersionTags(c.env.DB, params.name, version, [...new Set(body.tags)]);
    const p = await presetOr404(c.env.DB, params.name);
    const v = await getVersion(c.env.DB, params.name, version);
    if (!v) throw versionNotFound();
    return versionView(v, p.current_version);
  },
);

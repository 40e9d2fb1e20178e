/** Preset doors (decisions §4, spec §2.11 and §4.10): named, versioned tools over a base tool. */
import { type Context, Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import type { TargetKind } from "../../shared/kinds";
import { HttpError, badRequest, conflict, notConfigured } from "../../platform/http/errors";
import { checkBindingForSave } from "../../states/binding-save";
import type { StateBinding } from "../../shared/state-binding";
import { addRoute } from "../../platform/http/route";
import { type Principal, principalGrantsTag } from "../../access-control/principal";
import { assertMayStore, storedByOf } from "../../access-control/stored-by";
import { assertMayBind } from "../../states/binding-refs";
import { getDeclaredAgent } from "../agents/declarations";
import { targetNameSchema } from "../../shared/target-names";
import { checkAuthoredBody } from "../presets/authored";
import { PresetReferee, type RefereeKind, presetReferees } from "../presets/preset-uses";
import { renamePreset } from "../presets/rename";
import {
  type PresetBody,
  carryForward,
  initialBody,
  parseVersionSegment,
  presetBodyOf,
  presetBodySchema,
  presetCreateSchema,
  presetPatchSchema,
  presetVersionViewSchema,
  presetViewSchema,
  tagsSchema,
  versionView,
} from "../presets/model";
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
} from "../presets/store";
import { isBuiltinTool } from "../tools/builtins";
import { resolveTool } from "../tools/registry";

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

/**
 * A preset stands on a built-in or declared tool, or on a declared agent (an authored agent): not
 * on nothing (404), not on a preset (400). A tool wins over an agent of the same name.
 */
async function baseKindOf(db: D1Database, name: string): Promise<TargetKind> {
  // One resolution: a base tool, else a preset (refused), else maybe an agent.
  const tool = await resolveTool(db, name);
  if (tool && tool.kind !== "preset") return "tool";
  if (tool) throw badRequest("base_tool must name a built-in or declared tool or a declared agent, not a preset");
  if (await getDeclaredAgent(db, name)) return "agent";
  throw new HttpError(404, "base_tool not found");
}

/**
 * What making `body` a preset's active version needs of the caller (docs/security.md, "Confused
 * deputy"): whoever holds the preset's run grant runs its base with its fixed kwargs and binding,
 * so the caller must itself be allowed to run the base and to use the binding's states. Checked
 * for every body that becomes active (create, new version, rollback, rename), carried-forward
 * fields included: the caller becomes who the version runs bounded by. 403 naming the field.
 */
function assertMayActivate(caller: Principal, body: PresetBody, kind: TargetKind | null): void {
  assertMayStore(caller, "base_tool", [{ kind: kind === "agent" ? "agent" : "tool", name: body.base_tool }]);
  assertMayBind(caller, body.state_binding);
}

/** The body's own checks by what it stands on: an authored agent's fields, or a tool preset's state binding. */
async function checkBody(c: Context<AppEnv>, body: PresetBody, kind: TargetKind | null, bindingGiven: boolean): Promise<void> {
  if (kind === "agent") return checkAuthoredBody(body);
  if (bindingGiven) await checkPresetBinding(c, body.state_binding);
}

/**
 * A new preset's name: not a built-in (409), nor a declared tool or preset (409; the create
 * re-checks declared tools inside its write), nor an agent's (400: an agent's run tool has its name).
 */
async function checkNewName(db: D1Database, name: string): Promise<void> {
  if (isBuiltinTool(name)) throw conflict("name is the name of a built-in tool");
  const taken = await resolveTool(db, name);
  if (taken) throw conflict(taken.kind === "preset" ? "a preset with this name already exists" : "name is the name of a declared tool");
  if (await getDeclaredAgent(db, name)) throw badRequest("invalid body: name: is the name of an agent (an agent's run tool is named by it)");
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
      "A preset is a live tool name: dispatching it merges fixed_kwargs over the caller's arguments (fixed wins), validates the merge against input_schema, runs base_tool inside its `extensions` combos (docs/extensions.md) and checks the result against output_schema. The name may not be a tool's (409), nor an existing preset's (409: append versions instead), nor an agent's (400). base_tool must exist (404) and not be a preset (400). A base_tool naming a declared agent (and no tool) makes an authored agent: fixed_kwargs bake agent run fields (user_message, thread_id), run with POST /api/agents/authored/{name}/runs; it takes no schemas, state_binding or extensions (400).",
    area: "presets",
    auth: { tag: "presets" },
    stores: [
      { kind: "tool", at: "base_tool" },
      { kind: "state", at: "state_binding.states[].state" },
    ],
    body: presetCreateSchema,
    response: presetViewSchema,
    errors: [404, 409],
  },
  async (c, { body, principal }) => {
    const preset = initialBody(body);
    await checkNewName(c.env.DB, body.name);
    const kind = await baseKindOf(c.env.DB, body.base_tool);
    assertMayActivate(principal, preset, kind);
    await checkBody(c, preset, kind, true);
    return createPreset(c.env.DB, body.name, preset, new Date().toISOString(), storedByOf(principal));
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
    description:
      "Omitted fields carry forward from the active version; null clears input_schema, output_schema or state_binding; `extensions` replaces the combos ([] clears).",
    area: "presets",
    auth: { tag: "presets" },
    stores: [
      { kind: "tool", at: "base_tool" },
      { kind: "state", at: "state_binding.states[].state" },
    ],
    params: nameParams,
    body: presetPatchSchema,
    response: presetVersionViewSchema,
    errors: [404],
  },
  async (c, { params, body, principal }) => {
    const p = await presetOr404(c.env.DB, params.name);
    const next = carryForward(presetBodyOf(p), body);
    // A carried-forward base that has gone since is not checked (as before); a given one must exist.
    const kind = body.base_tool !== undefined ? await baseKindOf(c.env.DB, next.base_tool) : await baseKindOf(c.env.DB, next.base_tool).catch(() => null);
    assertMayActivate(principal, next, kind);
    await checkBody(c, next, kind, Boolean(body.state_binding));
    const v = await appendVersion(c.env.DB, params.name, next, new Date().toISOString(), storedByOf(principal));
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
    stores: [{ kind: "tool", at: "version" }],
    params: nameParams,
    body: z.object({ version: z.number().int() }).strict(),
    response: presetViewSchema,
    errors: [404],
  },
  async (c, { params, body, principal }) => {
    const target = await getVersion(c.env.DB, params.name, body.version);
    if (!target) {
      await presetOr404(c.env.DB, params.name);
      throw versionNotFound();
    }
    // Rolling back makes an older body active under the caller: it must hold what that body references.
    assertMayActivate(principal, target.body, await baseKindOf(c.env.DB, target.body.base_tool).catch(() => null));
    await setCurrentVersion(c.env.DB, params.name, body.version, new Date().toISOString(), storedByOf(principal));
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

addRoute(
  presetsRouter,
  {
    method: "get",
    path: "/api/presets/{name}/referees",
    summary: "What uses a preset by name",
    description:
      "`{name, referees: [{kind, name, movable}], total}`: conversation routes targeting it, its target conversation config, hooks and schedules firing it, presets whose active version stands on it, llm agents offering it in tool_names, sub-MCP endpoints exposing it. `movable` says whether a rename with move_references rewrites it (schedules and presets are not). Unknown preset 404.",
    area: "presets",
    auth: { tag: "presets" },
    params: nameParams,
    response: z.object({ name: z.string(), referees: z.array(PresetReferee), total: z.number().int() }),
    errors: [404],
  },
  async (c, { params }) => {
    await presetOr404(c.env.DB, params.name);
    const referees = await presetReferees(c.env.DB, params.name);
    return { name: params.name, referees, total: referees.length };
  },
);

addRoute(
  presetsRouter,
  {
    method: "post",
    path: "/api/presets/validate",
    summary: "Dry-run a preset create body (nothing is stored)",
    description:
      "The body of POST /api/presets, run through the same checks (schema 400, name taken 409 or an agent's 400, base_tool 404/400, an authored agent's fields 400, the state binding), storing nothing. Answers `{valid: true, name, kind: tool_preset|authored_agent, body}` with the version body a create would store.",
    area: "presets",
    auth: { tag: "presets" },
    body: presetCreateSchema,
    response: z.object({ valid: z.literal(true), name: z.string(), kind: z.enum(["tool_preset", "authored_agent"]), body: presetBodySchema }),
    errors: [404, 409],
  },
  async (c, { body, principal }) => {
    const preset = initialBody(body);
    await checkNewName(c.env.DB, body.name);
    const kind = await baseKindOf(c.env.DB, body.base_tool);
    assertMayActivate(principal, preset, kind);
    await checkBody(c, preset, kind, true);
    return { valid: true as const, name: body.name, kind: kind === "agent" ? ("authored_agent" as const) : ("tool_preset" as const), body: preset };
  },
);

/** The referee kinds the caller may rewrite: its write grants on their areas (admin for declarations). */
function movableBy(p: Principal): Set<RefereeKind> {
  const kinds = new Set<RefereeKind>();
  if (principalGrantsTag(p, "conversations", "write")) kinds.add("route").add("conversation_config");
  if (principalGrantsTag(p, "hooks", "write")) kinds.add("hook");
  if (p.admin) kinds.add("agent").add("sub_mcp");
  return kinds;
}

addRoute(
  presetsRouter,
  {
    method: "post",
    path: "/api/presets/{name}/rename",
    summary: "Rename a preset (refused while referenced, unless the references move with it)",
    description:
      "`{new_name, move_references?: false}`. One D1 batch moves the preset, every version and its tool metadata row. Referenced (GET .../referees) without move_references: 409 naming the references. With it, routes, the conversation config, hooks, llm agents' tool_names and sub-MCP tool lists are rewritten in the same batch; schedules and presets standing on it cannot move (409 naming them), and moving needs write access to each area touched (conversations:write for routes and configs, hooks:write for hooks, admin for agents and sub-MCP; else 403). new_name taken by a tool or preset 409, by an agent 400; a plugin's preset 409. Grants naming the old name (tool:<name>) are not rewritten.",
    area: "presets",
    auth: { tag: "presets" },
    stores: [{ kind: "tool", at: "{name}" }],
    params: nameParams,
    body: z.object({ new_name: targetNameSchema, move_references: z.boolean().default(false) }).strict(),
    response: z.object({ preset: presetViewSchema, renamed_from: z.string(), moved: z.array(PresetReferee) }),
    errors: [404, 409],
  },
  async (c, { params, body, principal }) => {
    // The new name runs the active version under the caller: it must hold what that version references.
    const current = await presetOr404(c.env.DB, params.name);
    const active = presetBodyOf(current);
    assertMayActivate(principal, active, await baseKindOf(c.env.DB, active.base_tool).catch(() => null));
    const moved = await renamePreset(
      c.env.DB,
      { from: params.name, to: body.new_name, move: body.move_references, mayMove: movableBy(principal), storedBy: storedByOf(principal) },
      new Date().toISOString(),
    );
    return { preset: await presetOr404(c.env.DB, body.new_name), renamed_from: params.name, moved };
  },
);

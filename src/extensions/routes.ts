/**
 * Extension doors (docs/extensions.md): the built-in catalog and each tool's combos.
 * Tagged `extensions` (GET read, POST write). A declared tool's combos live in D1; a preset's are
 * its version body's `extensions` (edited through the preset's versions); a built-in takes none.
 */
import { Hono } from "hono";
import { z } from "zod";
import { Combo, Combos, editCombos } from "./combos";
import { ExtensionView, catalogView } from "./catalog";
import { toolCombos } from "./apply";
import { updateToolCombos } from "./store";
import type { Principal } from "../access-control/principal";
import { assertMayStore, storedByOf } from "../access-control/stored-by";
import type { AppEnv } from "../platform/http/app-env";
import { HttpError, badRequest, conflict, notFound } from "../platform/http/errors";
import { addRoute } from "../platform/http/route";
import { toolNameSchema } from "../shared/tool-names";
import { type ResolvedTool, resolveTool } from "../targets/tools/registry";

export const extensionsRouter = new Hono<AppEnv>();

const DOOR = { area: "extensions", auth: { tag: "extensions" } } as const;

/**
 * Combos wrap every call of the tool, whoever makes it: their writer must be allowed to run the
 * tool itself (403 naming the path's `name`), and they wrap it only while it still is (the
 * dispatcher re-checks, src/targets/dispatch.ts).
 */
function assertMayWrap(principal: Principal, tool: string): void {
  assertMayStore(principal, "name", [{ kind: "tool", name: tool }]);
}

const ToolExtensions = z.object({
  tool: z.string(),
  /** `builtin`, `http`, `preset`, … as the registry resolves the name. */
  tool_kind: z.string(),
  /** Whether the per-tool doors may change the combos (declared tools); a preset's change through its versions. */
  editable: z.boolean(),
  combos: z.array(z.array(z.unknown())),
});

const toolParams = z.object({ name: toolNameSchema });

async function toolOr404(db: D1Database, name: string): Promise<ResolvedTool> {
  const tool = await resolveTool(db, name);
  if (!tool) throw notFound("tool not found");
  return tool;
}

async function view(db: D1Database, tool: ResolvedTool) {
  const combos = await toolCombos(db, tool);
  return { tool: tool.name, tool_kind: tool.kind, editable: tool.kind !== "builtin" && tool.kind !== "preset", combos };
}

/** Only a declared tool's combos are edited here; the refusal says where the others' are. */
function assertEditable(tool: ResolvedTool): void {
  if (tool.kind === "builtin") throw conflict("a built-in tool takes no extensions: wrap it in a preset with `extensions`");
  if (tool.kind === "preset") throw conflict("a preset's extensions are part of its versions: POST /api/presets/{name}/versions {extensions}");
}

addRoute(
  extensionsRouter,
  {
    method: "get",
    path: "/api/extensions",
    summary: "The built-in extension catalog",
    description:
      "Every extension a combo may name: `{name, kind: wrapper|transformer, description, config_schema, config_required}`, sorted by name. The catalog is fixed in code: redact, max_result_bytes, retry, cache.",
    ...DOOR,
    response: z.object({ items: z.array(ExtensionView), total: z.number().int() }),
  },
  () => {
    const items = catalogView();
    return { items, total: items.length };
  },
);

addRoute(
  extensionsRouter,
  {
    method: "get",
    path: "/api/tools/{name}/extensions",
    summary: "A tool's extension combos",
    description:
      "`{tool, tool_kind, editable, combos}`. A declared tool's combos are stored per name; a preset shows its active version's `extensions` (editable through its versions); a built-in has none. Unknown tool 404.",
    ...DOOR,
    params: toolParams,
    response: ToolExtensions,
    errors: [404],
  },
  async (c, { params }) => view(c.env.DB, await toolOr404(c.env.DB, params.name)),
);

addRoute(
  extensionsRouter,
  {
    method: "post",
    path: "/api/tools/{name}/extensions",
    summary: "Replace a declared tool's extension combos",
    description:
      "`{combos: [[element, ...], ...]}`, an element being an extension name or `{name, config}` (checked against the catalog and the extension's config schema; 400 naming the element). `[]` clears. A built-in or a preset is 409 (see GET). Unknown tool 404.",
    ...DOOR,
    stores: [{ kind: "tool", at: "{name}" }],
    params: toolParams,
    body: z.object({ combos: Combos }).strict(),
    response: ToolExtensions,
    errors: [404, 409],
  },
  async (c, { params, body, principal }) => {
    const tool = await toolOr404(c.env.DB, params.name);
    assertEditable(tool);
    assertMayWrap(principal, tool.name);
    const combos = await updateToolCombos(c.env.DB, tool.name, () => body.combos, new Date().toISOString(), storedByOf(principal));
    return { tool: tool.name, tool_kind: tool.kind, editable: true, combos };
  },
);

addRoute(
  extensionsRouter,
  {
    method: "post",
    path: "/api/tools/{name}/extensions/combos",
    summary: "Add or remove single combos on a declared tool",
    description:
      '`{add?: [combo], remove?: [combo]}` (at least one combo in all): removals first, then additions. Removing a combo the tool does not carry is 404, adding one it carries is 400, each naming the combo by its extension names; combos compare by names and parsed configs (`"retry"` equals `{name: "retry", config: {}}`). Answers the tool\'s combos after the edit.',
    ...DOOR,
    stores: [{ kind: "tool", at: "{name}" }],
    params: toolParams,
    body: z.object({ add: z.array(Combo).max(16).default([]), remove: z.array(Combo).max(16).default([]) }).strict(),
    response: ToolExtensions,
    errors: [404, 409],
  },
  async (c, { params, body, principal }) => {
    if (!body.add.length && !body.remove.length) throw badRequest("invalid body: give at least one combo in add or remove");
    const tool = await toolOr404(c.env.DB, params.name);
    assertEditable(tool);
    assertMayWrap(principal, tool.name);
    const combos = await updateToolCombos(
      c.env.DB,
      tool.name,
      (current) => {
        const r = editCombos(current, body.add, body.remove);
        if (!r.ok) throw new HttpError(r.status, r.message);
        return r.combos;
      },
      new Date().toISOString(),
      storedByOf(principal),
    );
    return { tool: tool.name, tool_kind: tool.kind, editable: true, combos };
  },
);

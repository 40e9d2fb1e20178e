/**
 * Tool metadata (docs/tool-metadata.md): an overlay for people browsing tools, folders
 * and per-tool rows (tags, badges, hidden, folder) edited with RFC 7396 merge patches. It changes
 * nothing about what a tool does or who may run it. Tagged `tools`; 501 `tool-meta-not-configured`
 * without `TOOL_META_STORE_URL`.
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../platform/http/app-env";
import { notFound } from "../platform/http/errors";
import { addRoute } from "../platform/http/route";
import { toolNameSchema } from "../shared/tool-names";
import { resolveTool } from "../targets/tools/registry";
import { FolderId, FolderName, FolderView, ToolMetaPatch, ToolMetaView } from "./model";
import { createFolder, deleteFolder, deleteToolMeta, moveFolder, patchToolMeta, renameFolder } from "./store";
import { ToolMetaOverview, toolMetaOverview, viewOf } from "./views";

export const toolMetaRouter = new Hono<AppEnv>();

const DOOR = { area: "tool-meta", auth: { tag: "tools" }, store: "tool-meta" } as const;
const folderParams = z.object({ folder_id: FolderId });
const now = () => new Date().toISOString();

addRoute(
  toolMetaRouter,
  {
    method: "get",
    path: "/api/tool-meta",
    summary: "Every folder and every tool's stored metadata",
    description:
      "Folders ordered by parent and name; tool rows by name. A row may outlive its tool (`registered: false`) until it is deleted. A tool without a row shows the defaults (GET /api/tools/tags lists every tool).",
    ...DOOR,
    response: ToolMetaOverview,
  },
  (c) => toolMetaOverview(c.env.DB),
);

addRoute(
  toolMetaRouter,
  {
    method: "post",
    path: "/api/tool-meta/folders",
    summary: "Create a folder",
    description:
      "`parent_id` null or absent: a top-level folder. Sibling names are unique (409). At most 1000 folders, 16 levels deep (409). Unknown parent 404.",
    ...DOOR,
    body: z.object({ name: FolderName, parent_id: FolderId.nullable().default(null) }).strict(),
    response: FolderView,
    errors: [404, 409],
  },
  (c, { body }) => createFolder(c.env.DB, body.name, body.parent_id, now()),
);

addRoute(
  toolMetaRouter,
  {
    method: "post",
    path: "/api/tool-meta/folders/{folder_id}/rename",
    summary: "Rename a folder",
    ...DOOR,
    params: folderParams,
    body: z.object({ name: FolderName }).strict(),
    response: FolderView,
    errors: [404, 409],
  },
  (c, { params, body }) => renameFolder(c.env.DB, params.folder_id, body.name, now()),
);

addRoute(
  toolMetaRouter,
  {
    method: "post",
    path: "/api/tool-meta/folders/{folder_id}/move",
    summary: "Move a folder under another folder (or to the top)",
    description:
      "`parent_id` null moves it to the top. Into itself or one of its descendants 409 (a cycle); past 16 levels 409; a sibling of the same name 409; unknown folder or parent 404.",
    ...DOOR,
    params: folderParams,
    body: z.object({ parent_id: FolderId.nullable() }).strict(),
    response: FolderView,
    errors: [404, 409],
  },
  (c, { params, body }) => moveFolder(c.env.DB, params.folder_id, body.parent_id, now()),
);

addRoute(
  toolMetaRouter,
  {
    method: "delete",
    path: "/api/tool-meta/folders/{folder_id}",
    summary: "Delete an empty folder",
    description: "409 while the folder holds folders or tools: move or delete them first (nothing is deleted or moved implicitly).",
    ...DOOR,
    params: folderParams,
    response: z.object({ removed: z.literal(true), folder_id: z.string() }).strict(),
    errors: [404, 409],
  },
  async (c, { params }) => {
    await deleteFolder(c.env.DB, params.folder_id);
    return { removed: true as const, folder_id: params.folder_id };
  },
);

addRoute(
  toolMetaRouter,
  {
    method: "patch",
    path: "/api/tool-meta/tools/{tool_name}",
    summary: "Edit a tool's metadata with a JSON merge patch (RFC 7396)",
    description:
      "Members: `tags` (≤ 32 unique labels of ≤ 64 characters), `badges` (≤ 16 of ≤ 32), `hidden` (true, false, or null = default), `folder_id` (a folder, or null = none). A member absent stays; null resets it to its default; an array replaces the stored one. Unknown tool 404; unknown folder 404. A row back at every default is deleted. Content type application/merge-patch+json or application/json.",
    ...DOOR,
    params: z.object({ tool_name: toolNameSchema }),
    body: ToolMetaPatch,
    response: ToolMetaView,
    errors: [404],
  },
  async (c, { params, body }) => {
    if (!(await resolveTool(c.env.DB, params.tool_name))) throw notFound("tool not found");
    return viewOf(await patchToolMeta(c.env.DB, params.tool_name, body, now()), true);
  },
);

addRoute(
  toolMetaRouter,
  {
    method: "delete",
    path: "/api/tool-meta/tools/{tool_name}",
    summary: "Delete a tool's metadata row (back to the defaults)",
    description: "Works also for a row whose tool is gone. 404 when the name has no row.",
    ...DOOR,
    params: z.object({ tool_name: toolNameSchema }),
    response: z.object({ removed: z.literal(true), name: z.string() }).strict(),
    errors: [404],
  },
  async (c, { params }) => {
    if (!(await deleteToolMeta(c.env.DB, params.tool_name))) throw notFound("no metadata for that tool");
    return { removed: true as const, name: params.tool_name };
  },
);

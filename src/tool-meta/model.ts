/**
 * Tool metadata's shapes (docs/tool-metadata.md): a folder, a tool's row and the merge-patch body
 * that edits it. Tags and badges are short labels (trimmed, non-blank, no control characters),
 * unique within a row; `hidden` is tri-state: true, false, or null for "the default" (shown).
 */
import { z } from "zod";
import { identifierSchema } from "../platform/http/identifiers";

export const MAX_TAGS = 32;
export const MAX_BADGES = 16;

const label = (max: number) => identifierSchema(max);
const uniqueLabels = (max: number, count: number) =>
  z
    .array(label(max))
    .max(count)
    .refine((a) => new Set(a).size === a.length, { message: "must not repeat a value" });

export const Tags = uniqueLabels(64, MAX_TAGS);
export const Badges = uniqueLabels(32, MAX_BADGES);
export const FolderName = identifierSchema(128);
/** A folder id as minted (`fld-` and 32 hex) or as a path names it. */
export const FolderId = z.string().regex(/^fld-[0-9a-f]{32}$/, { message: "must be a folder id (fld- and 32 hex digits)" });

export const newFolderId = () => `fld-${crypto.randomUUID().replace(/-/g, "")}`;

export const FolderView = z
  .object({ folder_id: z.string(), name: z.string(), parent_id: z.string().nullable(), created_at: z.string(), updated_at: z.string() })
  .strict();
export type FolderView = z.infer<typeof FolderView>;

/** What a tool row holds; every field has a default (the row of a tool nobody edited). */
export const ToolMetaFields = z
  .object({
    tags: Tags.default([]),
    badges: Badges.default([]),
    hidden: z.boolean().nullable().default(null),
    folder_id: FolderId.nullable().default(null),
  })
  .strict();
export type ToolMetaFields = z.infer<typeof ToolMetaFields>;

export const DEFAULT_FIELDS: ToolMetaFields = Object.freeze({ tags: [], badges: [], hidden: null, folder_id: null }) as ToolMetaFields;

export function isDefault(f: ToolMetaFields): boolean {
  return f.tags.length === 0 && f.badges.length === 0 && f.hidden === null && f.folder_id === null;
}

/**
 * The body of `PATCH /api/tool-meta/tools/{tool_name}`: an RFC 7396 merge patch of the row. A
 * member set to null goes back to its default; arrays replace the stored ones whole.
 */
export const ToolMetaPatch = z
  .object({
    tags: Tags.nullable().optional(),
    badges: Badges.nullable().optional(),
    hidden: z.boolean().nullable().optional(),
    folder_id: FolderId.nullable().optional(),
  })
  .strict();
export type ToolMetaPatch = z.infer<typeof ToolMetaPatch>;

export const ToolMetaView = z
  .object({
    name: z.string(),
    tags: z.array(z.string()),
    badges: z.array(z.string()),
    hidden: z.boolean().nullable(),
    folder_id: z.string().nullable(),
    /** Is the name a registered tool now (a row can outlive its tool)? */
    registered: z.boolean(),
    updated_at: z.string().nullable(),
  })
  .strict();
export type ToolMetaView = z.infer<typeof ToolMetaView>;

/** `GET /api/tools/tags` item (platform-facts B3). */
export const ToolTags = z.object({ name: z.string(), tags: z.array(z.string()), hidden: z.boolean().nullable(), badges: z.array(z.string()) }).strict();
export type ToolTags = z.infer<typeof ToolTags>;

/**
 * The backup document and the doors' bodies and answers (docs/backup.md):
 * `{version: 1, exported_at, sections: {<name>: [rows]}}`. The schema is the row schemas of
 * src/backup/rows.ts under their section names; an import refuses any other `version`, an unknown
 * section and an unknown field anywhere (400).
 */
import { z } from "zod";
import { MAX_JSON_DEPTH } from "../platform/http/bounded-json";
import { MAX_ROWS, SECTION_NAMES, SECTION_ROWS, type SectionName, SectionNameSchema } from "./rows";

/** The only document format this build writes and reads. */
export const BACKUP_VERSION = 1;

/**
 * How deep a document may nest: a row's free-form fields (a JSON Schema, fixed kwargs) are each
 * bounded to MAX_JSON_DEPTH by their own door's schema, and sit at most this many levels inside
 * the document.
 */
const MAX_DOCUMENT_DEPTH = MAX_JSON_DEPTH + 16;

/** The first broken bound of the whole document (depth, finite numbers), iteratively; null when none. */
function documentBoundsProblem(value: unknown): string | null {
  const stack: Array<[unknown, number]> = [[value, 0]];
  for (let top = stack.pop(); top; top = stack.pop()) {
    const [v, depth] = top;
    if (typeof v === "number" && !Number.isFinite(v)) return "numbers must be finite";
    if (typeof v !== "object" || v === null) continue;
    if (depth >= MAX_DOCUMENT_DEPTH) return `must nest at most ${MAX_DOCUMENT_DEPTH} levels`;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return null;
}

type SectionsShape = { [N in SectionName]: z.ZodOptional<z.ZodArray<(typeof SECTION_ROWS)[N]>> };

const sectionsShape = Object.fromEntries(SECTION_NAMES.map((n) => [n, z.array(SECTION_ROWS[n]).max(MAX_ROWS).optional()])) as SectionsShape;

export const BackupDocument = z
  .object({
    version: z.literal(BACKUP_VERSION, { error: `must be ${BACKUP_VERSION} (the only backup format this service reads)` }),
    exported_at: z.string().max(64),
    sections: z.object(sectionsShape).strict(),
  })
  .strict()
  .superRefine((doc, ctx) => {
    const problem = documentBoundsProblem(doc.sections);
    if (problem) ctx.addIssue({ code: "custom", path: ["sections"], message: problem });
  })
  .meta({ description: "A backup document as `POST /api/backup/export` answers it (docs/backup.md)." });
export type BackupDocument = z.infer<typeof BackupDocument>;

/** A list of section names (each known; repeats are taken once). */
const SectionList = z.array(SectionNameSchema).max(SECTION_NAMES.length * 2);

export const ExportBody = z
  .object({
    sections: SectionList.optional().meta({
      description: "Sections to export. Without it: every non-secret section whose store is configured. Secret sections only when named.",
    }),
  })
  .strict();
export type ExportBody = z.infer<typeof ExportBody>;

export const ImportBody = z
  .object({
    document: BackupDocument,
    sections: SectionList.optional().meta({ description: "Sections of the document to import. Without it: every section the document holds." }),
  })
  .strict();
export type ImportBody = z.infer<typeof ImportBody>;

export const SectionInfo = z.object({ name: SectionNameSchema, secret: z.boolean(), description: z.string() }).strict();
export type SectionInfo = z.infer<typeof SectionInfo>;

export const SectionOutcomeView = z
  .object({
    name: SectionNameSchema,
    applied: z.number().int(),
    skipped: z.array(z.object({ index: z.number().int(), reason: z.string() }).strict()).optional(),
    callback_secrets: z
      .array(z.object({ route_name: z.string(), callback_secret: z.string() }).strict())
      .optional()
      .meta({ description: "Secrets minted for api routes imported without theirs: shown here once, never again." }),
  })
  .strict();

export const ImportAnswer = z.object({ ok: z.literal(true), sections: z.array(SectionOutcomeView) }).strict();
export type ImportAnswer = z.infer<typeof ImportAnswer>;

/**
 * The composition rules of a notification (spec §4.9; platform-facts A1 "Composition rules"), as
 * one pure function: which fields may travel together, and when the message may be blank. Every
 * issue is a 400 naming the field and the rule, never a value.
 *
 * - options XOR sections; schema excludes options and sections (and location: the spec lets a
 *   form combine with media only);
 * - template is exclusive with every other content field (media, location, options, sections,
 *   header, footer, schema);
 * - header and footer need options or sections (they decorate an interactive message);
 * - the rows of all sections together are at most 100 (the cap options have);
 * - the message may be blank only for a media-only or location-only send: options, sections, a
 *   form and a template all need a non-blank message (the prompt the human answers).
 */

/** The fields the rules look at; anything typed like the send body fits. */
export interface ComposedFields {
  message: string;
  media?: readonly unknown[];
  location?: unknown;
  template?: unknown;
  options?: readonly unknown[];
  sections?: ReadonlyArray<{ rows?: readonly unknown[] }>;
  header?: unknown;
  footer?: unknown;
  schema?: unknown;
}

export interface CompositionIssue {
  field: string;
  message: string;
}

/** Rows summed across all sections may not pass this (the option cap). */
export const MAX_SECTION_ROWS = 100;

const TEMPLATE_EXCLUDES = ["media", "location", "options", "sections", "header", "footer", "schema"] as const;

/** The composition rules `b` breaks, in a stable order (none: it composes). */
export function compositionIssues(b: ComposedFields): CompositionIssue[] {
  const issues: CompositionIssue[] = [];
  const add = (field: string, message: string) => issues.push({ field, message });
  const has = (k: keyof ComposedFields) => b[k] !== undefined;

  if (has("template")) {
    for (const k of TEMPLATE_EXCLUDES) if (has(k)) add(k, "cannot be combined with template");
  }
  if (has("options") && has("sections")) add("sections", "cannot be combined with options (options XOR sections)");
  if (has("schema")) {
    if (has("options")) add("options", "cannot be combined with schema");
    if (has("sections")) add("sections", "cannot be combined with schema");
    if (has("location")) add("location", "cannot be combined with schema (a form combines with media only)");
  }
  if (!has("options") && !has("sections")) {
    if (has("header")) add("header", "needs options or sections");
    if (has("footer")) add("footer", "needs options or sections");
  }
  if (Array.isArray(b.sections)) {
    const rows = b.sections.reduce((n, s) => n + (Array.isArray(s?.rows) ? s.rows.length : 0), 0);
    if (rows > MAX_SECTION_ROWS) add("sections", `may hold at most ${MAX_SECTION_ROWS} rows in all`);
  }
  if (typeof b.message === "string" && b.message.trim() === "") {
    const carrier = has("media") || has("location");
    const needsPrompt = has("options") || has("sections") || has("schema") || has("template");
    if (!carrier || needsPrompt) {
      add(
        "message",
        needsPrompt
          ? "must not be blank when options, sections, schema or template is set"
          : "must not be blank unless media or a location carries the notification",
      );
    }
  }
  return issues;
}

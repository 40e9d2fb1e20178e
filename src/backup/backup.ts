/**
 * Export and import of a backup document (docs/backup.md).
 *
 * Export reads each chosen section's rows. Import validates EVERY chosen section first (the
 * shapes already passed the body schema; here: the doors' rules and the cross-references, reading
 * the deployment and writing nothing), then applies the sections in order, each as one D1 batch
 * (the states through their objects). A refusal while validating is a 400 with nothing written;
 * a failure while applying answers the error with the sections already applied (`applied`).
 */
import { storeRefusal } from "../platform/http/route";
import { badRequest } from "../platform/http/errors";
import { BACKUP_VERSION, type BackupDocument, type ImportAnswer, type SectionInfo } from "./document";
import { SECTIONS } from "./registry";
import type { SectionName, SectionRows } from "./rows";
import { type ExportContext, type ImportContext, type SectionOutcome, stoppedAt } from "./section";

/** The sections, as `GET /api/backup/sections` lists them. */
export function sectionInfos(): SectionInfo[] {
  return SECTIONS.map((s) => ({ name: s.name, secret: s.secret, description: s.description }));
}

/** The document's file name for a download: `bridge-backup-<UTC timestamp>.json`. */
export function backupFileName(at: Date): string {
  return `bridge-backup-${at
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z")}.json`;
}

/** Refuses (501) a named section whose store is not configured. */
function assertStores(names: readonly SectionName[], ctx: ExportContext): void {
  for (const s of SECTIONS) {
    if (!names.includes(s.name) || !s.store) continue;
    const refusal = storeRefusal(s.store, ctx.settings);
    if (refusal) throw refusal;
  }
}

/**
 * Which sections an export writes: the named ones (in apply order), or else every non-secret
 * section whose store is configured. A secret section is only ever exported by name.
 */
export function exportSelection(requested: readonly SectionName[] | undefined, ctx: ExportContext): SectionName[] {
  if (requested) {
    const names = SECTIONS.filter((s) => requested.includes(s.name)).map((s) => s.name);
    assertStores(names, ctx);
    return names;
  }
  return SECTIONS.filter((s) => !s.secret && (!s.store || !storeRefusal(s.store, ctx.settings))).map((s) => s.name);
}

export async function exportDocument(names: readonly SectionName[], ctx: ExportContext, now: Date): Promise<BackupDocument> {
  const sections: Record<string, unknown[]> = {};
  for (const s of SECTIONS) if (names.includes(s.name)) sections[s.name] = await s.exportRows(ctx);
  return { version: BACKUP_VERSION, exported_at: now.toISOString(), sections: sections as BackupDocument["sections"] };
}

/** Which sections an import applies: the named ones (each must be in the document), or every one the document holds. */
function importSelection(doc: BackupDocument, requested: readonly SectionName[] | undefined): SectionName[] {
  const present = (n: SectionName) => doc.sections[n] !== undefined;
  if (!requested) return SECTIONS.map((s) => s.name).filter(present);
  const missing = requested.findIndex((n) => !present(n));
  if (missing >= 0) throw badRequest(`invalid body: sections.${missing}: the document holds no such section`);
  return SECTIONS.map((s) => s.name).filter((n) => requested.includes(n));
}

export async function importDocument(
  doc: BackupDocument,
  requested: readonly SectionName[] | undefined,
  base: Omit<ImportContext, "rows" | "memo">,
): Promise<ImportAnswer> {
  const names = importSelection(doc, requested);
  assertStores(names, base);
  const rows: SectionRows = {};
  for (const n of names) (rows as Record<string, unknown>)[n] = doc.sections[n];
  const ctx: ImportContext = { ...base, rows, memo: new Map() };
  const chosen = SECTIONS.filter((s) => names.includes(s.name));
  // Everything is checked before anything is written.
  const plans = new Map<SectionName, unknown>();
  for (const s of chosen) plans.set(s.name, await s.validate(rows[s.name] ?? [], ctx));
  const outcomes: SectionOutcome[] = [];
  for (const s of chosen) {
    try {
      outcomes.push({ name: s.name, ...(await s.apply(plans.get(s.name), ctx)) });
    } catch (err) {
      throw stoppedAt(s.name, err, outcomes);
    }
  }
  return { ok: true, sections: outcomes };
}

/**
 * The doors of backup export and import (spec §4.11 "Backend, backup, channels";
 * platform-facts C "Backup"; docs/backup.md). Every door is admin-only: a backup carries authority
 * (key hashes, secrets, the whole configuration), and an import rewrites it.
 */
import { Hono } from "hono";
import { z } from "zod";
import { backupFileName, exportDocument, exportSelection, importDocument, sectionInfos } from "./backup";
import { ExportBody, ImportAnswer, ImportBody, SectionInfo } from "./document";
import type { AppEnv } from "../platform/http/app-env";
import { addRoute } from "../platform/http/route";

export const backupRouter = new Hono<AppEnv>();

const AREA = "backup";
const ADMIN = { tag: "backup", admin: true } as const;

addRoute(
  backupRouter,
  {
    method: "get",
    path: "/api/backup/sections",
    summary: "List the backup sections, in the order an import applies them (admin)",
    description:
      "`secret: true` sections (keys, target-secrets, route-secrets, hook-secrets, settings-secrets) hold credentials or secret values; an export writes them only when named.",
    area: AREA,
    auth: ADMIN,
    response: z.array(SectionInfo),
  },
  () => sectionInfos(),
);

addRoute(
  backupRouter,
  {
    method: "post",
    path: "/api/backup/export",
    summary: "Export a backup document (admin): the raw JSON document as an attachment, not enveloped",
    description:
      'Answers `{version: 1, exported_at, sections: {<name>: [rows]}}` itself (no `{data}` envelope), with `content-disposition: attachment; filename="bridge-backup-<timestamp>.json"`. Without `sections`: every non-secret section whose store is configured; a secret section only when named. Naming a section whose store is not configured is 501 `<store>-not-configured`; an unknown name is 400. A document with secret sections holds key hashes and secrets in plain text: keep it like the database.',
    area: AREA,
    auth: ADMIN,
    body: ExportBody,
    bodyOptional: true,
    produces: "application/json",
    errors: [409, 501],
  },
  async (c, { body }) => {
    const ctx = { env: c.env, db: c.env.DB, settings: c.get("settings") };
    const now = new Date();
    const doc = await exportDocument(exportSelection(body.sections, ctx), ctx, now);
    return new Response(JSON.stringify(doc), {
      status: 200,
      headers: {
        "content-type": "application/json; charset=utf-8",
        "content-disposition": `attachment; filename="${backupFileName(now)}"`,
        "cache-control": "no-store",
      },
    });
  },
);

addRoute(
  backupRouter,
  {
    method: "post",
    path: "/api/backup/import",
    summary: "Import a backup document (admin): validate every section, then apply each atomically",
    description:
      "`document` must be version 1. Without `sections`: every section the document holds; a named section the document lacks is 400. Every chosen section is validated first with the doors' own rules and cross-references (a route's target and execution key must exist in the deployment or in this import, the address guard on URLs, …): any refusal is 400 naming the section, the row index and the field, and nothing is written. Then the sections apply in the order of `GET /api/backup/sections`, each as one D1 batch (states through their objects): entries are upserted by their natural key and entries not in the document are left alone. The importing key's own row of `keys` is skipped. An api route imported without its callback secret keeps the deployment's or gets a new one, shown once in `callback_secrets`. A failure while applying answers the error with `applied`: the sections written before it. The body cap is the service's 1 MiB.",
    area: AREA,
    auth: ADMIN,
    body: ImportBody,
    response: ImportAnswer,
    errors: [409, 501],
  },
  (c, { body, principal }) => {
    const now = new Date();
    return importDocument(body.document, body.sections, {
      env: c.env,
      db: c.env.DB,
      settings: c.get("settings"),
      principal,
      nowIso: now.toISOString(),
      nowMs: now.getTime(),
    });
  },
);

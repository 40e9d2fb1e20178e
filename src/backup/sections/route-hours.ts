/**
 * The `route-hours` section (docs/backup.md, docs/inbox.md "Business hours"): each route's business
 * hours as D1 keeps them. An import checks every row with the hours door's own schema and against
 * the routes as they will be (the deployment's and this import's), then upserts them in one batch;
 * the hours' triggers bump their routes' epochs, so the caches see them at the next message.
 */
import { BusinessHours } from "../../conversations/business-hours";
import { allBusinessHours, putBusinessHoursStatement } from "../../conversations/inbox-policy";
import { listRoutes } from "../../conversations/store";
import type { RouteHoursBackupRow } from "../rows";
import { defineSection, parseAtRow, refuseDuplicates, rowFault, runBatch } from "../section";

const S = "route-hours";

export const routeHoursSection = defineSection({
  name: S,
  secret: false,
  description: "Routes' business hours: time zone, weekly intervals, away message, expected reply time, locale and what the agent does out of hours.",
  store: "conversations",
  exportRows: async (ctx): Promise<RouteHoursBackupRow[]> => allBusinessHours(ctx.db),
  async validate(rows, ctx) {
    refuseDuplicates(S, rows, (r) => r.route_name, "route_name");
    const routes = new Set([...(await listRoutes(ctx.db)).map((r) => r.route_name), ...(ctx.rows.routes ?? []).map((r) => r.route_name)]);
    return rows.map((r, i) => {
      if (!routes.has(r.route_name)) throw rowFault(S, i, "route_name", "names no route of the deployment or this import");
      return { ...r, hours: parseAtRow(S, i, "hours", BusinessHours, r.hours) };
    });
  },
  async apply(rows, ctx) {
    await runBatch(
      ctx.db,
      rows.map((r) => putBusinessHoursStatement(ctx.db, r.route_name, r.hours, r.updated_at, r.updated_by)),
    );
    return { applied: rows.length };
  },
});

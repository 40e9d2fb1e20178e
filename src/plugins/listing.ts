/**
 * `GET /api/plugins` (docs/plugins.md): the installed marketplace plugins (D1
 * `marketplace_installs`, src/marketplace/installs.ts) with their console panels, the HTML pages
 * at the top of each one's studio directory in the content store.
 */
import { z } from "zod";
import { InstalledPlugin, listInstalled } from "../marketplace/installs";
import { studioDir, studioPanels } from "./console-assets";

export const StudioView = z
  .object({
    dir: z.string(),
    panels: z.array(z.object({ path: z.string(), url: z.string() }).strict()),
  })
  .strict();

export const PluginView = InstalledPlugin.extend({
  /** The plugin's console assets; null when no content store is configured. */
  studio: StudioView.nullable(),
}).strict();
export type PluginView = z.infer<typeof PluginView>;

export const PluginListing = z.object({ items: z.array(PluginView), total: z.number().int(), storage: z.boolean() }).strict();
export type PluginListing = z.infer<typeof PluginListing>;

export async function listPlugins(db: D1Database, bucket: R2Bucket | null): Promise<PluginListing> {
  const installed = await listInstalled(db);
  const items = await Promise.all(
    installed.map(async (p) => ({ ...p, studio: bucket ? { dir: studioDir(p.ref), panels: await studioPanels(bucket, p.ref) } : null })),
  );
  return { items, total: items.length, storage: bucket !== null };
}

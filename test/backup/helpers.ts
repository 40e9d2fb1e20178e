/** Shared steps of the backup tests: export, import, and "a fresh deployment" made by wiping D1. */
import { env } from "cloudflare:workers";
import { publishAccessChanges } from "../../src/platform/epochs/publish";
import { admin, call } from "../helpers/http";

/** Every section name, as the sections door lists them. */
export async function sectionNames(): Promise<string[]> {
  const r = await call("GET", "/api/backup/sections", { key: await admin() });
  if (r.status !== 200) throw new Error(`sections failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data.map((s: { name: string }) => s.name);
}

export async function exportDoc(sections?: string[], key?: string) {
  return call("POST", "/api/backup/export", { key: key ?? (await admin()), body: sections ? { sections } : undefined });
}

/** Exports and returns the raw document (fails the test on a non-200). */
export async function exported(sections?: string[]): Promise<any> {
  const r = await exportDoc(sections);
  if (r.status !== 200) throw new Error(`export failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

export async function importDoc(document: unknown, sections?: string[], key?: string) {
  return call("POST", "/api/backup/import", { key: key ?? (await admin()), body: sections ? { document, sections } : { document } });
}

/**
 * Simulates a fresh deployment in this test file's D1: every table the backup covers is emptied,
 * except the test admin's own key (`root`), which stands for the new deployment's bootstrapped
 * admin. The listing tables go too, so nothing of the old routes' threads is left.
 */
export async function wipeDeployment(): Promise<void> {
  const tables = [
    "routes",
    "threads",
    "failed_records",
    "roles",
    "role_versions",
    "auth_scopes",
    "public_routes",
    "text_resources",
    "tool_declarations",
    "agent_declarations",
    "preset_versions",
    "presets",
    "conversation_configs",
    "state_templates",
    "states",
    "settings_overlay",
    "config_profiles",
    "tool_meta_folders",
    "tool_meta_tools",
    "hooks",
    "hook_verifiers",
    "hook_trigger_links",
    "canned_responses",
    "route_hours",
  ];
  await env.DB.batch([
    ...tables.map((t) => env.DB.prepare(`DELETE FROM ${t}`)),
    env.DB.prepare("DELETE FROM api_keys WHERE user_id <> 'root'"),
    env.DB.prepare("DELETE FROM api_key_versions WHERE user_id <> 'root'"),
  ]);
  // A fresh deployment's isolates cache nothing: what the wipe changed is published to the caches.
  await publishAccessChanges(env);
}

export async function count(sql: string, ...binds: unknown[]): Promise<number> {
  return Number(
    (
      await env.DB.prepare(sql)
        .bind(...binds)
        .first<{ n: number }>()
    )?.n ?? 0,
  );
}

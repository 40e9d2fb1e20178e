/**
 * The providers catalog (spec §2.9, §4.10; platform-facts A2). Providers are operator configuration
 * (`CONNECTORS_PROVIDERS`, validated with the settings), so they list with or without a store;
 * categories come from the connector store (D1 `connector_categories`), empty without one.
 *
 * A view carries exactly §2.9's fields: never the oauth block (endpoints, client id and client
 * secret env names), which is how the service talks to the provider, not what a caller picks from.
 */
import { z } from "zod";
import { all, d1 } from "../platform/persistence/d1";
import type { ProviderDescriptor } from "../platform/settings/connector-settings";

export const SubServiceView = z.object({ id: z.string(), display_name: z.string(), description: z.string(), scopes: z.array(z.string()) });
export type SubServiceView = z.infer<typeof SubServiceView>;

export const ConfigFieldView = z.object({ key: z.string(), label: z.string(), target: z.enum(["env", "header"]), required: z.boolean(), secret: z.boolean() });
export type ConfigFieldView = z.infer<typeof ConfigFieldView>;

export const ProviderView = z.object({
  id: z.string(),
  display_name: z.string(),
  description: z.string(),
  icon_url: z.string(),
  kind: z.enum(["oauth", "none"]),
  origin: z.enum(["system", "community"]),
  category: z.string(),
  sub_services: z.array(SubServiceView),
  config_fields: z.array(ConfigFieldView),
});
export type ProviderView = z.infer<typeof ProviderView>;

export const CategoryView = z.object({ id: z.string(), display_name: z.string(), sort_order: z.number().int() });
export type CategoryView = z.infer<typeof CategoryView>;

export const ProvidersCatalog = z.object({ categories: z.array(CategoryView), providers: z.array(ProviderView) });
export type ProvidersCatalog = z.infer<typeof ProvidersCatalog>;

/** The listing's view of a descriptor: picked field by field, so nothing else can slip in. */
export function providerView(p: ProviderDescriptor): ProviderView {
  return {
    id: p.id,
    display_name: p.display_name,
    description: p.description,
    icon_url: p.icon_url,
    kind: p.kind,
    origin: p.origin,
    category: p.category,
    sub_services: p.sub_services.map((s) => ({ id: s.id, display_name: s.display_name, description: s.description, scopes: [...s.scopes] })),
    config_fields: p.config_fields.map((f) => ({ key: f.key, label: f.label, target: f.target, required: f.required, secret: f.secret })),
  };
}

export function findProvider(providers: readonly ProviderDescriptor[], id: string): ProviderDescriptor | null {
  return providers.find((p) => p.id === id) ?? null;
}

/** The scopes to ask for: every named sub-service's, first appearance first, each once. */
export function scopesFor(provider: ProviderDescriptor, subServices: readonly string[]): string[] {
  const out: string[] = [];
  for (const id of subServices) {
    for (const s of provider.sub_services.find((x) => x.id === id)?.scopes ?? []) if (!out.includes(s)) out.push(s);
  }
  return out;
}

/** The first entry of `subServices` that is not one of the provider's (its index), or -1. */
export function unknownSubService(provider: ProviderDescriptor, subServices: readonly string[]): number {
  return subServices.findIndex((id) => !provider.sub_services.some((s) => s.id === id));
}

const CategoryRow = z.object({ id: z.string(), display_name: z.string(), sort_order: z.number() });

/** The categories, by `sort_order` then id. */
export async function listCategories(db: D1Database): Promise<CategoryView[]> {
  const rows = await all(CategoryRow, d1(db)`SELECT id, display_name, sort_order FROM connector_categories ORDER BY sort_order, id`);
  return rows.map((r) => ({ id: r.id, display_name: r.display_name, sort_order: Number(r.sort_order) }));
}

/** The built-in extension catalog (docs/extensions.md): fixed in code, one module each. */
import { z } from "zod";
import { cache } from "./cache";
import { maxResultBytes } from "./max-result-bytes";
import type { ExtensionDef } from "./model";
import { redact } from "./redact";
import { retry } from "./retry";

export const EXTENSIONS: ReadonlyMap<string, ExtensionDef> = new Map([redact, maxResultBytes, retry, cache].map((e) => [e.name, e] as const));

/** One `GET /api/extensions` item. */
export const ExtensionView = z.object({
  name: z.string(),
  kind: z.enum(["wrapper", "transformer"]),
  description: z.string(),
  /** JSON Schema (draft 2020-12) of the `config` the extension takes; `{}` is valid when every field has a default. */
  config_schema: z.record(z.string(), z.unknown()),
  /** Whether the bare name (no config) is a valid element. */
  config_required: z.boolean(),
});
export type ExtensionView = z.infer<typeof ExtensionView>;

function view(e: ExtensionDef): ExtensionView {
  const schema = z.toJSONSchema(e.config, { target: "draft-2020-12", io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  delete schema.$schema;
  return { name: e.name, kind: e.kind, description: e.description, config_schema: schema, config_required: !e.config.safeParse({}).success };
}

/** The catalog, sorted by name. */
export function catalogView(): ExtensionView[] {
  return [...EXTENSIONS.values()].map(view).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

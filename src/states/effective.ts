/**
 * What a StateStore keeps about its state besides records: the stored declaration and the
 * attachments, and the effective schema and regimes composed from them (src/states/effective-schema.ts).
 * One definition of each stored shape, validated when read back.
 */
import { z } from "zod";
import { JsonObject, JsonValue } from "../platform/http/bounded-json";
import { parseStored } from "../platform/persistence/stored-json";
import { composeEffectiveSchema } from "./effective-schema";
import { Regime } from "./ops";

export const StoredDeclaration = z.object({
  name: z.string(),
  description: z.string(),
  schema: JsonValue,
  resolved_schema: JsonObject,
  subject_kinds: z.array(z.string()),
  default_subject_kind: z.string(),
  retention_days: z.number().int().nullable(),
  updated_at: z.string(),
});
export type StoredDeclaration = z.infer<typeof StoredDeclaration>;

/** A template attached on the state: where its fragment lands, and what it was attached with. */
export const StoredAttachment = z.object({
  template: z.string(),
  path: z.array(z.string()),
  parameters: JsonObject,
  declarations: JsonObject,
  options: JsonObject,
  /** The template's schema fragment with its parameters substituted, as attached. */
  fragment: JsonObject,
  /** The template's regime rules, relative to `path`. */
  regimes: z.array(Regime),
  /** The template's jq programs as attached (name → program document). */
  programs: JsonObject,
});
export type StoredAttachment = z.infer<typeof StoredAttachment>;

export function parseAttachments(raw: string | null): StoredAttachment[] {
  return raw ? parseStored(z.array(StoredAttachment), raw, "state attachments") : [];
}

export type Effective = { ok: true; schema: JsonObject; regimes: Regime[] } | { ok: false; error: string };

/** The declaration's base schema composed with every attachment. */
export function effectiveOf(decl: Pick<StoredDeclaration, "resolved_schema">, attachments: StoredAttachment[]): Effective {
  const r = composeEffectiveSchema(
    decl.resolved_schema,
    attachments.map((a) => ({ template: a.template, path: a.path, fragment: a.fragment, regimes: a.regimes })),
  );
  return r.ok ? { ok: true, schema: r.schema as JsonObject, regimes: r.regimes as Regime[] } : { ok: false, error: r.error };
}

/**
 * `GET /api/config/settings-schema`: a JSON Schema (draft 2020-12) of the settings document,
 * generated from the registry (src/platform/settings/registry.ts), so it cannot drift from what the service
 * reads. One property per setting with its type, bounds, default and description; families
 * (`NOTIFICATIONS_FROM_<CHANNEL>`) as `patternProperties`; secrets are `writeOnly`.
 *
 * The schema types values as what they mean (an integer, a boolean, an object). The env and the
 * overlay carry every value as text; `POST /api/config/env` also takes the typed value and stores
 * its text. The `x-setting` keyword says how each value is written and whether the overlay may
 * set it.
 */
import { SETTINGS, type SettingDefinition } from "../platform/settings/registry";

export const SCHEMA_ID = "urn:conversation-bridge:settings";

type Schema = Record<string, unknown>;

function valueSchema(s: SettingDefinition): Schema {
  const out: Schema = {};
  switch (s.type) {
    case "integer":
    case "number":
      out.type = s.type;
      if (s.minimum !== undefined) out.minimum = s.minimum;
      if (s.maximum !== undefined) out.maximum = s.maximum;
      if (s.exclusiveMinimum !== undefined && s.minimum === undefined) out.exclusiveMinimum = s.exclusiveMinimum;
      break;
    case "boolean":
      out.type = "boolean";
      break;
    case "enum":
      out.type = "string";
      out.enum = [...(s.enum ?? [])];
      break;
    case "store-url":
      out.type = "string";
      out.pattern = "^(d1://[A-Za-z_][A-Za-z0-9_]*)?$";
      break;
    case "url":
      out.type = "string";
      out.format = "uri";
      break;
    case "list":
      out.type = "string";
      out.description = "comma-separated";
      break;
    case "json-object":
      out.type = "object";
      out.additionalProperties = { type: "integer", exclusiveMinimum: 0 };
      break;
    case "json-array":
      out.type = "array";
      out.items = { type: "object" };
      break;
    default:
      out.type = "string";
  }
  return out;
}

function propertyOf(s: SettingDefinition): Schema {
  const out: Schema = { ...valueSchema(s), title: s.name, description: s.description };
  // A default of null means "unset": nothing to state.
  if (s.default !== null) out.default = s.default;
  if (s.secret) out.writeOnly = true;
  out["x-setting"] = { area: s.area, env_type: s.type, secret: s.secret, overlay: s.overlay };
  return out;
}

/** The schema, built once per isolate (the registry is constant). */
let built: Schema | null = null;

export function settingsSchema(): Schema {
  if (built) return built;
  const properties: Record<string, Schema> = {};
  const patternProperties: Record<string, Schema> = {};
  for (const s of SETTINGS) {
    if (s.family) patternProperties[s.family.source] = propertyOf(s);
    else properties[s.name] = propertyOf(s);
  }
  built = {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: SCHEMA_ID,
    title: "Conversation bridge settings",
    description:
      "Every env setting of the service (docs/operations.md, docs/runtime-settings.md). Values are carried as text in the env and in the overlay; this schema types them as what they mean. writeOnly marks secrets, which no door ever shows.",
    type: "object",
    properties,
    patternProperties,
    additionalProperties: false,
  };
  return built;
}

/**
 * The declaration contract this build speaks (docs/marketplace.md "Compatibility").
 *
 * A plugin version lists the contract versions its bundle is written for; this build installs a
 * version only when it lists `bridge-declarations` 1. Version 1's bundle is the object below: one
 * section per declaration kind, each entry exactly the body the kind's own door takes (so a bundle
 * entry and an operator's request are validated by the same schema). A later kind (state
 * templates, connector providers) is a new section under a new contract version; a registry
 * keeps listing 1 only for bundles that use none of it, and this build refuses an unknown section.
 */
import { z } from "zod";
import { agentDeclarationSchema } from "../targets/agents/declarations";
import { presetCreateSchema } from "../targets/presets/model";
import { httpToolDeclarationSchema } from "../targets/tools/http-tools";

/** The contract's name, as registries list it. */
export const DECLARATION_CONTRACT = "bridge-declarations";
/** The one version of it this build speaks. */
export const DECLARATION_CONTRACT_VERSION = 1;
/** `bridge-declarations 1`: how outcome details and refusals name the contract. */
export const CONTRACT_LABEL = `${DECLARATION_CONTRACT} ${DECLARATION_CONTRACT_VERSION}`;

/** Most declarations of one kind in one bundle. */
export const MAX_DECLARATIONS_PER_KIND = 64;

/** The declaration kinds this build installs, with the bundle section that holds each. */
export const DECLARATION_KINDS = [
  { kind: "http_tool", section: "http_tools", description: "An HTTP tool: the body of POST /api/tools-config/entries." },
  { kind: "agent", section: "agents", description: "A declared llm or http agent: the body of POST /api/agents-config/entries." },
  { kind: "preset", section: "presets", description: "A preset over a built-in or declared tool: the body of POST /api/presets (without state_binding)." },
] as const;

export type DeclarationKind = (typeof DECLARATION_KINDS)[number]["kind"];
export type BundleSection = (typeof DECLARATION_KINDS)[number]["section"];

export const KNOWN_KINDS: ReadonlySet<string> = new Set(DECLARATION_KINDS.map((k) => k.kind));

/**
 * A preset in a bundle: the preset door's body, but a state binding is not accepted. States belong
 * to the operator, and a binding attaches templates to them when saved, which an install (and
 * above all a preview, which writes nothing) must not do.
 */
export const PluginPreset = presetCreateSchema.refine((p) => p.state_binding === undefined || p.state_binding === null, {
  message: "a plugin preset carries no state_binding (bridge-declarations 1)",
  path: ["state_binding"],
});
export type PluginPreset = z.infer<typeof PluginPreset>;

/** Bundle (bridge-declarations 1): what one plugin version declares. */
export const DeclarationBundle = z
  .object({
    http_tools: z.array(httpToolDeclarationSchema).max(MAX_DECLARATIONS_PER_KIND).default([]),
    agents: z.array(agentDeclarationSchema).max(MAX_DECLARATIONS_PER_KIND).default([]),
    presets: z.array(PluginPreset).max(MAX_DECLARATIONS_PER_KIND).default([]),
  })
  .strict()
  .superRefine((b, ctx) => {
    for (const problem of bundleProblems(b)) ctx.addIssue({ code: "custom", message: problem.message, path: problem.path });
  });
export type DeclarationBundle = z.infer<typeof DeclarationBundle>;

/**
 * What makes a bundle inconsistent in itself (pure): no declarations at all, a name twice in one
 * kind, a tool and a preset of the same name (both are tool names), a preset over a preset.
 */
export function bundleProblems(b: DeclarationBundle): Array<{ path: Array<string | number>; message: string }> {
  const out: Array<{ path: Array<string | number>; message: string }> = [];
  if (!b.http_tools.length && !b.agents.length && !b.presets.length) out.push({ path: [], message: "declares nothing" });
  const seen = (names: string[], section: string) =>
    names.forEach((n, i) => {
      if (names.indexOf(n) !== i) out.push({ path: [section, i], message: "declares a name twice" });
    });
  seen(
    b.http_tools.map((t) => t.title),
    "http_tools",
  );
  seen(
    b.agents.map((a) => a.title),
    "agents",
  );
  seen(
    b.presets.map((p) => p.name),
    "presets",
  );
  const tools = new Set(b.http_tools.map((t) => t.title));
  const presets = new Set(b.presets.map((p) => p.name));
  b.presets.forEach((p, i) => {
    if (tools.has(p.name)) out.push({ path: ["presets", i, "name"], message: "is also the title of one of the bundle's HTTP tools" });
    if (presets.has(p.base_tool)) out.push({ path: ["presets", i, "base_tool"], message: "names one of the bundle's presets; a preset stands on a tool" });
  });
  return out;
}

/** The kinds a bundle uses (its non-empty sections). */
export function bundleKinds(b: DeclarationBundle): DeclarationKind[] {
  return DECLARATION_KINDS.filter((k) => b[k.section].length > 0).map((k) => k.kind);
}

/** Declaration names per kind (the shape views show). */
export const DeclarationNames = z.object({
  http_tools: z.array(z.string()),
  agents: z.array(z.string()),
  presets: z.array(z.string()),
});
export type DeclarationNames = z.infer<typeof DeclarationNames>;

export function bundleNames(b: DeclarationBundle): DeclarationNames {
  return { http_tools: b.http_tools.map((t) => t.title), agents: b.agents.map((a) => a.title), presets: b.presets.map((p) => p.name) };
}

/** A contract support list (`{"bridge-declarations": [1, 2]}`) includes this build's contract. */
export function supportsContract(contracts: Readonly<Record<string, readonly number[]>>): boolean {
  return Object.prototype.hasOwnProperty.call(contracts, DECLARATION_CONTRACT) && contracts[DECLARATION_CONTRACT].includes(DECLARATION_CONTRACT_VERSION);
}

/**
 * The names an llm agent's tools go by in the model's function list (docs/mcp.md). An
 * OpenAI-compatible endpoint takes function names of 1-64 letters, digits, `_` and `-`, which is
 * the dot-less tool-name alphabet (src/shared/target-names.ts), but an MCP server's tool is registered
 * as `<server>.<tool>`. So such a tool is offered under an alias: the dot becomes `__`, cut to 64
 * characters, with a `_2`, `_3`… suffix when that would meet another of the agent's names. Every
 * dot-less name keeps its own name, and an alias never takes one. Pure.
 */
const FUNCTION_NAME_MAX = 64;

/** Alias → registry name for `toolNames` (an agent's `tool_names`, in order). */
export function functionAliases(toolNames: readonly string[]): Map<string, string> {
  const aliases = new Map<string, string>();
  for (const name of toolNames) if (!name.includes(".")) aliases.set(name, name);
  for (const name of toolNames) {
    if (!name.includes(".") || [...aliases.values()].includes(name)) continue;
    const base = name.replace(/\./g, "__").slice(0, FUNCTION_NAME_MAX);
    let alias = base;
    for (let n = 2; aliases.has(alias); n++) {
      const suffix = `_${n}`;
      alias = base.slice(0, FUNCTION_NAME_MAX - suffix.length) + suffix;
    }
    aliases.set(alias, name);
  }
  return aliases;
}

/**
 * MCP servers as tool sources (docs/mcp.md "Settings"). A call's deadline is the server's own
 * `timeout_seconds` (declared per server); these bound the listing of its tools.
 */
import { type EnvVars, wholeNumber } from "./define";

export const MCP_LIST_TIMEOUT_SECONDS = wholeNumber("MCP_LIST_TIMEOUT_SECONDS", {
  area: "mcp",
  default: 15,
  min: 1,
  max: 120,
  description: "Deadline of one listing of an MCP server's tools (connect, initialize, every tools/list page), at declaration and at each reload.",
});

export const MCP_MAX_TOOLS_PER_SERVER = wholeNumber("MCP_MAX_TOOLS_PER_SERVER", {
  area: "mcp",
  default: 256,
  min: 1,
  max: 1000,
  description: "Most tools one MCP server registers; a listing past it keeps the first ones (in the server's order) and reports the rest as skipped.",
});

export const MCP_SETTINGS = [MCP_LIST_TIMEOUT_SECONDS, MCP_MAX_TOOLS_PER_SERVER] as const;

export interface McpSettings {
  listTimeoutSeconds: number;
  maxToolsPerServer: number;
}

export function parseMcpSettings(env: EnvVars, errors: string[]): McpSettings {
  return { listTimeoutSeconds: MCP_LIST_TIMEOUT_SECONDS.read(env, errors), maxToolsPerServer: MCP_MAX_TOOLS_PER_SERVER.read(env, errors) };
}

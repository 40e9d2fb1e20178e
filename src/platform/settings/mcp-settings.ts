/**
 * MCP servers as tool sources (docs/mcp.md "Settings"):
 * - `MCP_LIST_TIMEOUT_SECONDS`: the deadline of one listing of a server's tools (connect,
 *   initialize, every `tools/list` page), at declaration and at each reload;
 * - `MCP_MAX_TOOLS_PER_SERVER`: the most tools one server registers; a listing past it keeps the
 *   first ones (in the server's order) and reports the rest as skipped.
 * A call's deadline is the server's own `timeout_seconds` (declared per server).
 */
import { intSetting } from "./store-url";

export interface McpSettings {
  /** `MCP_LIST_TIMEOUT_SECONDS` (default 15). */
  listTimeoutSeconds: number;
  /** `MCP_MAX_TOOLS_PER_SERVER` (default 256). */
  maxToolsPerServer: number;
}

export const MCP_DEFAULTS = { listTimeoutSeconds: 15, maxToolsPerServer: 256 } as const;

export function parseMcpSettings(env: Record<string, unknown>, errors: string[]): McpSettings {
  return {
    listTimeoutSeconds: intSetting(env, "MCP_LIST_TIMEOUT_SECONDS", MCP_DEFAULTS.listTimeoutSeconds, 1, 120, errors),
    maxToolsPerServer: intSetting(env, "MCP_MAX_TOOLS_PER_SERVER", MCP_DEFAULTS.maxToolsPerServer, 1, 1000, errors),
  };
}

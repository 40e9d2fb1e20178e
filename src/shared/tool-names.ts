/**
 * Tool names of MCP servers (docs/mcp.md "Names"). A server's tools join the registry as
 * `<server>.<tool>`: the server's title (the tool-name alphabet, no dot) and the server's own tool
 * name joined by one dot. Names of built-ins, HTTP tools, API tools and presets never hold a dot,
 * so the two kinds can never collide, and the whole name stays within the run-scope grammar
 * (`tool:<name>`, at most 64 characters of letters, digits, `_ . -`), so a key can be granted
 * exactly one MCP tool.
 */
import { z } from "zod";
import { TARGET_NAME } from "./target-names";

/**
 * Titles no MCP server may take, because names under them are taken: the maintenance tools
 * (src/tool-runs/maintenance.ts) are `maintenance.<pass>`. Compared in lower case.
 */
export const RESERVED_SERVER_TITLES: ReadonlySet<string> = new Set(["maintenance"]);

/** The most characters a registered name has (the `tool:<name>` scope's bound). */
export const MAX_TOOL_NAME = 64;

/** A remote tool name we can register: the tool-name alphabet (MCP allows more; others are skipped). */
const REMOTE_NAME = /^[A-Za-z0-9_-]{1,63}$/;

/** `<server>.<tool>` as the registry names it. */
const MCP_TOOL_NAME = /^([A-Za-z0-9_-]{1,62})\.([A-Za-z0-9_-]{1,62})$/;

/** Any registered tool name: a dot-less name or an MCP tool's `<server>.<tool>`. */
export function isToolName(name: string): boolean {
  return TARGET_NAME.test(name) || (name.length <= MAX_TOOL_NAME && MCP_TOOL_NAME.test(name));
}

/** A tool name as path parameters and bodies take it (any kind of tool). */
export const toolNameSchema = z
  .string()
  .refine(isToolName, { message: "must be a tool name: 1-64 characters of letters, digits, _ and -, or <server>.<tool> for an MCP server's tool" });

/** Splits `<server>.<tool>`; null for a name that is not an MCP tool's. */
export function splitMcpToolName(name: string): { server: string; tool: string } | null {
  if (name.length > MAX_TOOL_NAME) return null;
  const m = MCP_TOOL_NAME.exec(name);
  return m ? { server: m[1], tool: m[2] } : null;
}

/** Why a server's tool cannot be registered under `server`, or null when it can (pure). */
export function remoteNameRefusal(server: string, tool: string): string | null {
  if (!REMOTE_NAME.test(tool)) return "the name uses characters outside letters, digits, _ and -";
  if (server.length + 1 + tool.length > MAX_TOOL_NAME) return `<server>.<tool> would exceed ${MAX_TOOL_NAME} characters`;
  return null;
}

export function mcpToolName(server: string, tool: string): string {
  return `${server}.${tool}`;
}

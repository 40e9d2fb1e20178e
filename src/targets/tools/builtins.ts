/** Built-in tools (decisions §4): always registered, never declared or removed. */
import type { TargetContext } from "../context";
import type { JsonSchema } from "../json-schema";

/** A failure a tool reports on purpose; its message is safe to show (no kwargs values). */
export class ToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ToolError";
  }
}

export interface BuiltinTool {
  name: string;
  description: string;
  input_schema: JsonSchema;
  output_schema: JsonSchema;
  timeout_seconds: number;
  /** Runs with kwargs already validated against input_schema. */
  run(ctx: TargetContext, kwargs: Record<string, unknown>): Promise<unknown>;
}

const echo: BuiltinTool = {
  name: "echo",
  description: "Returns its `message` argument, so a route to it answers with the inbound text.",
  input_schema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
  output_schema: { type: "string" },
  timeout_seconds: 30,
  async run(_ctx, kwargs) {
    return kwargs.message;
  },
};

const setConversationMode: BuiltinTool = {
  name: "set_conversation_mode",
  description: "Sets the calling conversation thread's control mode (agent or manual). Only works inside a conversation turn.",
  input_schema: {
    type: "object",
    properties: { mode: { type: "string", enum: ["agent", "manual"] } },
    required: ["mode"],
  },
  output_schema: {
    type: "object",
    properties: { mode: { type: "string", enum: ["agent", "manual"] } },
    required: ["mode"],
  },
  timeout_seconds: 30,
  async run(ctx, kwargs) {
    if (!ctx.turn) throw new ToolError("set_conversation_mode only works inside a conversation turn");
    const mode = kwargs.mode as "agent" | "manual";
    await ctx.turn.setMode(mode);
    return { mode };
  },
};

/** Built-in tools by name. */
export const BUILTIN_TOOLS: ReadonlyMap<string, BuiltinTool> = new Map([echo, setConversationMode].map((t) => [t.name, t]));

export function isBuiltinTool(name: string): boolean {
  return BUILTIN_TOOLS.has(name);
}

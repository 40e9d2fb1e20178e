/** Built-in tools (decisions §4): always registered, never declared or removed. */
import { readRouteWithKeyByChannelIdentity } from "../../conversations/store";
import { Mode } from "../../shared/kinds";
import { type Arrival, personDirectoryStub } from "../../persons/rpc";
import { liveMintRefusal } from "../../persons/link-authority";
import { ASK_USER_JSON_SCHEMA, AskUserInput } from "../../interactions/ask";
import type { TargetContext } from "../context";
import type { JsonSchema } from "../../platform/json-schema";

/** A failure a tool reports on purpose; its message is safe to show (no kwargs values). */
export class ToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ToolError";
  }
}

/** The key a built-in's call runs as: its user_id and the fingerprint it had when the run started. */
export type RunAs = { user_id: string; fingerprint: string };

export interface BuiltinTool {
  name: string;
  description: string;
  input_schema: JsonSchema;
  output_schema: JsonSchema;
  timeout_seconds: number;
  /**
   * Runs with kwargs already validated against input_schema. `runAs` is the key the call runs as
   * (a turn's or run's execution key, or the caller a door authorized); null when none.
   */
  run(ctx: TargetContext, kwargs: Record<string, unknown>, runAs: RunAs | null): Promise<unknown>;
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
    properties: { mode: { type: "string", enum: [...Mode.options] } },
    required: ["mode"],
  },
  output_schema: {
    type: "object",
    properties: { mode: { type: "string", enum: [...Mode.options] } },
    required: ["mode"],
  },
  timeout_seconds: 30,
  async run(ctx, kwargs) {
    if (!ctx.turn) throw new ToolError("set_conversation_mode only works inside a conversation turn");
    const mode = kwargs.mode as Mode;
    await ctx.turn.setMode(mode);
    return { mode };
  },
};

const LABEL_PATTERN = "^[a-z0-9][a-z0-9_-]{0,31}$";

const setConversationLabels: BuiltinTool = {
  name: "set_conversation_labels",
  description:
    "Adds and removes labels on the calling conversation thread (docs/inbox.md): removals first, then additions; a label is 1-32 of a-z, 0-9, _ and -; a thread carries at most 16. Answers the thread's labels. Only works inside a conversation turn.",
  input_schema: {
    type: "object",
    properties: {
      add: { type: "array", items: { type: "string", pattern: LABEL_PATTERN }, maxItems: 16 },
      remove: { type: "array", items: { type: "string", pattern: LABEL_PATTERN }, maxItems: 16 },
    },
    additionalProperties: false,
  },
  output_schema: {
    type: "object",
    properties: { labels: { type: "array", items: { type: "string" } } },
    required: ["labels"],
  },
  timeout_seconds: 30,
  async run(ctx, kwargs) {
    if (!ctx.turn?.setLabels) throw new ToolError("set_conversation_labels only works inside a conversation turn");
    const list = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
    return { labels: await ctx.turn.setLabels(list(kwargs.add), list(kwargs.remove)) };
  },
};

const PAIRING_ARGS = ["channel", "our_identity", "sender"] as const;

const getPairingCode: BuiltinTool = {
  name: "get_pairing_code",
  description:
    "Mints a pairing code (LINK-XXXXXXXX, 900 s, single use) for one conversation of a multichannel target, as its participant's /link would. Inside a conversation turn it mints only for that turn's own conversation: the arguments may be left out, and any given must name that conversation. Outside a turn the conversation is (channel, our_identity, sender) of a channel route, all three required, and the running key must hold what writing a route to the target needs (conversations write and the grant to run the target). Refused when no channel route holds (channel, our_identity) or its target is not multichannel.",
  input_schema: {
    type: "object",
    properties: { channel: { type: "string", minLength: 1 }, our_identity: { type: "string", minLength: 1 }, sender: { type: "string", minLength: 1 } },
  },
  output_schema: {
    type: "object",
    properties: { code: { type: "string" }, expires_at: { type: "string" } },
    required: ["code", "expires_at"],
  },
  timeout_seconds: 30,
  async run(ctx, kwargs, runAs) {
    const given = Object.fromEntries(PAIRING_ARGS.filter((k) => typeof kwargs[k] === "string").map((k) => [k, String(kwargs[k]).trim()]));
    const arrival = ctx.turn ? turnArrival(ctx.turn, given) : await namedArrival(ctx, given, runAs);
    const minted = await personDirectoryStub(ctx.env, arrival.target.kind, arrival.target.name).mint(arrival, ctx.now().getTime());
    return { code: minted.code, expires_at: new Date(minted.expires_at).toISOString().replace("Z", "+00:00") };
  },
};

/**
 * Inside a turn: the turn's own conversation, whatever asked (a model talked into naming another
 * sender gets a refusal, not that sender's code).
 */
function turnArrival(turn: NonNullable<TargetContext["turn"]>, given: Record<string, string>): Arrival {
  const own = turn.conversation;
  if (!own || !own.multichannel) throw new ToolError("the route's target is not multichannel, so it has no pairing codes");
  const a = own.address;
  const mine: Record<string, string | null> =
    a.door === "channel" ? { channel: a.channel, our_identity: a.our_identity, sender: a.address } : { channel: null, our_identity: null, sender: null };
  for (const [k, v] of Object.entries(given)) {
    if (mine[k] !== v) throw new ToolError("inside a conversation turn, get_pairing_code mints only for that turn's own conversation; leave the arguments out");
  }
  return { target: own.target, address: a, route_name: turn.route_name };
}

/** Outside a turn: the named channel conversation, for a running key that may write routes to its target (checked live). */
async function namedArrival(ctx: TargetContext, given: Record<string, string>, runAs: RunAs | null): Promise<Arrival> {
  const missing = PAIRING_ARGS.filter((k) => !given[k]);
  if (missing.length) throw new ToolError(`outside a conversation turn, get_pairing_code needs ${missing.join(", ")}`);
  const { channel, our_identity: ourIdentity, sender } = given;
  const { route, target } = await readRouteWithKeyByChannelIdentity(ctx.db, channel, ourIdentity);
  // One answer for "no such route" and "not yours", so a key without the grant learns nothing of the routes.
  const refused = "no channel route holds this channel and identity whose target the running key may link";
  if (!route || route.door !== "channel" || !runAs) throw new ToolError(refused);
  const to = { kind: route.target_kind, name: route.target_name };
  if (await liveMintRefusal(ctx.db, runAs, to)) throw new ToolError(refused);
  if (!target.config?.multichannel) throw new ToolError("the route's target is not multichannel, so it has no pairing codes");
  return { target: to, address: { door: "channel", channel, our_identity: ourIdentity, address: sender }, route_name: route.route_name };
}

/** Why `ask_user` refuses where no run can park (the message a model or run-tool caller reads). */
export const ASK_USER_CANNOT_PARK =
  "ask_user needs a run that can wait for the answer: an llm agent's run (a conversation turn or the agent run door), a conversation route's tool turn, or a background tool run without a state binding (POST /api/tool-runs, a schedule's or a hook's fire), with the interactions store configured (INTERACTIONS_STORE_URL); run-tool cannot wait";

const askUser: BuiltinTool = {
  name: "ask_user",
  description:
    'Asks the user a question and waits for the answer: inside a conversation the question goes to the participant and their next message answers it; elsewhere an operator answers it. Optional reply options (tappable where the channel shows them) or an ask-less form schema, and an optional audience (a user_id). The answer comes back as this call\'s result: {interaction_id, outcome: "answered", answer: {text, option, form, media, ...}}, or {outcome: "cancelled", cancelled: true} / {outcome: "expired", timeout: true}.',
  input_schema: ASK_USER_JSON_SCHEMA as unknown as JsonSchema,
  output_schema: { type: "object" },
  timeout_seconds: 30,
  async run(ctx, kwargs) {
    const parsed = AskUserInput.safeParse(kwargs);
    if (!parsed.success) {
      // Field paths and rules only, never the values (a question may carry user text).
      const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "(input)"}: ${i.message}`);
      throw new ToolError(`invalid ask_user input: ${problems.join("; ")}`);
    }
    if (!ctx.ask) throw new ToolError(ASK_USER_CANNOT_PARK);
    ctx.ask.park(parsed.data);
    return { parked: true };
  },
};

/** Built-in tools by name. */
export const BUILTIN_TOOLS: ReadonlyMap<string, BuiltinTool> = new Map(
  [echo, setConversationMode, setConversationLabels, getPairingCode, askUser].map((t) => [t.name, t]),
);

export function isBuiltinTool(name: string): boolean {
  return BUILTIN_TOOLS.has(name);
}

/**
 * The one tool dispatcher, shared by `POST /api/run-tool`, presets, agents and the bridge.
 * It never depends on a Hono context: everything arrives in the TargetContext.
 *
 * Order: authorize the execution key live (when given) → resolve the name → validate kwargs
 * against the input schema → run under a deadline → classify the outcome. Failure messages
 * name schema locations, statuses and env var names, never kwargs values or resolved secrets.
 */
import { authorizeTurn } from "../access-control/pass-role";
import { storedByRefusal } from "../access-control/stored-by";
import { ConnectionRefError, connectionHeaderValue } from "../connectors/token-resolution";
import { buildApiRequest, sendApiRequest } from "./tools/api-tool-call";
import { apiToolOrigin } from "./tools/api-tool-store";
import { callMcpTool } from "../mcp/call";
import { MAX_BODY_BYTES } from "../platform/http/body";
import { checkJsonBounds } from "../platform/http/bounded-json";
import { applyExtensions } from "../extensions/apply";
import type { CallerRef, ExecutionKeyRef, TargetContext } from "./context";
import { EnvRefError, resolveCallHeaders } from "../outbound/env-refs";
import { checkAgainstSchema } from "../platform/json-schema";
import { callJsonEndpoint } from "../outbound/fetch";
import { mergeKwargs } from "./presets/model";
import { type RunAs, ToolError } from "./tools/builtins";
import { type BaseTool, type ResolvedTool, resolveBaseTool, resolveTool } from "./tools/registry";
import { withTimeout } from "../platform/timeout";
import { type StepVerdict, noteTargetVersion, timedStep } from "../shared/run-steps";

export type { CallerRef, ExecutionKeyRef, TargetContext } from "./context";
export { createTargetContext } from "./context";

export type DispatchFailureKind = "unknown_tool" | "invalid_kwargs" | "denied" | "timeout" | "transport" | "http_status" | "non_json" | "tool_error";
export type DispatchResult = { ok: true; value: unknown } | { ok: false; kind: DispatchFailureKind; message: string };

export interface DispatchOptions {
  /** Run as this key: re-read live, it must exist, be enabled, match and grant `tool:<name>`. */
  asKey?: ExecutionKeyRef;
  /** Without `asKey`: the key the door authorized, whose calls alone may share a cached result. */
  caller?: CallerRef;
  /** Overrides the tool's own `timeout_seconds`. */
  timeoutMs?: number;
  /** The tool as the caller already resolved it (a bound turn reads its preset's binding first); saves a second read. */
  resolved?: ResolvedTool | null;
}

const fail = (kind: DispatchFailureKind, message: string): DispatchResult => ({ ok: false, kind, message });

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function invalid(problems: string[]): DispatchResult {
  return fail("invalid_kwargs", `invalid kwargs: ${problems.join("; ")}`);
}

/**
 * A declared tool's headers for a call to `url`, with their env and connection references resolved,
 * or the tool error an unresolvable one is (a reference whose value may not go to `url`'s origin
 * included). A connection header costs one call to its object (two when the token must be refreshed).
 */
async function callHeaders(
  ctx: TargetContext,
  spec: Parameters<typeof resolveCallHeaders>[1],
  url: string,
): Promise<{ ok: true; headers: Record<string, string> } | DispatchResult> {
  try {
    return { ok: true, headers: await resolveCallHeaders(ctx.env, spec, url, (ref) => connectionHeaderValue(ctx, ref, url)) };
  } catch (err) {
    if (err instanceof EnvRefError || err instanceof ConnectionRefError) return fail("tool_error", err.message);
    throw err;
  }
}

async function runHttpTool(ctx: TargetContext, tool: BaseTool & { kind: "http" }, kwargs: Record<string, unknown>, timeoutMs: number): Promise<DispatchResult> {
  const resolved = await callHeaders(ctx, tool.tool.headers, tool.tool.url);
  if (!("headers" in resolved)) return resolved;
  const headers = resolved.headers;
  const r = await callJsonEndpoint(ctx.fetch, {
    label: "tool endpoint",
    url: tool.tool.url,
    method: tool.tool.method,
    headers,
    body: kwargs,
    timeoutMs,
    guard: ctx.settings.outbound,
  });
  if (r.ok) return r;
  return fail(r.kind === "too_large" || r.kind === "out_of_bounds" ? "tool_error" : r.kind, r.message);
}

async function runBuiltin(
  ctx: TargetContext,
  tool: BaseTool & { kind: "builtin" },
  kwargs: Record<string, unknown>,
  timeoutMs: number,
  runAs: RunAs | null,
): Promise<DispatchResult> {
  let timed;
  try {
    timed = await withTimeout(timeoutMs, () => tool.tool.run(ctx, kwargs, runAs));
  } catch (err) {
    if (err instanceof ToolError) return fail("tool_error", err.message);
    console.error(`built-in tool ${tool.name} failed:`, err);
    return fail("tool_error", `tool ${tool.name} failed`);
  }
  if (!timed.ok) return fail("timeout", `tool ${tool.name} did not finish within ${+(timeoutMs / 1000).toFixed(3)}s`);
  return { ok: true, value: timed.value };
}

/**
 * An MCP server's tool (docs/mcp.md): `tools/call` in its own session under the deadline. A
 * protocol or configuration failure (an unresolvable header, an answer that is not MCP) and an
 * `isError` result are tool errors; the message names the server, a status or a JSON-RPC code.
 */
async function runMcpTool(ctx: TargetContext, tool: BaseTool & { kind: "mcp" }, kwargs: Record<string, unknown>, timeoutMs: number): Promise<DispatchResult> {
  const r = await callMcpTool(ctx, tool.tool.server, tool.tool.remote.remote_name, tool.name, kwargs, timeoutMs);
  if (r.ok) return r;
  return fail(r.kind === "timeout" || r.kind === "transport" || r.kind === "http_status" ? r.kind : "tool_error", r.message);
}

/** An API tool (docs/manifest.md): the kwargs laid out as the operation's path, query, headers and body. */
async function runApiTool(ctx: TargetContext, tool: BaseTool & { kind: "api" }, kwargs: Record<string, unknown>, timeoutMs: number): Promise<DispatchResult> {
  // The template's origin is the request's whatever the kwargs are (placeholders stand in the path and query only).
  const resolved = await callHeaders(ctx, tool.tool.headers, apiToolOrigin(tool.tool.url) ?? "");
  if (!("headers" in resolved)) return resolved;
  const req = buildApiRequest(tool.tool, kwargs, resolved.headers);
  if ("error" in req) return fail("invalid_kwargs", `invalid kwargs: ${req.error}`);
  return sendApiRequest(ctx.fetch, req, timeoutMs, ctx.settings.outbound);
}

/** Validates and runs a non-preset tool; a built-in learns the key the call runs as. */
async function runBase(ctx: TargetContext, tool: BaseTool, kwargs: Record<string, unknown>, opts: DispatchOptions): Promise<DispatchResult> {
  const timeoutMs = opts.timeoutMs;
  const schema = tool.tool.input_schema;
  if (schema) {
    const check = checkAgainstSchema(schema, kwargs);
    if (!check.ok) return invalid(check.problems);
  }
  const ms = timeoutMs ?? tool.tool.timeout_seconds * 1000;
  if (tool.kind === "builtin") return runBuiltin(ctx, tool, kwargs, ms, opts.asKey ?? opts.caller ?? null);
  if (tool.kind === "api") return runApiTool(ctx, tool, kwargs, ms);
  return tool.kind === "mcp" ? runMcpTool(ctx, tool, kwargs, ms) : runHttpTool(ctx, tool, kwargs, ms);
}

/** How a dispatch reads as a run's step: its failure kind and message are the admin-only detail. Pure. */
export function dispatchStepVerdict(r: DispatchResult): StepVerdict {
  if (r.ok) return { outcome: "ok", error: null };
  return { outcome: r.kind === "denied" ? "denied" : r.kind === "timeout" ? "timeout" : "error", error: `${r.kind}: ${r.message}` };
}

/**
 * Dispatches `name` with `kwargs`; see `dispatchUntimed`. When the context is traced (a run's
 * trace, src/shared/run-steps.ts), the dispatch is recorded as one `tool` step with its timing.
 */
export async function dispatchTool(ctx: TargetContext, name: string, kwargs: unknown, opts: DispatchOptions = {}): Promise<DispatchResult> {
  return timedStep(ctx, "tool", name, () => dispatchUntimed(ctx, name, kwargs, opts), dispatchStepVerdict);
}

/**
 * Dispatches `name` with `kwargs`. A preset merges its fixed kwargs over the caller's (the
 * caller never overrides them), validates the merge against its own input_schema, runs its base
 * tool (whose schema applies too) and checks the result against its output_schema. The key
 * authorizes the name dispatched — a preset's grant does not require its base tool's.
 */
async function dispatchUntimed(ctx: TargetContext, name: string, kwargs: unknown, opts: DispatchOptions): Promise<DispatchResult> {
  if (opts.asKey) {
    const auth = await authorizeTurn(ctx.db, opts.asKey.user_id, opts.asKey.fingerprint, { kind: "tool", name }, ctx.now(), opts.asKey.prefetched);
    if (!auth.ok) return fail("denied", auth.reason);
  }
  const tool = opts.resolved !== undefined ? opts.resolved : await resolveTool(ctx.db, name);
  if (!tool) return fail("unknown_tool", "tool is not registered");
  if (tool.kind === "preset") {
    noteTargetVersion(ctx, name, String(tool.version));
    // Before the extensions too: a cached result is the preset's output as much as a fresh one.
    const refused = presetRunRefusal(tool);
    if (refused) return fail("denied", refused);
  }
  if (!isPlainObject(kwargs)) return fail("invalid_kwargs", "invalid kwargs: must be a JSON object");
  // Doors bound their kwargs already; this covers the rest (payload_expr output, model tool calls).
  const unbounded = checkJsonBounds(kwargs, MAX_BODY_BYTES);
  if (unbounded) return fail("invalid_kwargs", `invalid kwargs: ${unbounded}`);
  // A declared tool's combos wrap every call only while the key that set them may still run it.
  if (tool.kind !== "builtin" && tool.kind !== "preset" && tool.extensions?.length && tool.extensionsBy) {
    const why = storedByRefusal(tool.extensionsBy.stored_by, tool.extensionsBy.holder, [{ kind: "tool", name: tool.name }]);
    if (why) return fail("denied", `the tool's extensions may not run: ${why}`);
  }
  // Extensions (docs/extensions.md) wrap the call itself: after authorization, resolution and the kwargs checks.
  return applyExtensions(ctx, { tool, kwargs, asKey: opts.asKey, caller: opts.caller }, () =>
    tool.kind === "preset" ? runPreset(ctx, tool, kwargs, opts) : runBase(ctx, tool, kwargs, opts),
  );
}

/**
 * Why a preset's active version may not run now, or null: the key that made it active must still
 * be allowed to run its base tool (docs/security.md, "Confused deputy"). The key was read with the
 * preset, so this costs no round trip.
 */
export function presetRunRefusal(tool: Extract<ResolvedTool, { kind: "preset" }>): string | null {
  const why = storedByRefusal(tool.stored_by, tool.holder, [{ kind: "tool", name: tool.body.base_tool }]);
  return why ? `the preset's active version may not run: ${why}` : null;
}

/** A preset's call: its fixed kwargs over the caller's, its input_schema, its base tool, its output_schema. */
async function runPreset(
  ctx: TargetContext,
  tool: Extract<ResolvedTool, { kind: "preset" }>,
  kwargs: Record<string, unknown>,
  opts: DispatchOptions,
): Promise<DispatchResult> {
  const merged = mergeKwargs(kwargs, tool.body.fixed_kwargs);
  if (tool.body.input_schema) {
    const check = checkAgainstSchema(tool.body.input_schema, merged);
    if (!check.ok) return invalid(check.problems);
  }
  const base = await resolveBaseTool(ctx.db, tool.body.base_tool);
  if (!base) return fail("tool_error", "the preset's base tool is not registered");
  const result = await runBase(ctx, base, merged, opts);
  if (result.ok && tool.body.output_schema) {
    const check = checkAgainstSchema(tool.body.output_schema, result.value);
    if (!check.ok) return fail("tool_error", `result does not match the preset's output_schema: ${check.problems.join("; ")}`);
  }
  return result;
}

/** Is `name` a registered tool (built-in, declared or preset)? */
export async function toolExists(ctx: TargetContext, name: string): Promise<boolean> {
  return (await resolveTool(ctx.db, name)) !== null;
}

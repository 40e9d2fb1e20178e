/**
 * `POST /api/api-tools` (docs/manifest.md "API tools"): one operation of an OpenAPI 3.x document
 * becomes an API tool. The document comes inline (`openapi`) or from a URL (`openapi_url`, fetched
 * once through the network edge and the address guard, JSON only). The operation's parameters
 * (path-level and its own; `$ref`s inside the document resolved) and its JSON request body make the
 * tool's input schema: one property per parameter, named as the parameter, and `body` for the
 * request body; `required` as the operation says.
 *
 * Refusals are 400s naming the part of the request (or of the operation by position), never a
 * value from the document: document text is caller input.
 */
import { z } from "zod";
import { MAX_BODY_BYTES, readStreamCapped } from "../platform/http/body";
import { boundedJsonObject } from "../platform/http/bounded-json";
import { badRequest } from "../platform/http/errors";
import { checkOutboundUrl } from "../platform/net/address-guard";
import type { Settings } from "../platform/settings/settings";
import { headersSchema } from "../outbound/env-refs";
import { TARGET_NAME } from "../shared/target-names";
import { withTimeout } from "../platform/timeout";
import { endpointUrlSchema } from "../outbound/urls";
import { API_METHODS, type ApiParameter, ApiToolDeclaration, MAX_API_TOOL_TIMEOUT_SECONDS } from "../targets/tools/api-tool-store";

export const ApiToolImport = z
  .object({
    /** The OpenAPI 3.x document itself. */
    openapi: boundedJsonObject(MAX_BODY_BYTES).optional(),
    /** Or where to fetch it (JSON). */
    openapi_url: endpointUrlSchema.optional(),
    operation_id: z.string().min(1).max(256),
    /** The tool's name; defaults to the operationId when that is a tool name. */
    title: z.string().regex(TARGET_NAME, { message: "must be 1-64 characters of letters, digits, _ and -" }).optional(),
    description: z.string().max(4096).optional(),
    /** Overrides the document's `servers` (needed when they are relative or absent). */
    server_url: endpointUrlSchema.optional(),
    headers: headersSchema.default({}),
    timeout_seconds: z.number().positive().max(MAX_API_TOOL_TIMEOUT_SECONDS).default(30),
  })
  .strict()
  .refine((b) => (b.openapi === undefined) !== (b.openapi_url === undefined), { message: "give exactly one of openapi and openapi_url", path: ["openapi"] });
export type ApiToolImport = z.infer<typeof ApiToolImport>;

/** Deadline of fetching a document by URL. */
export const OPENAPI_FETCH_TIMEOUT_MS = 10_000;
/** `$ref` hops and schema nesting followed while inlining. */
const MAX_REF_DEPTH = 32;

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** Fetches the document (JSON) by URL through `fetchFn`; 400 when it cannot be had. */
export async function fetchOpenApiDocument(fetchFn: typeof fetch, url: string, settings: Settings): Promise<Json> {
  const verdict = checkOutboundUrl(url, settings.outbound);
  if (!verdict.ok) throw badRequest(`invalid body: openapi_url: ${verdict.reason}`);
  const timed = await withTimeout(OPENAPI_FETCH_TIMEOUT_MS, async (signal) => {
    const res = await fetchFn(url, { headers: { accept: "application/json" }, redirect: "manual", signal });
    if (res.status < 200 || res.status > 299) {
      await res.body?.cancel();
      return { status: res.status, bytes: null };
    }
    return { status: res.status, bytes: await readStreamCapped(res.body, MAX_BODY_BYTES) };
  }).catch(() => null);
  if (timed === null) throw badRequest("openapi_url: the document could not be fetched");
  if (!timed.ok) throw badRequest("openapi_url: the document did not arrive in time");
  if (timed.value.status < 200 || timed.value.status > 299) throw badRequest(`openapi_url: the document's server answered HTTP ${timed.value.status}`);
  if (timed.value.bytes === null) throw badRequest(`openapi_url: the document is over ${MAX_BODY_BYTES} bytes`);
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder().decode(timed.value.bytes));
  } catch {
    throw badRequest("openapi_url: the document is not JSON (YAML documents are not read; convert to JSON)");
  }
  const bounded = boundedJsonObject(MAX_BODY_BYTES).safeParse(doc);
  if (!bounded.success) throw badRequest("openapi_url: the document is not a JSON object within the bounds");
  return bounded.data as Json;
}

/** Follows a local `$ref` (`#/...` JSON pointer); null when it points nowhere. */
function deref(doc: Json, ref: string): unknown {
  if (!ref.startsWith("#/")) return null;
  let node: unknown = doc;
  for (const raw of ref.slice(2).split("/")) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (!isObject(node) && !Array.isArray(node)) return null;
    node = (node as Json)[key];
    if (node === undefined) return null;
  }
  return node;
}

class RefProblem extends Error {}

/** `node` with every local `$ref` inlined (OpenAPI schemas are not self-contained). */
function inline(doc: Json, node: unknown, depth = 0, stack: string[] = []): unknown {
  if (depth > MAX_REF_DEPTH) throw new RefProblem("nests too deep (or is recursive)");
  if (Array.isArray(node)) return node.map((n) => inline(doc, n, depth + 1, stack));
  if (!isObject(node)) return node;
  if (typeof node.$ref === "string") {
    if (stack.includes(node.$ref)) throw new RefProblem("is recursive ($ref cycles are not supported)");
    const target = deref(doc, node.$ref);
    if (target === null) throw new RefProblem("has a $ref that points nowhere in the document (only local #/ references are read)");
    return inline(doc, target, depth + 1, [...stack, node.$ref]);
  }
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) out[k] = inline(doc, v, depth + 1, stack);
  return out;
}

function inlined<T>(doc: Json, node: unknown, where: string): T {
  try {
    return inline(doc, node) as T;
  } catch (err) {
    if (err instanceof RefProblem) throw badRequest(`openapi: ${where} ${err.message}`);
    throw err;
  }
}

/** The operation with `operationId` (its path, method and path item), or a 400. */
function findOperation(doc: Json, operationId: string): { path: string; method: (typeof API_METHODS)[number]; op: Json; item: Json } {
  if (!isObject(doc.paths)) throw badRequest("openapi: the document has no paths");
  for (const [path, rawItem] of Object.entries(doc.paths)) {
    const item = isObject(rawItem) && typeof rawItem.$ref === "string" ? deref(doc, rawItem.$ref) : rawItem;
    if (!isObject(item)) continue;
    for (const [m, op] of Object.entries(item)) {
      if (!isObject(op) || op.operationId !== operationId) continue;
      const method = m.toUpperCase();
      if (!(API_METHODS as readonly string[]).includes(method)) throw badRequest("operation_id: the operation's method is not GET, POST, PUT, PATCH or DELETE");
      return { path, method: method as (typeof API_METHODS)[number], op, item };
    }
  }
  throw badRequest("operation_id: no operation of the document has this operationId");
}

/** The server URL the operation is served at: the body's, else the operation's, path's or document's first absolute one. */
function serverUrl(doc: Json, item: Json, op: Json, given: string | undefined, base: string | undefined): string {
  if (given) return given;
  for (const servers of [op.servers, item.servers, doc.servers]) {
    if (!Array.isArray(servers) || !isObject(servers[0]) || typeof servers[0].url !== "string") continue;
    const s = servers[0];
    const vars = isObject(s.variables) ? s.variables : {};
    const filled = (s.url as string).replace(/\{([^{}]+)\}/g, (_, name: string) => {
      const v = vars[name];
      return isObject(v) && typeof v.default === "string" ? v.default : "";
    });
    try {
      return new URL(filled, base).href;
    } catch {
      break;
    }
  }
  throw badRequest("server_url: the document names no absolute server for the operation; give server_url");
}

interface Param {
  name: string;
  in: string;
  required: boolean;
  schema: unknown;
  description: unknown;
}

/** The operation's parameters: the path item's, overridden by the operation's own (same name and location). */
function parametersOf(doc: Json, item: Json, op: Json): Param[] {
  const byKey = new Map<string, Param>();
  for (const [list, where] of [
    [item.parameters, "the path's parameters"],
    [op.parameters, "the operation's parameters"],
  ] as const) {
    if (list === undefined) continue;
    if (!Array.isArray(list)) throw badRequest(`openapi: ${where} are not a list`);
    list.forEach((raw, i) => {
      const p = inlined<unknown>(doc, raw, `${where}[${i}]`);
      if (!isObject(p) || typeof p.name !== "string" || typeof p.in !== "string") throw badRequest(`openapi: ${where}[${i}] is not a parameter object`);
      byKey.set(`${p.in}\u0000${p.name}`, {
        name: p.name,
        in: p.in,
        required: p.required === true || p.in === "path",
        schema: p.schema,
        description: p.description,
      });
    });
  }
  return [...byKey.values()];
}

/** The JSON Schema of the operation's JSON request body, or null when it has none. */
function requestBodyOf(doc: Json, op: Json): { schema: unknown; required: boolean; description: unknown } | null {
  if (op.requestBody === undefined) return null;
  const rb = inlined<unknown>(doc, op.requestBody, "the operation's requestBody");
  if (!isObject(rb) || !isObject(rb.content)) throw badRequest("openapi: the operation's requestBody has no content");
  const type = Object.keys(rb.content).find((t) => t === "application/json" || /^application\/[^;]*\+json\b/.test(t) || t.startsWith("application/json;"));
  if (!type) throw badRequest("openapi: the operation's request body is not JSON (only application/json bodies are sent)");
  const media = rb.content[type];
  return { schema: isObject(media) ? (media.schema ?? {}) : {}, required: rb.required === true, description: rb.description };
}

/**
 * The API tool declaration for the import (pure but for the document's content): parsed with the
 * declaration's own schema, so every rule of a stored API tool holds (400 naming the field).
 */
export function declarationFromOperation(doc: Json, body: ApiToolImport, base?: string): ApiToolDeclaration {
  if (typeof doc.openapi !== "string" || !doc.openapi.startsWith("3."))
    throw badRequest("openapi: only OpenAPI 3.x documents are read (the document's openapi field must start with 3.)");
  const { path, method, op, item } = findOperation(doc, body.operation_id);
  const params = parametersOf(doc, item, op);
  const properties: Json = {};
  const required: string[] = [];
  const parameters: ApiParameter[] = [];
  for (const [i, p] of params.entries()) {
    if (p.in !== "path" && p.in !== "query" && p.in !== "header")
      throw badRequest(
        `openapi: the operation's parameter ${i + 1} is a ${p.in === "cookie" ? "cookie" : "non-path, non-query, non-header"} parameter, which is not supported`,
      );
    // Hop-by-hop and framing headers are the platform's; the operation may not set them.
    if (p.in === "header" && /^(content-type|accept|authorization|content-length|host|connection|transfer-encoding)$/i.test(p.name)) continue;
    const schema = p.schema === undefined ? {} : inlined<unknown>(doc, p.schema, `the operation's parameter ${i + 1} schema`);
    properties[p.name] = isObject(schema) ? { ...schema, ...(typeof p.description === "string" ? { description: p.description.slice(0, 1024) } : {}) } : {};
    if (p.required) required.push(p.name);
    parameters.push({ name: p.name, in: p.in, required: p.required });
  }
  const rb = requestBodyOf(doc, op);
  if (rb) {
    if (method === "GET" || method === "DELETE") throw badRequest("openapi: the operation sends a request body with GET or DELETE, which is not supported");
    const schema = inlined<unknown>(doc, rb.schema, "the operation's request body schema");
    properties.body = isObject(schema) ? { ...schema, ...(typeof rb.description === "string" ? { description: rb.description.slice(0, 1024) } : {}) } : {};
    if (rb.required) required.push("body");
  }
  const title = body.title ?? (TARGET_NAME.test(body.operation_id) ? body.operation_id : undefined);
  if (!title) throw badRequest("title: the operationId is not a tool name (letters, digits, _ and -); give title");
  const summary = typeof op.summary === "string" ? op.summary : typeof op.description === "string" ? op.description : "";
  const url = `${serverUrl(doc, item, op, body.server_url, base).replace(/\/+$/, "")}${path.startsWith("/") ? path : `/${path}`}`;
  const candidate = {
    title,
    description: (body.description ?? summary).slice(0, 4096),
    method,
    url,
    parameters,
    body: rb ? "json" : "none",
    headers: body.headers,
    input_schema: { type: "object", properties, ...(required.length ? { required } : {}) },
    timeout_seconds: body.timeout_seconds,
    operation_id: body.operation_id,
  };
  const parsed = ApiToolDeclaration.safeParse(candidate);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw badRequest(`openapi: the operation does not make a valid API tool: ${issue.path.join(".") || "(root)"}: ${issue.message}`);
  }
  return parsed.data;
}

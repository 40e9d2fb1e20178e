/** Builds the OpenAPI 3.1 document from the route registry's zod schemas. */
import { z } from "zod";
import { IDEMPOTENCY_GRAMMAR, IDEMPOTENCY_HEADER, REPLAYED_HEADER } from "./idempotency";
import { type RouteSpec, registry } from "./route";

export const API_VERSION = "14.0.2";

const STATUS_TEXT: Record<number, string> = {
  400: "Malformed or invalid request (the message names the field or bound)",
  401: "Missing or invalid api key",
  403: "Forbidden: missing grant, non-admin on an admin door, or refused bind",
  404: "Not found",
  405: "Method not allowed",
  409: "Conflict",
  413: "Request body too large",
  422: "The Idempotency-Key was already used for a different request",
  429: "Rate limited",
  500: "Internal error or invalid configuration",
  501: "Feature not configured",
  502: "Permanent upstream failure",
  503: "Temporarily unavailable",
};

function jsonSchema(schema: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const s = z.toJSONSchema(schema, { target: "draft-2020-12", io, unrepresentable: "any" }) as Record<string, unknown>;
  delete s.$schema;
  return s;
}

function parameters(spec: RouteSpec): unknown[] {
  const out: unknown[] = [];
  const names = [...spec.path.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1]);
  const pathProps = spec.params ? ((jsonSchema(spec.params, "input").properties ?? {}) as Record<string, unknown>) : {};
  for (const name of names) out.push({ name, in: "path", required: true, schema: pathProps[name] ?? { type: "string" } });
  if (spec.query) {
    const q = jsonSchema(spec.query, "input");
    const required = new Set((q.required as string[] | undefined) ?? []);
    for (const [name, schema] of Object.entries((q.properties ?? {}) as Record<string, unknown>)) {
      out.push({ name, in: "query", required: required.has(name), schema });
    }
  }
  if (spec.idempotent) {
    out.push({
      name: IDEMPOTENCY_HEADER,
      in: "header",
      required: false,
      description: `Names this request so that a retry of it answers the first answer and does the work once (docs/api-notes.md): ${IDEMPOTENCY_GRAMMAR}. The same key on another request is 422; while the first request is still being answered, 409.`,
      schema: { type: "string", minLength: 1, maxLength: 257 },
    });
  }
  return out;
}

function operation(spec: RouteSpec): Record<string, unknown> {
  const isPublic = "public" in spec.auth;
  const op: Record<string, unknown> = {
    operationId: `${spec.method}_${spec.path
      .replace(/^\/api\//, "")
      .replace(/[{}]/g, "")
      .replace(/[^A-Za-z0-9]+/g, "_")}`,
    summary: spec.summary,
    tags: [spec.area],
  };
  if (spec.description) op.description = spec.description;
  if (isPublic) op.security = [];
  else if ("authenticated" in spec.auth) op["x-required-grant"] = "any valid key";
  else {
    const a = spec.auth as { tag: string; action?: string; admin?: boolean };
    op["x-required-grant"] = a.admin ? "admin" : `${a.tag}:${a.action ?? (spec.method === "get" ? "read" : "write")}`;
  }
  const params = parameters(spec);
  if (params.length) op.parameters = params;
  if (spec.body) {
    op.requestBody = {
      required: !spec.bodyOptional,
      content: { "application/json": { schema: jsonSchema(spec.body, "input") } },
    };
  } else if (spec.rawBody) {
    op.requestBody = { required: true, content: { "application/octet-stream": { schema: { type: "string" } } } };
  } else if (spec.streamedBody) {
    op.requestBody = { required: true, content: { [spec.streamedBody]: { schema: { type: "string", format: "binary" } } } };
  }
  const responses: Record<string, unknown> = {};
  const status = String(spec.status ?? 200);
  const data = spec.response ? jsonSchema(spec.response, "output") : {};
  responses[status] = spec.produces
    ? { description: "Success", content: { [spec.produces]: { schema: { type: "string" } } } }
    : status === "204"
      ? { description: "No content" }
      : {
          description: "Success",
          content: {
            "application/json": {
              schema: { type: "object", properties: { data }, required: ["data"] },
            },
          },
        };
  const replayed = spec.idempotent
    ? {
        headers: {
          [REPLAYED_HEADER]: {
            description: "`true` on an answer replayed for a retry with the same Idempotency-Key",
            schema: { type: "string", enum: ["true"] },
          },
        },
      }
    : {};
  if (spec.idempotent && !spec.produces) Object.assign(responses[status] as object, replayed);
  for (const extra of spec.alsoResponds ?? []) {
    responses[String(extra.status)] = {
      ...replayed,
      description: extra.description,
      content: {
        "application/json": {
          schema: {
            type: "object",
            properties: { data: extra.schema ? jsonSchema(extra.schema, "output") : {} },
            required: ["data"],
          },
        },
      },
    };
  }
  const errors = new Set<number>(spec.errors ?? []);
  if (!isPublic) errors.add(401);
  if ("tag" in spec.auth) errors.add(403);
  if (spec.body || spec.query || spec.params) errors.add(400);
  if (spec.body || spec.rawBody || spec.streamedBody) errors.add(413);
  if (spec.store) errors.add(501);
  errors.add(500);
  for (const code of [...errors].sort()) {
    responses[String(code)] = {
      description: STATUS_TEXT[code] ?? "Error",
      content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
    };
  }
  op.responses = responses;
  return op;
}

/** The whole document; every registered route appears exactly once. */
export function buildOpenApiDocument(routes: readonly RouteSpec[] = registry): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const spec of routes) {
    (paths[spec.path] ??= {})[spec.method] = operation(spec);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Conversation Bridge and Operator HTTP Service",
      version: API_VERSION,
      description: "Operator HTTP API served under /api. Success bodies are {data: ...}; errors are {error, code?}.",
    },
    servers: [{ url: "/" }],
    security: [{ apiKey: [] }],
    components: {
      securitySchemes: {
        apiKey: { type: "apiKey", in: "header", name: "x-api-key" },
      },
      schemas: {
        Error: {
          type: "object",
          required: ["error"],
          properties: {
            error: { type: "string" },
            code: { type: "string", description: "Stable machine-readable reason, on refusals that opt in" },
            error_id: { type: "string", description: "On 500: correlates with the server log" },
          },
        },
      },
    },
    paths,
  };
}

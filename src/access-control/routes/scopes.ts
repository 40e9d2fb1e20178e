/**
 * Custom URL scope doors (docs/access-control.md, "Custom URL scopes"). Listing needs
 * `auth:read`; changes are admin-only (a scope widens every key that lists it).
 */
import { Hono } from "hono";
import { z } from "zod";
import { CustomScope, addScopeUrl, deleteScope, deleteUrlEverywhere, getScope, listScopes } from "../custom-scopes";
import { CUSTOM_SCOPE_ID, isCustomScopeId } from "../scopes";
import { MAX_SCOPE_URL_LENGTH, scopeUrlProblem } from "../url-pattern";
import type { AppEnv } from "../../platform/http/app-env";
import { HttpError, badRequest } from "../../platform/http/errors";
import { pageSchema, pagingQuery, toPage, toWindow } from "../../platform/http/paging";
import { addRoute } from "../../platform/http/route";
import { must } from "../../platform/must";

export const accessControlScopesRouter = new Hono<AppEnv>();

const AREA = "auth";

/** A custom scope id: the grammar of src/access-control/scopes.ts, never a scope tag nor `urls`. */
const ScopeId = z
  .string()
  .regex(CUSTOM_SCOPE_ID, { message: "must be 1-64 characters of a-z, 0-9, _ . -, starting with a letter" })
  .refine(isCustomScopeId, { message: "must not be a scope tag (or the reserved word urls)" });

const ScopeUrlText = z.string().min(1).max(MAX_SCOPE_URL_LENGTH);

addRoute(
  accessControlScopesRouter,
  {
    method: "get",
    path: "/api/auth/scopes",
    summary: "List custom URL scopes with their URLs",
    description: "Only the custom scopes; the tag grammar (`*`, `<tag>`, `<tag>:read|write`, `tool:<name>`, `agent:<name>`) is fixed (docs/access-control.md).",
    area: AREA,
    auth: { tag: "auth" },
    query: pagingQuery,
    response: pageSchema(CustomScope),
  },
  async (c, { query }) => {
    const w = toWindow(query);
    const { items, total } = await listScopes(c.env.DB, w.offset, w.pageSize);
    return toPage(items, total, w);
  },
);

addRoute(
  accessControlScopesRouter,
  {
    method: "post",
    path: "/api/auth/scopes",
    summary: "Add a URL or pattern to a custom scope (admin), creating the scope",
    description:
      "`url` is a request path (`/api/states/profile`). Exact by default; with `pattern: true` a `*` segment matches one segment and a final `**` any rest. A key listing the scope id may then call those URLs with any method, on any door that is not admin-only (the key's role, conditions and owner still apply). Adding a URL the scope has re-sets its `pattern` flag.",
    area: AREA,
    auth: { tag: "auth", admin: true },
    body: z.object({ scope_id: ScopeId, url: ScopeUrlText, pattern: z.boolean().default(false) }).strict(),
    response: z.object({ scope_id: z.string(), added: z.boolean(), scope: CustomScope }),
  },
  async (c, { body }) => {
    const problem = scopeUrlProblem(body.url, body.pattern);
    if (problem) throw badRequest(`invalid body: ${problem}`);
    const { added } = await addScopeUrl(c.env.DB, body.scope_id, body.url, body.pattern, new Date().toISOString());
    return { scope_id: body.scope_id, added, scope: must(await getScope(c.env.DB, body.scope_id), "the scope just extended") };
  },
);

// Registered before `/api/auth/scopes/{scope_id}`: the router answers with the first match, and
// `urls` is reserved as a scope id for that reason.
addRoute(
  accessControlScopesRouter,
  {
    method: "delete",
    path: "/api/auth/scopes/urls",
    summary: "Remove a URL from every custom scope (admin)",
    description:
      "The URL goes in the query (`?url=/api/states/profile`), exactly as it was added. A scope left without URLs no longer exists. 404 when no scope had it.",
    area: AREA,
    auth: { tag: "auth", admin: true },
    query: z.object({ url: ScopeUrlText }),
    response: z.object({ removed_from: z.array(z.string()) }),
    errors: [404],
  },
  async (c, { query }) => {
    const removedFrom = await deleteUrlEverywhere(c.env.DB, query.url);
    if (removedFrom.length === 0) throw new HttpError(404, "no scope has this url");
    return { removed_from: removedFrom };
  },
);

addRoute(
  accessControlScopesRouter,
  {
    method: "delete",
    path: "/api/auth/scopes/{scope_id}",
    summary: "Delete a custom scope (admin)",
    description: "Removes all its URLs. Keys listing the id keep it, and it grants them nothing (until a scope of that id is created again).",
    area: AREA,
    auth: { tag: "auth", admin: true },
    params: z.object({ scope_id: ScopeId }),
    response: z.object({ scope_id: z.string(), removed: z.literal(true), urls: z.number().int() }),
    errors: [404],
  },
  async (c, { params }) => {
    const urls = await deleteScope(c.env.DB, params.scope_id);
    if (urls === 0) throw new HttpError(404, "scope not found");
    return { scope_id: params.scope_id, removed: true as const, urls };
  },
);

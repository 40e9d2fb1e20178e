/**
 * State templates: create or replace, read, list and delete the operator
 * documents a state can attach. Tagged `states`; 501 `states-not-configured` without a store.
 * Invalid input is 400 and names the field, never the value (src/states/templates.ts).
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import { badRequest } from "../../platform/http/errors";
import { pageSchema, pagingQuery, toPage, toWindow } from "../../platform/http/paging";
import { addRoute } from "../../platform/http/route";
import { STATES_DOOR } from "../refusals";
import {
  StateTemplateDocument,
  TemplateName,
  checkTemplatePrograms,
  deleteTemplate,
  getTemplate,
  listTemplates,
  namedDocument,
  putTemplate,
  templateNotFound,
} from "../templates";

export const stateTemplatesRouter = new Hono<AppEnv>();

const templateParams = z.object({ name: TemplateName });

addRoute(
  stateTemplatesRouter,
  {
    method: "get",
    path: "/api/state-templates",
    summary: "List state templates",
    ...STATES_DOOR,
    query: pagingQuery,
    response: pageSchema(StateTemplateDocument),
  },
  async (c, { query }) => {
    const w = toWindow(query);
    const { items, total } = await listTemplates(c.env.DB, w.offset, w.pageSize);
    return toPage(items, total, w);
  },
);

addRoute(
  stateTemplatesRouter,
  {
    method: "put",
    path: "/api/state-templates/{name}",
    summary: "Create or replace a state template",
    description:
      'The name comes from the path; a `name` in the body must equal it. An existing template is replaced only with `?replace=true` (409 otherwise). Every `{"$parameter": p}` node of `schema` must name a declared parameter; each `template_jq` program given as `content` must compile as jq once rendered with its kwargs, and so must `declarations.check`.',
    ...STATES_DOOR,
    params: templateParams,
    query: z.object({ replace: z.enum(["true", "false"], { error: 'must be "true" or "false"' }).optional() }),
    body: StateTemplateDocument,
    response: z.object({ name: z.string(), created: z.boolean(), template: StateTemplateDocument }),
    errors: [409],
  },
  async (c, { params, query, body }) => {
    if (body.name !== undefined && body.name !== params.name) throw badRequest("invalid body: name: must equal the template name in the path");
    const problem = await checkTemplatePrograms(body);
    if (problem) throw badRequest(`invalid body: ${problem}`);
    const template = namedDocument(body, params.name);
    const { created } = await putTemplate(c.env.DB, params.name, template, query.replace === "true", new Date().toISOString());
    return { name: params.name, created, template };
  },
);

addRoute(
  stateTemplatesRouter,
  {
    method: "get",
    path: "/api/state-templates/{name}",
    summary: "Read a state template",
    ...STATES_DOOR,
    params: templateParams,
    response: StateTemplateDocument,
    errors: [404],
  },
  async (c, { params }) => {
    const doc = await getTemplate(c.env.DB, params.name);
    if (!doc) throw templateNotFound();
    return doc;
  },
);

addRoute(
  stateTemplatesRouter,
  {
    method: "delete",
    path: "/api/state-templates/{name}",
    summary: "Delete a state template",
    ...STATES_DOOR,
    params: templateParams,
    response: z.object({ name: z.string(), deleted: z.literal(true) }),
    errors: [404],
  },
  async (c, { params }) => {
    if (!(await deleteTemplate(c.env.DB, params.name))) throw templateNotFound();
    return { name: params.name, deleted: true as const };
  },
);

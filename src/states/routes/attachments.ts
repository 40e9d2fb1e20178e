/**
 * Template attachments on a state and the template jq doors (platform-facts B5):
 * list, read, attach (PUT), patch declarations, detach; evaluate an input-purpose program over a
 * subject's record (GET, writes nothing) and apply an update-purpose program (POST, through the
 * record write path). Tagged `states`; 501 `states-not-configured` without a store.
 */
import { Hono } from "hono";
import { z } from "zod";
import { stateStoreStub } from "../rpc";
import type { AppEnv } from "../../platform/http/app-env";
import { type JsonObject, JsonValue, boundedJsonValue, jsonObjectSchema, MAX_JSON_BYTES } from "../../platform/http/bounded-json";
import { HttpError, badRequest } from "../../platform/http/errors";
import { addRoute } from "../../platform/http/route";
import { AttachBody, PatchAttachmentBody, attachTemplate, detachTemplate, patchAttachment } from "../attachments";
import { StateName } from "../declaration";
import { STATES_DOOR, refusal, stateNotFound } from "../refusals";
import { apiOrigin, readRecord, writeRecord } from "../records";
import { TemplateJqError, resolveProgram, runInputProgram, runUpdateProgram } from "../template-jq";
import { TemplateName } from "../templates";
import { AttachmentView, StateView } from "../views";
import { RECORD, recordParams, subjectOf } from "./records";

export const stateAttachmentsRouter = new Hono<AppEnv>();

const stateParams = z.object({ name: StateName });
const attachmentParams = z.object({ name: StateName, template: TemplateName });
const ProgramRef = z
  .string()
  .regex(/^[a-z](?:[a-z0-9]|-(?=[a-z0-9])){0,62}(\.[a-z_][a-z0-9_]{0,62})?$|^[a-z_][a-z0-9_]{0,62}$/, { message: "must be <name> or <template>.<name>" });
const programParams = recordParams.extend({ program: ProgramRef });

async function attachmentsOf(c: { env: AppEnv["Bindings"] }, name: string) {
  const list = await stateStoreStub(c.env, name).storedAttachments();
  if (!list) throw stateNotFound();
  return list;
}

addRoute(
  stateAttachmentsRouter,
  {
    method: "get",
    path: "/api/states/{name}/attachments",
    summary: "Templates attached on a state",
    ...STATES_DOOR,
    params: stateParams,
    response: z.object({ items: z.array(AttachmentView), total: z.number().int() }),
    errors: [404],
  },
  async (c, { params }) => {
    const items = (await attachmentsOf(c, params.name)).map(({ template, path, parameters, declarations }) => ({ template, path, parameters, declarations }));
    return { items, total: items.length };
  },
);

addRoute(
  stateAttachmentsRouter,
  {
    method: "get",
    path: "/api/states/{name}/attachments/{template}",
    summary: "One attachment of a state",
    ...STATES_DOOR,
    params: attachmentParams,
    response: AttachmentView,
    errors: [404],
  },
  async (c, { params }) => {
    const a = (await attachmentsOf(c, params.name)).find((x) => x.template === params.template);
    if (!a) throw new HttpError(404, "the template is not attached on this state");
    return { template: a.template, path: a.path, parameters: a.parameters, declarations: a.declarations };
  },
);

addRoute(
  stateAttachmentsRouter,
  {
    method: "put",
    path: "/api/states/{name}/attachments/{template}",
    summary: "Attach a template: its schema fragment composes into the effective schema at `path`",
    description:
      "Parameters are checked against the template's parameter schemas (defaults fill the rest) and substituted into its fragment; the attachment's declarations are checked against the template's declarations schema and its check jq (a string answer refuses with that text, 400). A path overlapping another attachment or an existing property is 409. Re-attaching the same template replaces its attachment.",
    ...STATES_DOOR,
    params: attachmentParams,
    body: AttachBody,
    response: StateView,
    errors: [404, 409],
  },
  async (c, { params, body }) => attachTemplate(c.env, params.name, params.template, body, Date.now()),
);

addRoute(
  stateAttachmentsRouter,
  {
    method: "patch",
    path: "/api/states/{name}/attachments/{template}",
    summary: "Replace an attachment's declarations (checked again)",
    ...STATES_DOOR,
    params: attachmentParams,
    body: PatchAttachmentBody,
    response: StateView,
    errors: [404],
  },
  async (c, { params, body }) => patchAttachment(c.env, params.name, params.template, body, Date.now()),
);

addRoute(
  stateAttachmentsRouter,
  {
    method: "delete",
    path: "/api/states/{name}/attachments/{template}",
    summary: "Detach a template (409 while records hold values at its path)",
    ...STATES_DOOR,
    params: attachmentParams,
    response: StateView,
    errors: [404, 409],
  },
  async (c, { params }) => detachTemplate(c.env, params.name, params.template, Date.now()),
);

/** A door's template jq failure is the caller's 400. */
async function asDoor<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof TemplateJqError) throw badRequest(err.message);
    throw err;
  }
}

addRoute(
  stateAttachmentsRouter,
  {
    method: "get",
    path: `${RECORD}/template-jq/{program}`,
    summary: "Evaluate an input-purpose template jq program over a subject's record (writes nothing)",
    description: "Each query parameter is one of the program's params, JSON-encoded (`?limit=3`, `?tag=%22vip%22`); they are bound as `$params`.",
    ...STATES_DOOR,
    params: programParams,
    query: z.record(z.string(), z.string().max(MAX_JSON_BYTES)),
    response: z.object({ name: z.string(), purpose: z.literal("input"), value: JsonValue }),
    errors: [404],
  },
  async (c, { params, query }) => {
    const program = resolveProgram(await attachmentsOf(c, params.name), params.program);
    const bound: JsonObject = {};
    for (const [k, raw] of Object.entries(query)) {
      try {
        bound[k] = JsonValue.parse(JSON.parse(raw));
      } catch {
        throw badRequest("invalid query: each parameter must be a JSON-encoded value");
      }
    }
    const record = await readRecord(c.env, params.name, subjectOf(params));
    const value = await asDoor(() => runInputProgram(c.env, program, record?.data ?? {}, bound));
    return { name: params.program, purpose: "input" as const, value };
  },
);

addRoute(
  stateAttachmentsRouter,
  {
    method: "post",
    path: `${RECORD}/template-jq/{program}`,
    summary: "Apply an update-purpose template jq program to a subject's record",
    description:
      "The program maps {record, input} (record: the part at its attachment's path) to an op batch relative to that path, applied like POST …/deltas (schema and regimes enforced). The audit trail records origin.meta = {template_jq: <name>}.",
    ...STATES_DOOR,
    params: programParams,
    body: z.object({ input: boundedJsonValue(MAX_JSON_BYTES) }).strict(),
    response: z.object({ name: z.string(), applied: z.boolean(), data: jsonObjectSchema, seq: z.number().int(), skipped: z.array(z.number().int()) }),
    errors: [404, 409],
  },
  async (c, { params, body, principal }) => {
    const program = resolveProgram(await attachmentsOf(c, params.name), params.program);
    const subject = subjectOf(params);
    const origin = apiOrigin(principal.key.user_id, null, { template_jq: params.program });
    // The ops are computed from one version of the record and applied only to that version; a
    // concurrent write in between is retried from the newer version.
    for (let attempt = 0; attempt < 3; attempt++) {
      const record = await readRecord(c.env, params.name, subject);
      const ops = await asDoor(() => runUpdateProgram(c.env, program, record?.data ?? {}, body.input as JsonValue));
      try {
        const r = await writeRecord(c.env, params.name, subject, { kind: "ops", ops, op_id: null, if_seq: record?.seq ?? 0 }, origin);
        return { name: params.program, applied: r.applied, data: r.record.data, seq: r.record.seq, skipped: r.skipped };
      } catch (err) {
        if (!(err instanceof HttpError && err.status === 409 && attempt < 2)) throw err;
      }
    }
    throw refusal({ ok: false, status: 409, error: "the record kept changing; retry" });
  },
);

/**
 * Attaching state templates (platform-facts B5 "Attachments"): resolve the template's
 * parameters, substitute them into its fragment, check the attachment's declarations (the
 * template's `declarations.schema`, then its `declarations.check` jq, which refuses by answering a
 * string), then hand the attachment to the state's object, which composes it into the effective
 * schema (overlapping paths 409) and mirrors nothing else. The D1 listing gets the new view.
 */
import { z } from "zod";
import { stateStoreStub, type StateView } from "./rpc";
import type { Env } from "../platform/env";
import { HttpError, badRequest } from "../platform/http/errors";
import { type JsonObject, boundedJsonObject, MAX_JSON_BYTES } from "../platform/http/bounded-json";
import { d1, run } from "../platform/persistence/d1";
import { intactIdentifier } from "../platform/http/identifiers";
import { JqError, jqRun } from "../platform/jq/engine";
import { checkAgainstSchema } from "../platform/json-schema";
import { substituteParameters } from "./effective-schema";
import { refusal } from "./refusals";
import { type StateTemplateDocument, getTemplate } from "./templates";

const PathKey = intactIdentifier(z.string().min(1, { message: "must not be empty" }).max(128));

export const AttachBody = z
  .object({
    path: z.array(PathKey).max(32).default([]),
    parameters: boundedJsonObject(MAX_JSON_BYTES).default({}),
    declarations: boundedJsonObject(MAX_JSON_BYTES).default({}),
    options: boundedJsonObject(MAX_JSON_BYTES).default({}),
  })
  .strict();
export type AttachBody = z.infer<typeof AttachBody>;

export const PatchAttachmentBody = z.object({ declarations: boundedJsonObject(MAX_JSON_BYTES) }).strict();
export type PatchAttachmentBody = z.infer<typeof PatchAttachmentBody>;

/** Every declared parameter's value: the given one, else its default; each checked against its schema. */
export function resolveParameters(doc: Pick<StateTemplateDocument, "parameters">, given: JsonObject): JsonObject {
  const declared = doc.parameters ?? {};
  for (const name of Object.keys(given))
    if (!Object.hasOwn(declared, name)) throw badRequest("invalid body: parameters: names a parameter the template does not declare");
  const out: JsonObject = {};
  for (const [name, p] of Object.entries(declared)) {
    const value = Object.hasOwn(given, name) ? given[name] : p.default;
    if (value === undefined) throw badRequest("invalid body: parameters: a declared parameter without a default has no value");
    const check = checkAgainstSchema(p.schema as JsonObject, value);
    if (!check.ok) throw badRequest(`invalid body: parameters: a value does not match its parameter's schema (${check.problems.join("; ")})`);
    out[name] = value as JsonObject[string];
  }
  return out;
}

/** The template's declaration checks over an attachment: its schema, then its jq check (a string answer refuses with that text). */
export async function checkDeclarations(
  doc: Pick<StateTemplateDocument, "declarations">,
  declarations: JsonObject,
  context: { parameters: JsonObject; path: string[] },
): Promise<void> {
  const rules = doc.declarations ?? {};
  if (rules.schema) {
    const check = checkAgainstSchema(rules.schema as JsonObject, declarations);
    if (!check.ok) throw badRequest(`invalid body: declarations: ${check.problems.join("; ")}`);
  }
  const program = rules.check?.content;
  if (!program) return;
  let outputs: unknown[];
  try {
    outputs = await jqRun(program, { declarations, parameters: context.parameters, path: context.path });
  } catch (err) {
    if (err instanceof JqError) throw badRequest(`the template's declarations check failed (${err.kind})`);
    throw err;
  }
  const refusalText = outputs.find((o): o is string => typeof o === "string");
  if (refusalText !== undefined) throw badRequest(refusalText.slice(0, 500));
}

async function templateOr404(env: Env, name: string): Promise<StateTemplateDocument> {
  const doc = await getTemplate(env.DB, name);
  if (!doc) throw new HttpError(404, "state template not found");
  return doc;
}

async function mirror(env: Env, view: StateView): Promise<StateView> {
  await run(d1(env.DB)`UPDATE states SET view = ${JSON.stringify(view)}, updated_at = ${view.updated_at} WHERE name = ${view.name}`);
  return view;
}

export async function attachTemplate(env: Env, state: string, template: string, body: AttachBody, nowMs: number): Promise<StateView> {
  const doc = await templateOr404(env, template);
  const parameters = resolveParameters(doc, body.parameters);
  const fragment = substituteParameters(doc.schema, parameters);
  if (!fragment.ok) throw badRequest(`the template's schema could not take its parameters: ${fragment.error}`);
  if (fragment.value === null || typeof fragment.value !== "object" || Array.isArray(fragment.value))
    throw badRequest("the template's schema is not a JSON object");
  await checkDeclarations(doc, body.declarations, { parameters, path: body.path });
  const r = await stateStoreStub(env, state).attach(
    {
      template,
      path: body.path,
      parameters,
      declarations: body.declarations,
      options: body.options,
      fragment: fragment.value as JsonObject,
      regimes: doc.regimes ?? [],
      programs: (doc.template_jq ?? {}) as JsonObject,
    },
    nowMs,
  );
  if (!r.ok) throw refusal(r);
  return mirror(env, r.view);
}

export async function patchAttachment(env: Env, state: string, template: string, body: PatchAttachmentBody, nowMs: number): Promise<StateView> {
  const stub = stateStoreStub(env, state);
  const attached = (await stub.storedAttachments())?.find((a) => a.template === template);
  if (!attached) throw new HttpError(404, "the template is not attached on this state");
  const doc = await templateOr404(env, template);
  await checkDeclarations(doc, body.declarations, { parameters: attached.parameters, path: attached.path });
  const r = await stub.patchAttachment(template, body.declarations, nowMs);
  if (!r.ok) throw refusal(r);
  return mirror(env, r.view);
}

export async function detachTemplate(env: Env, state: string, template: string, nowMs: number): Promise<StateView> {
  const r = await stateStoreStub(env, state).detach(template, nowMs);
  if (!r.ok) throw refusal(r);
  return mirror(env, r.view);
}

/**
 * A state binding checked when it is saved (bridge-facts §7 "validated and its templates
 * are attached (idempotently) at save"), so a turn never meets a binding that could not work:
 * every named state is declared; each attach's `templates` are attached on use (at the root path,
 * once; already attached is fine); every `template_jq` names a program of the right purpose among
 * the state's attachments (counting those about to be attached); and every TemplatedText renders
 * and compiles as jq. The first problem refuses the save with nothing stored. Messages name the
 * attach by position, not by name.
 */
import { stateStoreStub } from "./rpc";
import type { Env } from "../platform/env";
import { HttpError, badRequest } from "../platform/http/errors";
import { JqError, jqCompile } from "../platform/jq/engine";
import { renderTemplatedText, type TemplatedText } from "../templates/templated-text";
import type { JsonObject } from "../platform/http/bounded-json";
import { attachTemplate, detachTemplate } from "./attachments";
import type { StateBinding } from "../shared/state-binding";
import { type StoredProgram, resolveProgram } from "./template-jq";
import { getTemplate } from "./templates";

async function compiles(env: Env, t: TemplatedText | null, where: string): Promise<void> {
  if (!t) return;
  let program: string;
  try {
    program = await renderTemplatedText(env.DB, t);
  } catch {
    throw badRequest(`invalid body: state_binding: ${where} could not be rendered`);
  }
  try {
    await jqCompile(program);
  } catch (err) {
    if (err instanceof JqError) throw badRequest(`invalid body: state_binding: ${where} does not compile as jq`);
    throw err;
  }
}

export async function checkBindingForSave(env: Env, binding: StateBinding, nowMs: number): Promise<void> {
  // Checked first, writing nothing: states, programs, and what attaching on use would add.
  const toAttach: Array<{ state: string; template: string; where: string }> = [];
  for (const [i, attach] of binding.states.entries()) {
    const at = `states[${i}]`;
    const stub = stateStoreStub(env, attach.state);
    if (!(await stub.view())) throw new HttpError(404, `state_binding: ${at} names a state that is not declared`);
    await compiles(env, attach.subject_expr, `${at}.subject_expr`);
    await compiles(env, attach.scope_expr, `${at}.scope_expr`);
    for (const [j, inj] of attach.input_injections.entries()) await compiles(env, inj.jq, `${at}.input_injections[${j}].jq`);
    for (const [j, u] of attach.updates.entries()) {
      for (const [field, t] of [
        ["jq", u.jq],
        ["adapter", u.adapter],
        ["op_id", u.op_id],
      ] as const)
        await compiles(env, t, `${at}.updates[${j}].${field}`);
    }
    const attached = [...((await stub.storedAttachments()) ?? [])];
    for (const template of attach.templates) {
      if (attached.some((a) => a.template === template)) continue;
      const doc = await getTemplate(env.DB, template);
      if (!doc) throw new HttpError(404, `state_binding: ${at}.templates names a state template that does not exist`);
      // What the attachment will hold once attached on use: enough to resolve its programs now.
      attached.push({
        template,
        path: [],
        parameters: {},
        declarations: {},
        options: {},
        fragment: {},
        regimes: [],
        programs: (doc.template_jq ?? {}) as JsonObject,
      });
      if (!toAttach.some((t) => t.state === attach.state && t.template === template))
        toAttach.push({ state: attach.state, template, where: `${at}.templates` });
    }
    const wants: Array<[string | null, "input" | "update", string]> = [
      ...attach.input_injections.map((inj, j) => [inj.template_jq, "input", `${at}.input_injections[${j}]`] as [string | null, "input", string]),
      ...attach.updates.map((u, j) => [u.template_jq, "update", `${at}.updates[${j}]`] as [string | null, "update", string]),
    ];
    for (const [ref, purpose, where] of wants) {
      if (ref === null) continue;
      let program: StoredProgram;
      try {
        program = resolveProgram(attached, ref).program;
      } catch (err) {
        if (err instanceof HttpError)
          throw new HttpError(
            err.status,
            `state_binding: ${where}.template_jq: ${err.status === 404 ? "the template is not attached on its state" : err.message}`,
            err.code,
            err.extra,
            err.headers,
            err.reason,
          );
        throw err;
      }
      if (program.purpose !== purpose) throw badRequest(`invalid body: state_binding: ${where}.template_jq must name an ${purpose}-purpose program`);
    }
  }
  // Then the attachments on use; one that cannot attach (an overlapping fragment) undoes the
  // ones this save made, so a refused save leaves nothing behind.
  const done: Array<{ state: string; template: string }> = [];
  for (const t of toAttach) {
    try {
      await attachTemplate(env, t.state, t.template, { path: [], parameters: {}, declarations: {}, options: {} }, nowMs);
      done.push(t);
    } catch (err) {
      for (const d of done.reverse()) await detachTemplate(env, d.state, d.template, nowMs).catch(() => undefined);
      if (err instanceof HttpError)
        throw new HttpError(err.status, `state_binding: ${t.where} could not be attached on use: ${err.message}`, err.code, err.extra, err.headers, err.reason);
      throw err;
    }
  }
}

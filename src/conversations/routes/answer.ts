/** How the message and event doors answer an admission. */
import type { Context } from "hono";
import type { Admission } from "../door/admission";
import { inlineAnswer } from "../model/record";
import type { AppEnv } from "../../platform/http/app-env";
import { REPLAYED_HEADER } from "../../platform/http/idempotency";

/**
 * 200 with the inline answer, or 202 with where the answer will be; an answer replayed for a retry
 * with the same `Idempotency-Key` is the first request's, marked with `Idempotent-Replayed: true`.
 */
export function admissionAnswer(c: Context<AppEnv>, admission: Admission): Response {
  if (admission.replayed) c.header(REPLAYED_HEADER, "true");
  if (admission.kind === "answered") return c.json({ data: inlineAnswer(admission.record) }, 200);
  return c.json({ data: { message_id: admission.message_id, thread_id: admission.thread_id } }, 202);
}

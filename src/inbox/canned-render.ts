/**
 * A canned response rendered for one thread (docs/inbox.md, "Canned responses"): the template
 * gets the thread's context and comes back as the text an operator would send. Nothing is sent
 * and nothing is written: the operator edits the text and sends it through the operator send door.
 */
import { z } from "zod";
import { routeNameSchema } from "../conversations/model/schemas";
import { MAX_OPERATOR_TEXT, threadIdField } from "../conversations/operator/schemas";
import { newestMessage } from "../conversations/operator/operator-send";
import { guardThreadOnRoute } from "../conversations/operator/thread-guard";
import type { Route } from "../conversations/model/route";
import type { Env } from "../platform/env";
import { badRequest } from "../platform/http/errors";
import { renderTemplate } from "../templates/templated-text";

/** The render door's body: the thread, named as the mode doors name it, with its route. */
export const CannedRenderBody = z.object({ route_name: routeNameSchema, thread_id: threadIdField }).strict();
export type CannedRenderBody = z.infer<typeof CannedRenderBody>;

/** The render door's answer: the text, for the operator to edit and send. */
export const CannedRenderAnswer = z.object({ text: z.string() }).strict();
export type CannedRenderAnswer = z.infer<typeof CannedRenderAnswer>;

/** What a canned response's template sees. */
export const CannedRenderContext = z
  .object({
    route: z.object({ name: z.string(), channel: z.string().nullable() }).strict(),
    customer: z.object({ address: z.string().nullable() }).strict(),
    operator: z.object({ user_id: z.string() }).strict(),
    thread: z.object({ id: z.string() }).strict(),
  })
  .strict();
export type CannedRenderContext = z.infer<typeof CannedRenderContext>;

/**
 * The context of `threadId` on `route` for `operator`, after the thread-belongs-to-route guard
 * the mode doors apply. The customer's address is that of the thread's newest record with one
 * (on a person's thread, the address the person last wrote from or was last answered at); null
 * while the thread has none.
 */
export async function threadContext(env: Env, route: Route, threadId: string, operator: string): Promise<CannedRenderContext> {
  const guarded = await guardThreadOnRoute(env, route.route_name, threadId, route);
  const newest = await newestMessage(env, guarded.thread_id);
  return {
    route: { name: route.route_name, channel: route.channel },
    customer: { address: newest?.client_address ?? null },
    operator: { user_id: operator },
    thread: { id: guarded.thread_id },
  };
}

/**
 * Renders `template` with `context`: mustache without HTML escaping (the output is chat text, as
 * every TemplatedText is). 400 when the result is longer than an operator message may be: a
 * 4 KiB template repeating a long thread id can multiply.
 */
export function renderCanned(template: string, context: CannedRenderContext): string {
  const text = renderTemplate(template, context);
  if (text.length > MAX_OPERATOR_TEXT) throw badRequest(`the rendered text exceeds ${MAX_OPERATOR_TEXT} characters, the operator send's limit`);
  return text;
}

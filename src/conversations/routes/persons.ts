/**
 * The person doors (spec §4.8; decisions §12): read a linked person and set its locale. Tagged
 * `conversations` (read grant, write grant); 501 `conversations-not-configured` without a store.
 * Persons exist only on targets whose config sets `multichannel` (docs/api-notes.md).
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import { HttpError, badRequest } from "../../platform/http/errors";
import { intactIdentifier } from "../../platform/http/identifiers";
import { addRoute } from "../../platform/http/route";
import { canonicalLocale } from "../../persons/pairing";
import { directoryOfPerson } from "../../persons/person-lookup";
import { Door, TargetKind } from "../../shared/kinds";
import { VisitorProfile } from "../../shared/visitor-profile";
import { erasePerson } from "../operator/threads";

export const conversationPersonsRouter = new Hono<AppEnv>();

const personParams = z.object({
  person_id: intactIdentifier(
    z
      .string()
      .max(64)
      .refine((s) => s.trim() !== "", { message: "must not be blank" }),
  ),
});

const PersonAddressView = z.object({
  door: Door,
  routes: z.array(z.string()),
  channel: z.string().nullable(),
  our_identity: z.string().nullable(),
  address: z.string(),
  linked_at: z.string(),
});

const PersonViewSchema = z.object({
  person_id: z.string(),
  target_kind: TargetKind,
  target_name: z.string(),
  created_at: z.string(),
  addresses: z.array(PersonAddressView),
  locale: z.string().nullable(),
  profile: VisitorProfile.extend({ updated_at: z.string() })
    .nullable()
    .describe(
      "What the person told about themselves: a web visitor's pre-chat answers and the site's vouched claims, folded across their conversations (docs/persons.md, \"Profile\")",
    ),
});

const notFound = () => new HttpError(404, "person not found");

addRoute(
  conversationPersonsRouter,
  {
    method: "get",
    path: "/api/conversations/persons/{person_id}",
    summary: "Read a linked person: its target, addresses (with the routes each came in on), locale and profile",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    params: personParams,
    response: PersonViewSchema,
    errors: [404],
  },
  async (c, { params }) => {
    const directory = await directoryOfPerson(c.env, params.person_id);
    const person = directory ? await directory.get(params.person_id) : null;
    if (!person) throw notFound();
    return person;
  },
);

addRoute(
  conversationPersonsRouter,
  {
    method: "put",
    path: "/api/conversations/persons/{person_id}/locale",
    summary: "Set or clear a person's locale (a BCP 47 tag, or null)",
    description:
      "The tag is stored canonicalized (pt-br → pt-BR); a malformed tag is 400. The locale is seeded from the channel's hint at first contact and never overwritten by later turns; this door is how an operator changes it.",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    params: personParams,
    body: z.object({ locale: z.string().max(64).nullable() }).strict(),
    response: PersonViewSchema,
    errors: [404],
  },
  async (c, { params, body }) => {
    const locale = body.locale === null ? null : canonicalLocale(body.locale);
    if (body.locale !== null && locale === null) throw badRequest("invalid body: locale: must be a BCP 47 language tag or null");
    const directory = await directoryOfPerson(c.env, params.person_id);
    const person = directory ? await directory.setLocale(params.person_id, locale) : null;
    if (!person) throw notFound();
    return person;
  },
);

addRoute(
  conversationPersonsRouter,
  {
    method: "delete",
    path: "/api/conversations/persons/{person_id}",
    summary: "Erase a linked person: its aggregated thread on every route, then the person and its address mappings",
    description:
      "Forgets bridge:@person:{person_id} wherever it is held (records, agent memory, listing rows, directory and dedupe entries), then deletes the person row with its address rows and open pairing codes, atomically and last. Idempotent: an unknown or already erased person answers erased: false (its aggregated thread is still forgotten). `removed` counts the records deleted. The person's route-keyed threads from before it was linked are not part of it; forget them with the thread door. 409 while a turn is in flight on the person thread.",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    params: personParams,
    response: z.object({ person_id: z.string(), removed: z.number().int(), erased: z.boolean() }),
    errors: [409],
  },
  async (c, { params }) => erasePerson(c.env, c.get("settings"), params.person_id),
);

/** Zod schemas of access-control identifiers, shared by the auth doors and the bridge's route body. */
import { z } from "zod";

/** A key's `user_id` (decisions §2): also a route's `execution_key` and a key's owner. */
export const userIdSchema = z.string().regex(/^[A-Za-z0-9_.@+:-]{1,128}$/, { message: "must be 1-128 characters of letters, digits and _ . @ + : -" });

/**
 * A header value that names a connection (docs/connectors.md "The tool header"): an HTTP tool's
 * or HTTP agent's header may be `{"connection": "<connection_id>"}`, sent as
 * `Bearer <access_token>`, or `{"connection": "<id>", "format": "token {access_token}"}` for
 * another scheme. Reads show the reference as declared; the token is resolved at each call from
 * the connection's object and never stored with the declaration.
 */
import { z } from "zod";

/** Connection ids are UUID v4 (lower case), as minted by the completion door. */
export const CONNECTION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export const connectionIdSchema = z.string().regex(CONNECTION_ID, { message: "must be a connection id (a lower-case UUID)" });

/** The placeholder a `format` carries exactly once. */
export const TOKEN_PLACEHOLDER = "{access_token}";
export const DEFAULT_HEADER_FORMAT = `Bearer ${TOKEN_PLACEHOLDER}`;

export const connectionRefSchema = z
  .object({
    connection: connectionIdSchema,
    format: z
      .string()
      .max(256)
      .refine((f) => f.split(TOKEN_PLACEHOLDER).length === 2, { message: `must contain ${TOKEN_PLACEHOLDER} exactly once` })
      .refine((f) => !/[\r\n\0]/.test(f), { message: "must not contain CR, LF or NUL" })
      .optional(),
  })
  .strict();
export type ConnectionRef = z.infer<typeof connectionRefSchema>;

/** The header value sent for `ref` with `accessToken`. */
export function renderConnectionHeader(ref: ConnectionRef, accessToken: string): string {
  return (ref.format ?? DEFAULT_HEADER_FORMAT).replace(TOKEN_PLACEHOLDER, () => accessToken);
}

/** The reference as reads show it (the same fields, nothing resolved). */
export function connectionRefView(ref: ConnectionRef): ConnectionRef {
  return ref.format === undefined ? { connection: ref.connection } : { connection: ref.connection, format: ref.format };
}

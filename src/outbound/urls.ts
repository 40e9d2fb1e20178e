import { z } from "zod";
import { badRequest } from "../platform/http/errors";
import { checkOutboundUrl } from "../platform/net/address-guard";
import type { Settings } from "../platform/settings/settings";

/**
 * An outbound endpoint: absolute http(s) URL with a host and no userinfo (credentials belong in
 * env-referenced headers, where reads never show them). http is allowed for local endpoints.
 */
export const endpointUrlSchema = z
  .string()
  .max(2048)
  .refine(
    (s) => {
      let u: URL;
      try {
        u = new URL(s);
      } catch {
        return false;
      }
      return (u.protocol === "https:" || u.protocol === "http:") && u.hostname !== "" && !u.username && !u.password;
    },
    { message: "must be an absolute http(s) URL with a host and no user:password" },
  );

/**
 * The outbound address guard at declaration: a 400 naming the body field and the reason (the
 * kind of host and the setting), never the URL. The same check runs again before each send.
 */
export function assertDeclaredUrl(field: string, url: string, settings: Settings): void {
  const verdict = checkOutboundUrl(url, settings.outbound);
  if (!verdict.ok) throw badRequest(`invalid body: ${field}: ${verdict.reason}`);
}

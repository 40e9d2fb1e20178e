import { z } from "zod";

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

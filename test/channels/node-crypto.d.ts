// The worker tsconfig loads no Node types; declare the one node:crypto call the channel tests use
// (workerd provides it under nodejs_compat) as an independent HMAC implementation.
declare module "node:crypto" {
  interface Hmac {
    update(data: string, encoding: "utf8"): Hmac;
    digest(encoding: "hex" | "base64"): string;
  }
  export function createHmac(algorithm: "sha1" | "sha256", key: string): Hmac;
}

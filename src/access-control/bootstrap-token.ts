/**
 * Which ACCESS_CONTROL_BOOTSTRAP_TOKEN the Worker accepts. The token mints the first admin key of
 * a deployment, so a value anyone can read or guess must not open bootstrap: the Worker treats a
 * short or published token as no token at all (`POST /api/keys/bootstrap` answers 501
 * `access-control-not-configured`, `GET /api/login/methods` reports `bootstrap: false`). The
 * deploy's preflight (scripts/deploy.ts) and `npm run check-config` apply the same rule.
 */

/** The shortest token accepted: 32 characters (`npm start` writes 43, 32 random bytes in base64url). */
export const BOOTSTRAP_TOKEN_MIN_LENGTH = 32;

/**
 * Values that have been public: committed in this repository's wrangler.toml or printed in its
 * docs. Listed whatever their length, so a long one added here is refused too.
 */
export const PUBLISHED_BOOTSTRAP_TOKENS: readonly string[] = ["local-dev-bootstrap-token"];

/** Why a token cannot open bootstrap, or null when it can. Names the setting, never the value. */
export function bootstrapTokenProblem(token: unknown): string | null {
  if (typeof token !== "string" || token === "") return "ACCESS_CONTROL_BOOTSTRAP_TOKEN is not set";
  if (PUBLISHED_BOOTSTRAP_TOKENS.includes(token)) return "ACCESS_CONTROL_BOOTSTRAP_TOKEN is a published value, committed or printed in the docs";
  if (token.length < BOOTSTRAP_TOKEN_MIN_LENGTH) return `ACCESS_CONTROL_BOOTSTRAP_TOKEN is shorter than ${BOOTSTRAP_TOKEN_MIN_LENGTH} characters`;
  return null;
}

/**
 * The verifier kinds a topic can be bound to (docs/hooks.md "Verifiers"), each a pure function
 * (src/hooks/verifiers/*.ts) with its description for `GET /api/hooks/verifiers`.
 */
import type { Verifier } from "./common";
import { GENERIC_DELIVERY_HEADER, GENERIC_SIGNATURE_HEADER, verifyGenericHmac } from "./generic-hmac";
import { verifyGithub } from "./github";
import { verifyStandardWebhooks } from "./standard-webhooks";
import { verifyStripe } from "./stripe";

export const VERIFIER_KINDS = ["github", "stripe", "standard_webhooks", "hmac_sha256"] as const;
export type VerifierKind = (typeof VERIFIER_KINDS)[number];

export interface VerifierKindInfo {
  kind: VerifierKind;
  description: string;
  /** The headers a delivery must carry. */
  signature_headers: string[];
  /** What the replay key is: a delivery id the signature covers, or else a digest of the signed body. */
  delivery_id: string;
  /** Whether a signed timestamp is checked against HOOKS_VERIFIER_TOLERANCE_SECONDS. */
  timestamp_tolerance: boolean;
}

/**
 * Each kind, with whether the delivery id its verifier reports is covered by the signature
 * (`idSigned`). Only a signed id may be the replay key: an unsigned one (GitHub's
 * `X-GitHub-Delivery`, the generic scheme's header) can be changed or dropped on a captured
 * delivery, which would then verify and fire again. For those kinds the replay key is a digest of
 * the signed body instead (src/hooks/deliveries.ts).
 */
export const VERIFIERS: Readonly<Record<VerifierKind, { verify: Verifier; idSigned: boolean; info: VerifierKindInfo }>> = {
  github: {
    verify: verifyGithub,
    idSigned: false,
    info: {
      kind: "github",
      description: "GitHub webhooks: X-Hub-Signature-256 = sha256=<hex HMAC-SHA256(secret, raw body)>.",
      signature_headers: ["X-Hub-Signature-256"],
      delivery_id: "a SHA-256 digest of the signed body (X-GitHub-Delivery is not signed, so it is not trusted as the key)",
      timestamp_tolerance: false,
    },
  },
  stripe: {
    verify: verifyStripe,
    idSigned: true,
    info: {
      kind: "stripe",
      description: 'Stripe webhooks: Stripe-Signature = t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")> (any v1 may match).',
      signature_headers: ["Stripe-Signature"],
      delivery_id: "the verified event's id (body field `id`, signed with the body); a digest of the signed body when it has none",
      timestamp_tolerance: true,
    },
  },
  standard_webhooks: {
    verify: verifyStandardWebhooks,
    idSigned: true,
    info: {
      kind: "standard_webhooks",
      description:
        'Standard Webhooks: webhook-signature = space-separated v1,<base64 HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<raw body>")>; the key is the secret\'s base64 after an optional whsec_ prefix.',
      signature_headers: ["webhook-id", "webhook-timestamp", "webhook-signature"],
      delivery_id: "the webhook-id header (signed: part of the signed content)",
      timestamp_tolerance: true,
    },
  },
  hmac_sha256: {
    verify: verifyGenericHmac,
    idSigned: false,
    info: {
      kind: "hmac_sha256",
      description: `Generic: the hex HMAC-SHA256(secret, raw body), optionally prefixed sha256=, in the binding's signature_header (default ${GENERIC_SIGNATURE_HEADER}).`,
      signature_headers: [`${GENERIC_SIGNATURE_HEADER} (or the binding's signature_header)`],
      delivery_id: `a SHA-256 digest of the signed body (the binding's delivery_header, default ${GENERIC_DELIVERY_HEADER}, is not signed, so it is not trusted as the key)`,
      timestamp_tolerance: false,
    },
  },
};

/**
 * The web channel's shapes shared by the door (src/web-chat/) and the thread
 * (src/conversations/thread/web-visitor.ts): transcript entries, session checks and the visitor's
 * credential format.
 */
import { z } from "zod";
import type { TurnState } from "./live";
import type { ProfileValue, Vouched } from "../../shared/visitor-profile";
import type { MdBlock } from "../../shared/markdown";

/** Who an entry is from: the visitor, the route's target, or an operator typing by hand. */
export const WebEntryRole = z.enum(["visitor", "bot", "operator"]);

/** One transcript entry as the page receives it. */
export interface WebEntry {
  seq: number;
  role: z.infer<typeof WebEntryRole>;
  text: string;
  /** The answer's rich part (media, options, a question), or null. */
  part: unknown;
  at: string;
  message_id: string | null;
  /** The answer of a turn a stop door ended: its text is the draft the run had written (absent otherwise). */
  stopped?: true;
  /**
   * On an answer entry (`bot`, `operator`) of a record: the visitor's own rating of it, null when
   * none; absent on the visitor's entries and on notices (docs/web-channel-client.md).
   */
  rating?: "up" | "down" | null;
  /**
   * On an entry of the route's target or an operator: the shown text (the entry's text, else its
   * question's prompt) parsed as the markdown subset, so the page renders it without a parser of
   * its own. Absent on the visitor's entries, which stay as typed.
   */
  md?: MdBlock[];
}

/** The entries a visitor may rate: an answer of the route's target or an operator's, of a record. */
export const RATEABLE_ROLES: ReadonlySet<z.infer<typeof WebEntryRole>> = new Set(["bot", "operator"]);

/**
 * Frames a page's socket receives (docs/web-channel-client.md): the backlog's entries, `ready`,
 * then each new entry; `turn` on every change of the visitor's turn, `draft` (the whole draft so
 * far with its parse, at most one per 150 ms) while it runs; `ended` when the session ends.
 */
export type WebFrame =
  | { type: "ready"; after: number }
  | { type: "entry"; entry: WebEntry }
  | { type: "ended" }
  | { type: "turn"; message_id: string; state: TurnState }
  | { type: "draft"; message_id: string; text: string; md: MdBlock[] };

/**
 * What a visitor's thread keeps of their profile (docs/channels.md, "Pre-chat form"): the pre-chat
 * answers they gave in this conversation, and the claims the site vouched for in a verified
 * visitor's token. Each is null until given.
 */
export interface WebProfile {
  answers: Record<string, ProfileValue> | null;
  vouched: Vouched | null;
}

/** What a session check answers: a match (with the captured link params and the visitor's profile) or nothing. */
export type WebSessionCheck = { ok: true; params: Record<string, string> | null; profile: WebProfile | null } | { ok: false };

/**
 * A visitor id: `w_` and 22 base64url characters (16 random bytes) for an anonymous visitor, or
 * `u_` and 22 (16 bytes of a hash of the identity and the site's user id) for a verified one.
 */
export const VISITOR_ID = /^[wu]_[A-Za-z0-9_-]{22}$/;

/** True for a verified visitor's id (`u_…`): the site's backend vouched for its user. */
export const isVerifiedVisitor = (visitorId: string) => visitorId.startsWith("u_");
/**
 * How many sessions a verified visitor's thread keeps at once, one per device (the least recently
 * used goes past it); an anonymous visitor's thread keeps one, its address being its device's.
 */
export const MAX_DEVICE_SESSIONS = 5;
/** A session secret: 43 base64url characters (32 random bytes). */
export const SESSION_SECRET = /^[A-Za-z0-9_-]{43}$/;
/** A web identity: a URL path segment. */
export const WEB_IDENTITY = /^[A-Za-z0-9_-]{1,64}$/;

/** The headers the web door sets on a stream request it forwards to the visitor's thread object. */
export const WEB_HEADERS = {
  identity: "x-web-identity",
  secretHash: "x-web-secret-hash",
  ttlMs: "x-web-ttl-ms",
  after: "x-web-after",
  maxStreams: "x-web-max-streams",
  ticketHash: "x-web-ticket-hash",
} as const;

/** An attachment id: 43 base64url characters (32 random bytes). */
export const ATTACHMENT_ID = /^[A-Za-z0-9_-]{43}$/;

/** What a visitor's upload is, as the thread keeps it and the doors show it. */
export interface WebAttachment {
  attachment_id: string;
  /** `image` for the image types, `document` for the rest (src/shared/media.ts MediaKind). */
  kind: "image" | "document";
  /** The type its bytes were found to be (never the type the upload claimed). */
  content_type: string;
  bytes: number;
  filename: string;
}

/** Where an upload's bytes are kept in the WEB_ATTACHMENTS bucket. */
export const attachmentKey = (attachmentId: string) => `web/${attachmentId}`;

const REF_PREFIX = "web-attachment:";

/**
 * The reference a turn's attachment carries (`url` of the shared Attachment shape, like
 * `telegram-file:`): the route and the id, which `GET /api/conversations/{route_name}/attachments/{id}`
 * resolves for a key that may read the route's conversations.
 */
export const attachmentRef = (routeName: string, attachmentId: string) => `${REF_PREFIX}${routeName}/${attachmentId}`;

/** The attachment id a reference names, or null when `url` is no web attachment's reference. */
export function attachmentIdOf(url: string): string | null {
  if (!url.startsWith(REF_PREFIX)) return null;
  const id = url.slice(url.lastIndexOf("/") + 1);
  return ATTACHMENT_ID.test(id) ? id : null;
}

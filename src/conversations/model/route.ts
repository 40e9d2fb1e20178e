/**
 * A conversation route (spec §2.1, decisions §5) and what the door's read learns with it: the shapes
 * both halves of a conversation and the thread's contract share. The D1 statements that read and
 * write them are src/conversations/store.ts.
 */
import { z } from "zod";
import type { KeyWithOwner } from "../../access-control/model";
import type { TargetConversationConfig } from "../../persons/target-configs";
import type { BusinessHours } from "../business-hours";
import { JsonValue } from "../../platform/http/bounded-json";
import { jsonColumn } from "../../platform/persistence/stored-json";
import { Door, Mode, TargetKind } from "../../shared/kinds";

/** A 0/1 column read as a boolean (SQLite has none), written back as 0 or 1. */
const flagColumn = z.codec(z.union([z.number(), z.boolean()]), z.boolean(), {
  decode: (v) => v === true || v === 1,
  encode: (b) => (b ? 1 : 0),
});

/**
 * A route: the one schema of a stored route (a `routes` row), with its type under the same name. Reading a
 * row validates it (`Route.parse` decodes the JSON columns); writing one encodes it
 * (`z.encode`), and the statement's column list is this schema's keys, so the table, the type and
 * the view below cannot drift apart.
 */
export const Route = z.object({
  route_name: z.string(),
  door: Door,
  target_kind: TargetKind,
  target_name: z.string(),
  execution_key: z.string(),
  execution_key_fingerprint: z.string(),
  /**
   * The expression as posted (a jq string or a TemplatedText), kept to show it back. Only the view
   * reads it (turns run the compiled `payload_program`), so it is stored and read as plain JSON,
   * not re-validated against today's door rules.
   */
  payload_expr: jsonColumn(JsonValue).nullable(),
  payload_program: z.string().nullable(),
  reply_expr: jsonColumn(JsonValue).nullable(),
  reply_program: z.string().nullable(),
  initial_mode: Mode,
  channel: z.string().nullable(),
  our_identity: z.string().nullable(),
  callback_url: z.string().nullable(),
  /** Kept recoverable to sign callbacks (docs/architecture.md); never in the view. */
  callback_secret: z.string().nullable(),
  turns_per_hour_override: z.number().nullable(),
  /**
   * A channel route puts 👍/👎 reply buttons under its target's answers where the channel has
   * buttons (docs/channels.md, "Answer feedback buttons"); off by default.
   */
  answer_feedback: flagColumn,
  created_at: z.string(),
  updated_at: z.string(),
});
export type Route = z.infer<typeof Route>;

/**
 * The public view of a route: the row without the callback secret (not even null) and the
 * compiled programs; the expressions as their values (the view is never read from storage).
 */
export const RouteView = Route.omit({ payload_program: true, reply_program: true, callback_secret: true }).extend({
  // The column's value side; a JsonValue already includes null.
  payload_expr: Route.shape.payload_expr.unwrap().out,
  reply_expr: Route.shape.reply_expr.unwrap().out,
  answer_feedback: z.boolean(),
});
export type RouteView = z.infer<typeof RouteView>;

/**
 * What the door's read learns about the route's target, handed to the turn as one piece (a new
 * fact joins here, not as another parameter through every door, the accept request and the turn).
 */
export interface TargetFacts {
  /** The target's conversation config, null when it has none. */
  config: TargetConversationConfig | null;
  /** A multichannel target's manual routes (the person-thread default mode); null for other targets. */
  manualRoutes: string[] | null;
  /** A state-bound target's pending saves outstanding (its turns queue behind them); null for other targets. */
  pendingSaves: number | null;
  /**
   * Who wrote the config and that key's live record and owner (read only when the config carries a
   * state binding; absent for other targets): the binding runs bounded by that key.
   */
  configWriter?: { stored_by: string; holder: KeyWithOwner | null };
  /**
   * The route's business hours (null: none, always open; absent: not read). The route's own, not
   * its target's, but read in the same statement and handed to the turn the same way, so a turn
   * that needs them out of hours costs no read of its own.
   */
  hours?: BusinessHours | null;
}

export const NO_TARGET_FACTS: TargetFacts = Object.freeze({ config: null, manualRoutes: null, pendingSaves: null });

/** What a door reads in its one round trip: the route, its execution key and owner, and its target's facts. */
export interface RouteWithKey {
  route: Route | null;
  /** null when the key is gone. */
  key: KeyWithOwner | null;
  target: TargetFacts;
}

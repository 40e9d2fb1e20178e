/** The API doors the console uses (method, OpenAPI path template), checked against `me.routes`. */
import type { Door } from "./session";

const C = "/api/conversations/{route_name}";

export const DOORS = {
  me: ["GET", "/api/auth/me"],
  methods: ["GET", "/api/login/methods"],
  claim: ["POST", "/api/login/claim"],
  routes: ["GET", "/api/conversations"],
  route: ["GET", C],
  threads: ["GET", `${C}/threads`],
  search: ["GET", `${C}/messages/search`],
  transcript: ["GET", `${C}/transcript`],
  modeRead: ["GET", `${C}/thread/mode`],
  modeSet: ["PUT", `${C}/thread/mode`],
  send: ["POST", `${C}/thread/messages`],
  forget: ["DELETE", `${C}/thread`],
  record: ["GET", `${C}/messages/{message_id}`],
  liveTicket: ["POST", `${C}/live-tickets`],
  person: ["GET", "/api/conversations/persons/{person_id}"],
  erase: ["DELETE", "/api/conversations/persons/{person_id}"],
  channels: ["GET", "/api/channels"],
  failed: ["GET", "/api/conversations/messages/failed"],
  runs: ["GET", "/api/runs"],
  trace: ["GET", "/api/observability/runs/{trace_id}/trace"],
  pending: ["GET", "/api/interactions/pending"],
  answer: ["POST", "/api/interactions/{interaction_id}/answer"],
  cancel: ["POST", "/api/interactions/{interaction_id}/cancel"],
  notifications: ["GET", "/api/notifications"],
} as const satisfies Record<string, Door>;

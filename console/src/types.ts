/** Shapes of API answers that more than one view reads. */

/** A conversation route as `GET /api/conversations` lists it (the fields the console reads). */
export interface RouteView {
  route_name: string;
  door: "api" | "channel";
  channel: string | null;
  target_kind: string;
  target_name: string;
  initial_mode: "agent" | "manual";
}

/** A thread as the inbox lists it (`GET /api/inbox/threads`). */
export interface InboxItem {
  route_name: string;
  thread_id: string;
  channel: string | null;
  client_address: string | null;
  last_activity_at: string;
  message_count: number;
  last_status: string;
  inbox_status: "pending" | "open" | "snoozed" | "resolved";
  assignee: string | null;
  waiting_since: string | null;
  labels: string[];
  /** Answers of the thread its customer rated down (absent from a service without answer feedback). */
  rated_down?: number;
}

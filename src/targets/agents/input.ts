/**
 * What an agent run works on: the thread whose memory it keeps and the user's words; a
 * conversation turn's attachments ride along (the shared media shape: a URL or a provider
 * reference, never bytes), which the http agent passes on and the others do not read.
 */
import type { Attachment } from "../../shared/media";

export interface AgentInput {
  thread_id: string;
  user_message: string;
  attachments?: Attachment[];
}

import { JqError, jqCompile, jqRun } from "../platform/jq/engine";
import { HttpError } from "../platform/http/errors";
import type { KeyRecord } from "./key-store";

/** What a key's jq condition sees (decisions §2). `request` is absent at turn time. */
export interface ConditionInput {
  sub: string;
  scopes: string[];
  identity: { owner_user_id: string | null };
  policy: { description: string; disabled: boolean; key_fingerprint: string; role: string | null };
  request?: { method: string; path: string };
  /**
   * The thread a door is about to show or act on, where the door knows it (the inbox doors,
   * docs/inbox.md): a condition on `.thread.assignee` scopes a key to "mine only". Absent at
   * admission, so such a condition must let `.thread == null` through.
   */
  thread?: ConditionThread;
  system: { time: string };
}

/** What a condition sees of a thread: where it is, who holds it, its inbox status and labels. */
export interface ConditionThread {
  route_name: string;
  thread_id: string;
  assignee: string | null;
  status: string;
  labels: string[];
  waiting: boolean;
}

export function conditionInput(key: KeyRecord, now: Date, request?: { method: string; path: string }): ConditionInput {
  return {
    sub: key.user_id,
    scopes: key.scopes,
    identity: { owner_user_id: key.owner_user_id },
    policy: { description: key.description, disabled: key.disabled, key_fingerprint: key.key_fingerprint, role: key.role },
    ...(request ? { request } : {}),
    system: { time: now.toISOString() },
  };
}

/** Allows only when the program outputs exactly `true`; any error or other output denies. */
export async function conditionAllows(program: string, input: ConditionInput): Promise<boolean> {
  try {
    const out = await jqRun(program, input);
    return out.length === 1 && out[0] === true;
  } catch {
    return false; // fail closed
  }
}

/** Validates a condition at mint/edit: it must compile. */
export async function assertConditionCompiles(program: string): Promise<void> {
  try {
    await jqCompile(program);
  } catch (err) {
    if (err instanceof JqError)
      throw new HttpError(400, err.kind === "budget" ? `invalid condition: ${err.message}` : "invalid condition: jq program does not compile");
    throw err;
  }
}

/**
 * Can the condition be evaluated with no request (the turn-time check of a bound key)?
 * At turn time the input simply lacks `request`; a program that names it can only mean to
 * depend on a request, so it is refused at bind. Both `.request` and `["request"]` spellings
 * (and string-built paths containing the word) are caught by looking for the identifier.
 */
export function conditionNeedsRequest(program: string): boolean {
  return /\brequest\b/.test(program);
}

/** Does the condition read the thread (so a door that shows threads must evaluate it per thread)? */
export function conditionNeedsThread(program: string): boolean {
  return /\bthread\b/.test(program);
}

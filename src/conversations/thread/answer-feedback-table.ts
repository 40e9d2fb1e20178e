/**
 * Where answer ratings are kept (src/conversations/thread/answer-feedback.ts): the record's in
 * `answer_feedback`, the page's copy in `web_ratings`, on their own version line (meta
 * `feedback_schema_version`) beside the records', and the read that joins a record's rating in.
 */
import { type AnswerFeedback, AnswerRating, type AnswerRecord } from "../model/record";
import { type ObjectSchema, type ObjectSql, keyValueVersionRow, objectSql, sqlList } from "../../platform/persistence/object-sql";

/** The record's ratings and the page's copies, on their own version line beside the records'. */
export const FEEDBACK_SCHEMA: ObjectSchema = {
  name: "thread-feedback",
  versionRow: keyValueVersionRow("meta", "feedback_schema_version"),
  steps: [
    [
      "CREATE TABLE IF NOT EXISTS answer_feedback (message_id TEXT PRIMARY KEY, rating TEXT NOT NULL, at INTEGER NOT NULL)",
      "CREATE TABLE IF NOT EXISTS web_ratings (message_id TEXT PRIMARY KEY, rating TEXT NOT NULL)",
    ],
  ],
};

function feedbackSql(storage: DurableObjectStorage, name: string): ObjectSql {
  return objectSql(storage.sql, `thread feedback (${name})`);
}

/** The ratings of `ids` kept here, by message id. */
export function feedbackOf(storage: DurableObjectStorage, ids: readonly string[]): Map<string, AnswerFeedback> {
  const out = new Map<string, AnswerFeedback>();
  for (let i = 0; i < ids.length; i += 100) {
    const rows = feedbackSql(storage, "read")<{
      message_id: string;
      rating: string;
      at: number;
    }>`SELECT message_id, rating, at FROM answer_feedback WHERE message_id IN (${sqlList(ids.slice(i, i + 100))})`;
    for (const r of rows) {
      const rating = AnswerRating.safeParse(r.rating);
      if (rating.success) out.set(r.message_id, { rating: rating.data, at: new Date(r.at).toISOString() });
    }
  }
  return out;
}

/** `records` with their ratings joined in (a record without one is left as it is). */
export function withFeedback(storage: DurableObjectStorage, records: AnswerRecord[]): AnswerRecord[] {
  if (!records.length) return records;
  const ratings = feedbackOf(
    storage,
    records.map((r) => r.message_id),
  );
  if (!ratings.size) return records;
  return records.map((r) => {
    const f = ratings.get(r.message_id);
    return f ? { ...r, feedback: f } : r;
  });
}

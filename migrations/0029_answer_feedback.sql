-- Answer feedback (docs/inbox.md, "Answer feedback"). The thread listing carries how many of a
-- thread's answers their customer rated down, written by the listing shards from the thread
-- object's push like the rest of the row: the route listing's `rated=down` filter and the inbox's
-- `rated_down` review queue read it, and a rating costs no D1 statement of its own.
ALTER TABLE threads ADD COLUMN rated_down INTEGER NOT NULL DEFAULT 0;
CREATE INDEX threads_rated_down ON threads(last_activity_at DESC) WHERE rated_down > 0;

-- A channel route may put 👍/👎 reply buttons under its target's answers (a route field, off by
-- default; docs/channels.md, "Answer feedback buttons").
ALTER TABLE routes ADD COLUMN answer_feedback INTEGER NOT NULL DEFAULT 0;

-- The inbox (docs/inbox.md). The thread listing carries each thread's inbox state, written by the
-- listing shards from the thread object's push like the rest of the row, so the cross-route inbox
-- reads one table and the message path still makes no D1 statement.
ALTER TABLE threads ADD COLUMN inbox_status TEXT;
ALTER TABLE threads ADD COLUMN assignee TEXT;
ALTER TABLE threads ADD COLUMN waiting_since INTEGER;
ALTER TABLE threads ADD COLUMN labels TEXT;
CREATE INDEX threads_waiting ON threads(waiting_since) WHERE waiting_since IS NOT NULL;
CREATE INDEX threads_by_assignee ON threads(assignee, last_activity_at DESC) WHERE assignee IS NOT NULL;
CREATE INDEX threads_by_inbox_status ON threads(inbox_status, last_activity_at DESC);

-- One inbox policy per route (PUT /api/conversations/{route_name}/inbox). Read by the thread objects
-- through the isolate cache under the route's access epoch, which these triggers bump.
CREATE TABLE route_inbox (
  route_name TEXT PRIMARY KEY,
  policy     TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  updated_by TEXT
);

CREATE TRIGGER access_changes_route_inbox_insert AFTER INSERT ON route_inbox BEGIN
  INSERT INTO access_changes (subject) VALUES ('route:' || NEW.route_name);
END;
CREATE TRIGGER access_changes_route_inbox_update AFTER UPDATE ON route_inbox BEGIN
  INSERT INTO access_changes (subject) VALUES ('route:' || OLD.route_name), ('route:' || NEW.route_name);
END;
CREATE TRIGGER access_changes_route_inbox_delete AFTER DELETE ON route_inbox BEGIN
  INSERT INTO access_changes (subject) VALUES ('route:' || OLD.route_name);
END;

-- A deleted route takes its policy along; a route posted again under the name starts without one.
CREATE TRIGGER route_inbox_route_delete AFTER DELETE ON routes BEGIN
  DELETE FROM route_inbox WHERE route_name = OLD.route_name;
END;

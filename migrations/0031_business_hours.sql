-- Business hours per route (PUT /api/conversations/{route_name}/hours, docs/inbox.md "Business
-- hours"). Beside the inbox policy and read with it, in one statement, through the isolate cache
-- under the route's access epoch, which these triggers bump.
CREATE TABLE route_hours (
  route_name TEXT PRIMARY KEY,
  hours      TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  updated_by TEXT
);

CREATE TRIGGER access_changes_route_hours_insert AFTER INSERT ON route_hours BEGIN
  INSERT INTO access_changes (subject) VALUES ('route:' || NEW.route_name);
END;
CREATE TRIGGER access_changes_route_hours_update AFTER UPDATE ON route_hours BEGIN
  INSERT INTO access_changes (subject) VALUES ('route:' || OLD.route_name), ('route:' || NEW.route_name);
END;
CREATE TRIGGER access_changes_route_hours_delete AFTER DELETE ON route_hours BEGIN
  INSERT INTO access_changes (subject) VALUES ('route:' || OLD.route_name);
END;

-- A deleted route takes its hours along.
CREATE TRIGGER route_hours_route_delete AFTER DELETE ON routes BEGIN
  DELETE FROM route_hours WHERE route_name = OLD.route_name;
END;

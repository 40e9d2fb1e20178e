-- A route's business hours ride in the doors' route read (src/conversations/store.ts, ROUTE_HOURS),
-- which the channel and web doors cache under the route's identity (`ident:<channel>:<identity>`)
-- as well as under its name. A write of the hours therefore bumps both subjects, so a door that
-- found the route by its identity sees new hours at its next request, as it sees a route change.
DROP TRIGGER access_changes_route_hours_insert;
DROP TRIGGER access_changes_route_hours_update;
DROP TRIGGER access_changes_route_hours_delete;

CREATE TRIGGER access_changes_route_hours_insert AFTER INSERT ON route_hours BEGIN
  INSERT INTO access_changes (subject) SELECT 'route:' || NEW.route_name
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r
      WHERE r.route_name = NEW.route_name AND r.channel IS NOT NULL AND r.our_identity IS NOT NULL;
END;
CREATE TRIGGER access_changes_route_hours_update AFTER UPDATE ON route_hours BEGIN
  INSERT INTO access_changes (subject) SELECT 'route:' || OLD.route_name UNION SELECT 'route:' || NEW.route_name
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r
      WHERE r.route_name IN (OLD.route_name, NEW.route_name) AND r.channel IS NOT NULL AND r.our_identity IS NOT NULL;
END;
CREATE TRIGGER access_changes_route_hours_delete AFTER DELETE ON route_hours BEGIN
  INSERT INTO access_changes (subject) SELECT 'route:' || OLD.route_name
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r
      WHERE r.route_name = OLD.route_name AND r.channel IS NOT NULL AND r.our_identity IS NOT NULL;
END;

-- Changes to what the doors cache per isolate (docs/performance.md, "Keys and routes without D1").
-- The message, channel and event doors keep the caller's key and the route in an isolate cache,
-- each entry validated on every request against a token held by an AccessEpoch object named after
-- the entry's subject. These triggers record, in the same transaction as any write, the subject of
-- every cached entry the write may change; src/platform/epochs/publish.ts bumps their tokens and
-- deletes the rows before the writing request answers, so the next request reads D1 again.
--
-- Subjects: `key:<key_hash>` (a principal: the key, its owner, their roles and custom scopes),
-- `user:<user_id>` (the same key found by user_id), `route:<name>` and `ident:<channel>:<identity>`
-- (a route with its execution key, the target's config and its writer, the target's manual
-- routes, its pending saves and, on the web channel, the identity's site).
CREATE TABLE access_changes (
  seq     INTEGER PRIMARY KEY AUTOINCREMENT,
  subject TEXT NOT NULL
);

CREATE TRIGGER access_changes_api_keys_insert AFTER INSERT ON api_keys BEGIN
  INSERT INTO access_changes (subject) VALUES ('key:' || NEW.key_hash), ('user:' || NEW.user_id);
  INSERT INTO access_changes (subject)
    SELECT 'key:' || key_hash FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (NEW.user_id) OR owner_user_id IN (NEW.user_id))
    UNION SELECT 'user:' || user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (NEW.user_id) OR owner_user_id IN (NEW.user_id));
  INSERT INTO access_changes (subject)
    SELECT 'route:' || r.route_name FROM routes r WHERE execution_key IN (NEW.user_id) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (NEW.user_id) OR owner_user_id IN (NEW.user_id)) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (NEW.user_id) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (NEW.user_id) OR owner_user_id IN (NEW.user_id))))
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r WHERE r.channel IS NOT NULL AND r.our_identity IS NOT NULL AND (execution_key IN (NEW.user_id) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (NEW.user_id) OR owner_user_id IN (NEW.user_id)) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (NEW.user_id) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (NEW.user_id) OR owner_user_id IN (NEW.user_id)))));
END;

CREATE TRIGGER access_changes_api_keys_update AFTER UPDATE ON api_keys BEGIN
  INSERT INTO access_changes (subject) VALUES ('key:' || OLD.key_hash), ('user:' || OLD.user_id);
  INSERT INTO access_changes (subject) VALUES ('key:' || NEW.key_hash), ('user:' || NEW.user_id);
  INSERT INTO access_changes (subject)
    SELECT 'key:' || key_hash FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (OLD.user_id, NEW.user_id) OR owner_user_id IN (OLD.user_id, NEW.user_id))
    UNION SELECT 'user:' || user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (OLD.user_id, NEW.user_id) OR owner_user_id IN (OLD.user_id, NEW.user_id));
  INSERT INTO access_changes (subject)
    SELECT 'route:' || r.route_name FROM routes r WHERE execution_key IN (OLD.user_id, NEW.user_id) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (OLD.user_id, NEW.user_id) OR owner_user_id IN (OLD.user_id, NEW.user_id)) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (OLD.user_id, NEW.user_id) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (OLD.user_id, NEW.user_id) OR owner_user_id IN (OLD.user_id, NEW.user_id))))
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r WHERE r.channel IS NOT NULL AND r.our_identity IS NOT NULL AND (execution_key IN (OLD.user_id, NEW.user_id) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (OLD.user_id, NEW.user_id) OR owner_user_id IN (OLD.user_id, NEW.user_id)) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (OLD.user_id, NEW.user_id) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (OLD.user_id, NEW.user_id) OR owner_user_id IN (OLD.user_id, NEW.user_id)))));
END;

CREATE TRIGGER access_changes_api_keys_delete AFTER DELETE ON api_keys BEGIN
  INSERT INTO access_changes (subject) VALUES ('key:' || OLD.key_hash), ('user:' || OLD.user_id);
  INSERT INTO access_changes (subject)
    SELECT 'key:' || key_hash FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (OLD.user_id) OR owner_user_id IN (OLD.user_id))
    UNION SELECT 'user:' || user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (OLD.user_id) OR owner_user_id IN (OLD.user_id));
  INSERT INTO access_changes (subject)
    SELECT 'route:' || r.route_name FROM routes r WHERE execution_key IN (OLD.user_id) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (OLD.user_id) OR owner_user_id IN (OLD.user_id)) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (OLD.user_id) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (OLD.user_id) OR owner_user_id IN (OLD.user_id))))
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r WHERE r.channel IS NOT NULL AND r.our_identity IS NOT NULL AND (execution_key IN (OLD.user_id) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (OLD.user_id) OR owner_user_id IN (OLD.user_id)) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (OLD.user_id) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (OLD.user_id) OR owner_user_id IN (OLD.user_id)))));
END;

CREATE TRIGGER access_changes_roles_insert AFTER INSERT ON roles BEGIN
  INSERT INTO access_changes (subject)
    SELECT 'key:' || key_hash FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (NEW.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (NEW.name)))
    UNION SELECT 'user:' || user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (NEW.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (NEW.name)));
  INSERT INTO access_changes (subject)
    SELECT 'route:' || r.route_name FROM routes r WHERE execution_key IN (SELECT user_id FROM api_keys WHERE role IN (NEW.name)) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (NEW.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (NEW.name))) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE role IN (NEW.name)) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (NEW.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (NEW.name)))))
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r WHERE r.channel IS NOT NULL AND r.our_identity IS NOT NULL AND (execution_key IN (SELECT user_id FROM api_keys WHERE role IN (NEW.name)) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (NEW.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (NEW.name))) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE role IN (NEW.name)) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (NEW.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (NEW.name))))));
END;

CREATE TRIGGER access_changes_roles_update AFTER UPDATE ON roles BEGIN
  INSERT INTO access_changes (subject)
    SELECT 'key:' || key_hash FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name, NEW.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name, NEW.name)))
    UNION SELECT 'user:' || user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name, NEW.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name, NEW.name)));
  INSERT INTO access_changes (subject)
    SELECT 'route:' || r.route_name FROM routes r WHERE execution_key IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name, NEW.name)) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name, NEW.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name, NEW.name))) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name, NEW.name)) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name, NEW.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name, NEW.name)))))
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r WHERE r.channel IS NOT NULL AND r.our_identity IS NOT NULL AND (execution_key IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name, NEW.name)) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name, NEW.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name, NEW.name))) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name, NEW.name)) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name, NEW.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name, NEW.name))))));
END;

CREATE TRIGGER access_changes_roles_delete AFTER DELETE ON roles BEGIN
  INSERT INTO access_changes (subject)
    SELECT 'key:' || key_hash FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name)))
    UNION SELECT 'user:' || user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name)));
  INSERT INTO access_changes (subject)
    SELECT 'route:' || r.route_name FROM routes r WHERE execution_key IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name)) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name))) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name)) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name)))))
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r WHERE r.channel IS NOT NULL AND r.our_identity IS NOT NULL AND (execution_key IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name)) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name))) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name)) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name)) OR owner_user_id IN (SELECT user_id FROM api_keys WHERE role IN (OLD.name))))));
END;

CREATE TRIGGER access_changes_auth_scopes_insert AFTER INSERT ON auth_scopes BEGIN
  INSERT INTO access_changes (subject)
    SELECT 'key:' || key_hash FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (NEW.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (NEW.scope_id)))
    UNION SELECT 'user:' || user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (NEW.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (NEW.scope_id)));
  INSERT INTO access_changes (subject)
    SELECT 'route:' || r.route_name FROM routes r WHERE execution_key IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (NEW.scope_id)) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (NEW.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (NEW.scope_id))) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (NEW.scope_id)) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (NEW.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (NEW.scope_id)))))
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r WHERE r.channel IS NOT NULL AND r.our_identity IS NOT NULL AND (execution_key IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (NEW.scope_id)) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (NEW.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (NEW.scope_id))) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (NEW.scope_id)) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (NEW.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (NEW.scope_id))))));
END;

CREATE TRIGGER access_changes_auth_scopes_update AFTER UPDATE ON auth_scopes BEGIN
  INSERT INTO access_changes (subject)
    SELECT 'key:' || key_hash FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id, NEW.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id, NEW.scope_id)))
    UNION SELECT 'user:' || user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id, NEW.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id, NEW.scope_id)));
  INSERT INTO access_changes (subject)
    SELECT 'route:' || r.route_name FROM routes r WHERE execution_key IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id, NEW.scope_id)) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id, NEW.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id, NEW.scope_id))) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id, NEW.scope_id)) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id, NEW.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id, NEW.scope_id)))))
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r WHERE r.channel IS NOT NULL AND r.our_identity IS NOT NULL AND (execution_key IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id, NEW.scope_id)) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id, NEW.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id, NEW.scope_id))) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id, NEW.scope_id)) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id, NEW.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id, NEW.scope_id))))));
END;

CREATE TRIGGER access_changes_auth_scopes_delete AFTER DELETE ON auth_scopes BEGIN
  INSERT INTO access_changes (subject)
    SELECT 'key:' || key_hash FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id)))
    UNION SELECT 'user:' || user_id FROM api_keys WHERE user_id IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id)));
  INSERT INTO access_changes (subject)
    SELECT 'route:' || r.route_name FROM routes r WHERE execution_key IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id)) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id))) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id)) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id)))))
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r WHERE r.channel IS NOT NULL AND r.our_identity IS NOT NULL AND (execution_key IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id)) OR execution_key IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id))) OR EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = r.target_kind AND c.target_name = r.target_name AND ((CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id)) OR (CASE WHEN instr(c.stored_by, '!') > 0 THEN substr(c.stored_by, 1, instr(c.stored_by, '!') - 1) ELSE c.stored_by END) IN (SELECT user_id FROM api_keys WHERE user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id)) OR owner_user_id IN (SELECT k.user_id FROM api_keys k, json_each(k.scopes) s WHERE s.value IN (OLD.scope_id))))));
END;

CREATE TRIGGER access_changes_routes_insert AFTER INSERT ON routes BEGIN
  INSERT INTO access_changes (subject) SELECT 'route:' || NEW.route_name UNION SELECT 'ident:' || NEW.channel || ':' || NEW.our_identity WHERE NEW.channel IS NOT NULL AND NEW.our_identity IS NOT NULL;
  INSERT INTO access_changes (subject)
    SELECT 'route:' || r.route_name FROM routes r WHERE (r.target_kind = NEW.target_kind AND r.target_name = NEW.target_name AND EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = NEW.target_kind AND c.target_name = NEW.target_name AND json_extract(c.config, '$.multichannel') = 1))
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r WHERE r.channel IS NOT NULL AND r.our_identity IS NOT NULL AND ((r.target_kind = NEW.target_kind AND r.target_name = NEW.target_name AND EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = NEW.target_kind AND c.target_name = NEW.target_name AND json_extract(c.config, '$.multichannel') = 1)));
END;

CREATE TRIGGER access_changes_routes_update AFTER UPDATE ON routes BEGIN
  INSERT INTO access_changes (subject) SELECT 'route:' || OLD.route_name UNION SELECT 'ident:' || OLD.channel || ':' || OLD.our_identity WHERE OLD.channel IS NOT NULL AND OLD.our_identity IS NOT NULL;
  INSERT INTO access_changes (subject) SELECT 'route:' || NEW.route_name UNION SELECT 'ident:' || NEW.channel || ':' || NEW.our_identity WHERE NEW.channel IS NOT NULL AND NEW.our_identity IS NOT NULL;
  INSERT INTO access_changes (subject)
    SELECT 'route:' || r.route_name FROM routes r WHERE (r.target_kind = OLD.target_kind AND r.target_name = OLD.target_name AND EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = OLD.target_kind AND c.target_name = OLD.target_name AND json_extract(c.config, '$.multichannel') = 1)) OR (r.target_kind = NEW.target_kind AND r.target_name = NEW.target_name AND EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = NEW.target_kind AND c.target_name = NEW.target_name AND json_extract(c.config, '$.multichannel') = 1))
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r WHERE r.channel IS NOT NULL AND r.our_identity IS NOT NULL AND ((r.target_kind = OLD.target_kind AND r.target_name = OLD.target_name AND EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = OLD.target_kind AND c.target_name = OLD.target_name AND json_extract(c.config, '$.multichannel') = 1)) OR (r.target_kind = NEW.target_kind AND r.target_name = NEW.target_name AND EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = NEW.target_kind AND c.target_name = NEW.target_name AND json_extract(c.config, '$.multichannel') = 1)));
END;

CREATE TRIGGER access_changes_routes_delete AFTER DELETE ON routes BEGIN
  INSERT INTO access_changes (subject) SELECT 'route:' || OLD.route_name UNION SELECT 'ident:' || OLD.channel || ':' || OLD.our_identity WHERE OLD.channel IS NOT NULL AND OLD.our_identity IS NOT NULL;
  INSERT INTO access_changes (subject)
    SELECT 'route:' || r.route_name FROM routes r WHERE (r.target_kind = OLD.target_kind AND r.target_name = OLD.target_name AND EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = OLD.target_kind AND c.target_name = OLD.target_name AND json_extract(c.config, '$.multichannel') = 1))
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r WHERE r.channel IS NOT NULL AND r.our_identity IS NOT NULL AND ((r.target_kind = OLD.target_kind AND r.target_name = OLD.target_name AND EXISTS (SELECT 1 FROM conversation_configs c WHERE c.target_kind = OLD.target_kind AND c.target_name = OLD.target_name AND json_extract(c.config, '$.multichannel') = 1)));
END;

CREATE TRIGGER access_changes_conversation_configs_insert AFTER INSERT ON conversation_configs BEGIN
  INSERT INTO access_changes (subject)
    SELECT 'route:' || r.route_name FROM routes r WHERE (r.target_kind = NEW.target_kind AND r.target_name = NEW.target_name)
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r WHERE r.channel IS NOT NULL AND r.our_identity IS NOT NULL AND ((r.target_kind = NEW.target_kind AND r.target_name = NEW.target_name));
END;

CREATE TRIGGER access_changes_conversation_configs_update AFTER UPDATE ON conversation_configs BEGIN
  INSERT INTO access_changes (subject)
    SELECT 'route:' || r.route_name FROM routes r WHERE (r.target_kind = OLD.target_kind AND r.target_name = OLD.target_name) OR (r.target_kind = NEW.target_kind AND r.target_name = NEW.target_name)
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r WHERE r.channel IS NOT NULL AND r.our_identity IS NOT NULL AND ((r.target_kind = OLD.target_kind AND r.target_name = OLD.target_name) OR (r.target_kind = NEW.target_kind AND r.target_name = NEW.target_name));
END;

CREATE TRIGGER access_changes_conversation_configs_delete AFTER DELETE ON conversation_configs BEGIN
  INSERT INTO access_changes (subject)
    SELECT 'route:' || r.route_name FROM routes r WHERE (r.target_kind = OLD.target_kind AND r.target_name = OLD.target_name)
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r WHERE r.channel IS NOT NULL AND r.our_identity IS NOT NULL AND ((r.target_kind = OLD.target_kind AND r.target_name = OLD.target_name));
END;

CREATE TRIGGER access_changes_state_pending_saves_insert AFTER INSERT ON state_pending_saves BEGIN
  INSERT INTO access_changes (subject)
    SELECT 'route:' || r.route_name FROM routes r WHERE (r.target_kind = NEW.target_kind AND r.target_name = NEW.target_name)
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r WHERE r.channel IS NOT NULL AND r.our_identity IS NOT NULL AND ((r.target_kind = NEW.target_kind AND r.target_name = NEW.target_name));
END;

CREATE TRIGGER access_changes_state_pending_saves_delete AFTER DELETE ON state_pending_saves BEGIN
  INSERT INTO access_changes (subject)
    SELECT 'route:' || r.route_name FROM routes r WHERE (r.target_kind = OLD.target_kind AND r.target_name = OLD.target_name)
    UNION SELECT 'ident:' || r.channel || ':' || r.our_identity FROM routes r WHERE r.channel IS NOT NULL AND r.our_identity IS NOT NULL AND ((r.target_kind = OLD.target_kind AND r.target_name = OLD.target_name));
END;

CREATE TRIGGER access_changes_web_sites_insert AFTER INSERT ON web_sites BEGIN
  INSERT INTO access_changes (subject) VALUES ('ident:web:' || NEW.identity);
END;

CREATE TRIGGER access_changes_web_sites_update AFTER UPDATE ON web_sites BEGIN
  INSERT INTO access_changes (subject) VALUES ('ident:web:' || OLD.identity);
  INSERT INTO access_changes (subject) VALUES ('ident:web:' || NEW.identity);
END;

CREATE TRIGGER access_changes_web_sites_delete AFTER DELETE ON web_sites BEGIN
  INSERT INTO access_changes (subject) VALUES ('ident:web:' || OLD.identity);
END;

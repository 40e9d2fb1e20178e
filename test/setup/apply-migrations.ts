import { listDurableObjectIds, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach } from "vitest";
import { beginFile } from "../helpers/file-epoch";
import { clearNetwork } from "../helpers/network";
import { MIGRATIONS_TABLE } from "./migrations-table";
import { isolateSettings } from "../../src/config/isolate-settings";
import { resetTurnSlots } from "../../src/conversations/thread/concurrency";
import { must } from "../../src/platform/must";

// The workers files share one runtime (loading the Worker's modules once, not once per file), so
// each file starts here from what a fresh deployment has: the real schema with no rows, and no
// object holding storage. Objects are many by the end of a run; only those a file reached, or that
// have appeared since the last file, are emptied, which keeps this step short for every file.

beginFile();
afterEach(() => clearNetwork());

type Namespace = DurableObjectNamespace;
const namespaces = Object.entries(env as unknown as Record<string, unknown>).filter((entry): entry is [string, Namespace] => {
  const value = entry[1];
  return !!value && typeof value === "object" && value.constructor?.name === "DurableObjectNamespace";
});

interface Tracker {
  /** Ids reached through a namespace since the last reset. */
  touched: Set<string>;
  /** Ids already known (emptied at least once). */
  known: Set<string>;
}
const TRACKER = Symbol.for("test.objects-tracker");
const holder = globalThis as unknown as { [TRACKER]?: Tracker };
if (!holder[TRACKER]) {
  const tracker: Tracker = { touched: new Set(), known: new Set() };
  holder[TRACKER] = tracker;
  const proto = Object.getPrototypeOf(namespaces[0]?.[1] ?? {}) as Namespace;
  const get = proto.get;
  proto.get = function (this: Namespace, id: DurableObjectId, ...rest: unknown[]) {
    tracker.touched.add(id.toString());
    return (get as (...a: unknown[]) => DurableObjectStub).call(this, id, ...rest);
  } as Namespace["get"];
  const getByName = proto.getByName;
  if (getByName) {
    proto.getByName = function (this: Namespace, name: string, ...rest: unknown[]) {
      tracker.touched.add(this.idFromName(name).toString());
      return (getByName as (...a: unknown[]) => DurableObjectStub).call(this, name, ...rest);
    } as Namespace["getByName"];
  }
}
const tracker = must(holder[TRACKER], "holder[TRACKER]");

// Each object is emptied on its own, so they are emptied side by side.
const emptying: Promise<unknown>[] = [];
for (const [, ns] of namespaces) {
  for (const id of await listDurableObjectIds(ns)) {
    const key = id.toString();
    if (tracker.known.has(key) && !tracker.touched.has(key)) continue;
    tracker.known.add(key);
    emptying.push(
      runInDurableObject(ns.get(id), async (_instance, state) => {
        await state.storage.deleteAlarm();
        await state.storage.deleteAll();
        state.abort("emptied between test files");
      }).catch(() => {}),
    );
  }
}
await Promise.all(emptying);
// The database is dropped and migrated again, after the objects are emptied (no alarm of theirs can
// write into it then), rather than emptied: the migrations seed rows (generations, defaults)
// that a fresh deployment starts from. One batch does both, the way `applyD1Migrations` would
// (its migrations table, then each migration and its record, in order), in one round trip
// instead of one per migration.
const objects = await env.DB.prepare(
  "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view', 'trigger') AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'",
).all<{ type: string; name: string }>();
const order = ["trigger", "view", "table"];
const drops = [...objects.results].sort((a, b) => order.indexOf(a.type) - order.indexOf(b.type));
const record = env.DB.prepare("INSERT INTO d1_migrations (name) VALUES (?)");
await env.DB.batch([
  env.DB.prepare("PRAGMA defer_foreign_keys = on"),
  ...drops.map((o) => env.DB.prepare(`DROP ${o.type.toUpperCase()} IF EXISTS "${o.name}"`)),
  env.DB.prepare(MIGRATIONS_TABLE),
  ...env.TEST_MIGRATIONS.flatMap((m) => [...m.queries.map((q) => env.DB.prepare(q)), record.bind(m.name)]),
]);

tracker.touched.clear();
resetTurnSlots();
isolateSettings.reset();

/**
 * The usage meter: what a run asks of the billed resources, counted inside the isolate, for
 * `npm run bench -- --cost` (docs/cost.md). It counts the Worker's requests, each Durable Object
 * class's requests (RPC calls, fetches, alarms, WebSocket events) and active time, the objects'
 * SQLite rows (through the persistence kit) and key-value calls, D1's rows (through the kit) and
 * R2 operations.
 *
 * Off unless the process was started with `USAGE_METER_TOKEN` (src/platform/settings/
 * metering-settings.ts). Off, the kit's hooks cost one boolean test per statement, the Worker one
 * per request and an object one when it is constructed; no call is wrapped. Turned on, each object
 * class gets methods that count each call from outside an object (a call the object makes to
 * itself is not a request), and `GET /__usage` with the token answers the counts and starts them
 * again.
 *
 * An object is active, as Cloudflare bills duration, from a request that finds it idle until the
 * last thing it does: the end of a request, or a statement or storage call of work it went on with
 * after answering (the turn after a 202, a delivery). Work the object started keeps it from
 * hibernating, so the time between its steps is billed too. Wall time inside workerd advances
 * with I/O only, so a call that does no I/O at all counts as no time.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { DurableObject } from "cloudflare:workers";
import { USAGE_METER_TOKEN } from "../settings/metering-settings";

/** One Durable Object class's figures. */
export interface ObjectUsage {
  /** RPC calls and fetches into an object of the class. */
  requests: number;
  /** Alarm invocations (billed as requests). */
  alarms: number;
  /** Incoming WebSocket messages, closes and errors handled (billed at 20 to 1). */
  webSocketEvents: number;
  /** Wall time objects of the class were active, milliseconds. */
  activeMs: number;
}

/** One statement's runs (by the class that ran it, the kit's store name and its text). */
export interface StatementUsage {
  runs: number;
  rowsRead: number;
  rowsWritten: number;
}

/** Everything counted since the meter was last read. */
export interface Usage {
  /** Requests the Worker's fetch handler received. */
  workerRequests: number;
  /** By Durable Object class name. */
  objects: Record<string, ObjectUsage>;
  /** Rows SQLite read and wrote for the objects' statements (`SqlStorageCursor.rowsRead`/`rowsWritten`). */
  sqlRowsRead: number;
  sqlRowsWritten: number;
  /** The same rows by `<class> <store>: <statement>`, so a report can say which statements write them. */
  statements: Record<string, StatementUsage>;
  /** Keys the objects' key-value calls read (`get`, `list`) and wrote (`put`, `delete`), and alarms set. */
  kvRowsRead: number;
  kvRowsWritten: number;
  alarmsSet: number;
  /** D1 statements and the rows they read and wrote (`meta.rows_read`/`rows_written`). */
  d1Statements: number;
  d1RowsRead: number;
  d1RowsWritten: number;
  /** R2 operations: class A (put, list, multipart starts) and class B (get, head). */
  r2ClassA: number;
  r2ClassB: number;
}

const empty = (): Usage => ({
  workerRequests: 0,
  objects: {},
  sqlRowsRead: 0,
  sqlRowsWritten: 0,
  statements: {},
  kvRowsRead: 0,
  kvRowsWritten: 0,
  alarmsSet: 0,
  d1Statements: 0,
  d1RowsRead: 0,
  d1RowsWritten: 0,
  r2ClassA: 0,
  r2ClassB: 0,
});

/** One live object's activity. */
interface ObjectRecord {
  cls: string;
  /** Calls from outside now running. */
  inflight: number;
  /** An active span is open, from `start` to `last`. */
  open: boolean;
  start: number;
  last: number;
}

let on = false;
let usage = empty();
const live = new Set<ObjectRecord>();
const records = new WeakMap<object, ObjectRecord>();
/** The object whose request (or whose work begun by one) is running: statements are its activity. */
const current = new AsyncLocalStorage<ObjectRecord>();

/** Whether the meter counts in this isolate. */
export function usageMeterOn(): boolean {
  return on;
}

/** Turns the meter on or off for this isolate; either way the counts start again from zero. */
export function switchUsageMeter(value: boolean): void {
  on = value;
  usage = empty();
  live.clear();
}

/** The meter's token when `env` turns it on (and turns it on), else undefined. */
export function usageMeterFromEnv(env: Record<string, unknown>): string | undefined {
  const token = USAGE_METER_TOKEN.read(env, []);
  if (token && !on) switchUsageMeter(true);
  return token;
}

function objectUsage(cls: string): ObjectUsage {
  let u = usage.objects[cls];
  if (!u) {
    u = { requests: 0, alarms: 0, webSocketEvents: 0, activeMs: 0 };
    usage.objects[cls] = u;
  }
  return u;
}

/** Something the current object did now: its active span reaches at least this far. */
function touch(): void {
  const rec = current.getStore();
  if (rec?.open) rec.last = Math.max(rec.last, Date.now());
}

function closeSpan(rec: ObjectRecord): void {
  if (!rec.open) return;
  objectUsage(rec.cls).activeMs += rec.last - rec.start;
  rec.open = false;
}

function begin(rec: ObjectRecord): void {
  const now = Date.now();
  // Idle with nothing running: the span before (its last step included) is over.
  if (rec.inflight === 0) closeSpan(rec);
  if (!rec.open) {
    rec.open = true;
    rec.start = now;
  }
  rec.inflight++;
  rec.last = Math.max(rec.last, now);
  live.add(rec);
}

function end(rec: ObjectRecord): void {
  rec.inflight--;
  rec.last = Math.max(rec.last, Date.now());
}

/** Counts one object statement's rows (the persistence kit calls it after reading the cursor to its end). */
export function countObjectRows(store: string, statement: string, rowsRead: number, rowsWritten: number): void {
  usage.sqlRowsRead += rowsRead;
  usage.sqlRowsWritten += rowsWritten;
  // Statements are the code's own text (values are bound), so the keys are few.
  const key = `${current.getStore()?.cls ?? "(no request)"} ${store}: ${statement.replace(/\s+/g, " ").trim().slice(0, 100)}`;
  const s = usage.statements[key] ?? { runs: 0, rowsRead: 0, rowsWritten: 0 };
  usage.statements[key] = s;
  s.runs++;
  s.rowsRead += rowsRead;
  s.rowsWritten += rowsWritten;
  touch();
}

/** Counts one D1 statement's rows from its result's meta (the persistence kit calls it). */
export function countD1(meta: { rows_read?: number; rows_written?: number } | undefined): void {
  usage.d1Statements++;
  usage.d1RowsRead += meta?.rows_read ?? 0;
  usage.d1RowsWritten += meta?.rows_written ?? 0;
  touch();
}

/** Counts a request into the Worker's fetch handler. */
export function countWorkerRequest(): void {
  usage.workerRequests++;
}

/** The counts since the last read, with every object's span so far; the counts start again. */
export function takeUsage(): Usage {
  for (const rec of live) {
    if (!rec.open) continue;
    objectUsage(rec.cls).activeMs += rec.last - rec.start;
    rec.start = rec.last;
    if (rec.inflight === 0) rec.open = false;
  }
  live.clear();
  const taken = usage;
  usage = empty();
  return taken;
}

/** Compares in time that depends on the lengths only, so the token cannot be guessed a character at a time. */
function sameText(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) || 0) ^ (b.charCodeAt(i) || 0);
  return diff === 0;
}

/** The answer to `GET /__usage` with the meter's token, or null when `request` is not that read-out. */
export function usageReadout(request: Request, token: string): Response | null {
  const url = new URL(request.url);
  if (url.pathname !== "/__usage") return null;
  if (request.method !== "GET" || !sameText(request.headers.get("authorization") ?? "", `Bearer ${token}`)) {
    return Response.json({ error: { code: "unauthorized", message: "the usage meter needs its token" } }, { status: 401 });
  }
  return Response.json(takeUsage(), { headers: { "cache-control": "no-store" } });
}

type Handler = (...args: unknown[]) => unknown;

/** The method names an object answers (its class chain down to DurableObject), getters left out. */
function methodNames(proto: object): string[] {
  const names = new Set<string>();
  for (let p: object | null = proto; p && p !== DurableObject.prototype && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const [name, d] of Object.entries(Object.getOwnPropertyDescriptors(p))) {
      if (name !== "constructor" && typeof d.value === "function") names.add(name);
    }
  }
  return [...names];
}

function countCall(rec: ObjectRecord, name: string): void {
  const u = objectUsage(rec.cls);
  if (name === "alarm") u.alarms++;
  else if (name.startsWith("webSocket")) u.webSocketEvents++;
  else u.requests++;
}

/** A method that counts a call from outside the object and keeps its span open while the call runs. */
function metered(name: string, original: Handler): Handler {
  return function (this: object, ...args: unknown[]): unknown {
    const rec = records.get(this);
    if (!on || !rec || current.getStore() === rec) return original.apply(this, args);
    countCall(rec, name);
    begin(rec);
    let out: unknown;
    try {
      out = current.run(rec, () => original.apply(this, args));
    } catch (err) {
      end(rec);
      throw err;
    }
    if (out instanceof Promise) {
      return out.then(
        (v) => {
          end(rec);
          return v;
        },
        (err) => {
          end(rec);
          throw err;
        },
      );
    }
    end(rec);
    return out;
  };
}

const KV_READS = new Set(["get", "list"]);
const KV_WRITES = new Set(["put", "delete"]);

/** Counts the object's key-value calls as the rows they read or write, and each alarm it sets. */
function meterStorage(storage: DurableObjectStorage): void {
  const patchable = storage as unknown as Record<string, Handler>;
  for (const name of [...KV_READS, ...KV_WRITES, "setAlarm"]) {
    const original = patchable[name];
    if (typeof original !== "function") continue;
    patchable[name] = (...args: unknown[]) => {
      if (on) {
        touch();
        const first = args[0];
        const keys = Array.isArray(first) ? first.length : first && typeof first === "object" && name === "put" ? Object.keys(first).length : 1;
        if (name === "setAlarm") usage.alarmsSet++;
        else if (KV_WRITES.has(name)) usage.kvRowsWritten += keys;
        else if (name === "get") usage.kvRowsRead += keys;
      }
      const out = original.apply(storage, args);
      if (on && name === "list" && out instanceof Promise) {
        return out.then((m: Map<string, unknown>) => {
          usage.kvRowsRead += m.size;
          return m;
        });
      }
      return out;
    };
  }
}

const R2_CLASS_A = new Set(["put", "list", "createMultipartUpload"]);
const R2_CLASS_B = new Set(["get", "head"]);
const meteredBuckets = new WeakSet<object>();

function isR2Bucket(v: unknown): v is Record<string, Handler> {
  return (
    !!v &&
    typeof v === "object" &&
    ["head", "get", "put", "list", "createMultipartUpload"].every((m) => typeof (v as Record<string, unknown>)[m] === "function")
  );
}

/** Counts the R2 operations of every R2 binding in `env` (replaced in place by a counting view). */
export function meterBindings(env: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(env)) {
    if (!isR2Bucket(value) || meteredBuckets.has(value)) continue;
    const view = new Proxy(value, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver);
        if (typeof prop !== "string" || typeof v !== "function") return v;
        return (...args: unknown[]) => {
          if (on && R2_CLASS_A.has(prop)) usage.r2ClassA++;
          else if (on && R2_CLASS_B.has(prop)) usage.r2ClassB++;
          if (on) touch();
          return (v as Handler).apply(target, args);
        };
      },
    });
    meteredBuckets.add(view);
    try {
      env[name] = view;
    } catch {
      /* a frozen env keeps its binding uncounted */
    }
  }
}

type ObjectClass = abstract new (ctx: DurableObjectState, env: never) => object;

/**
 * The Durable Object class `cls` as the Worker exports it: the same class, whose instances count
 * their requests and activity while the meter is on (see the module's comment). Off, an instance
 * is exactly `cls`'s.
 */
export function meteredObject<C extends ObjectClass>(cls: C, name: string): C {
  const Base = cls as unknown as new (ctx: DurableObjectState, env: Record<string, unknown>) => object;
  let counting = false;
  const Metered = class extends Base {
    constructor(ctx: DurableObjectState, env: Record<string, unknown>) {
      // On through the env (wrangler dev with the token), or already on in this isolate (a test).
      const metering = usageMeterFromEnv(env) !== undefined || on;
      if (metering) {
        meterBindings(env);
        meterStorage(ctx.storage);
      }
      super(ctx, env);
      if (!metering) return;
      // The runtime finds an object's methods on its class's prototype: the counting methods go
      // there, once, the first time the meter is on in this isolate, so until then nothing wraps.
      if (!counting) {
        for (const m of methodNames(Base.prototype))
          (Metered.prototype as Record<string, Handler>)[m] = metered(m, (Base.prototype as Record<string, Handler>)[m]);
        counting = true;
      }
      records.set(this, { cls: name, inflight: 0, open: false, start: 0, last: 0 });
    }
  };
  Object.defineProperty(Metered, "name", { value: name });
  return Metered as unknown as C;
}

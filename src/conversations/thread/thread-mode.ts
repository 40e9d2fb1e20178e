import { type ModeStamp, StoredOverride, liveOverride } from "../model/mode";
import type { Mode } from "../../shared/kinds";
import type { ModeInForce } from "../model/thread-rpc";
import { parseStored } from "../../platform/persistence/stored-json";
import type { ThreadDeps } from "./deps";
import { deleteMeta, getMeta, setMeta } from "./store";

/**
 * The thread's control-mode override (spec §3.2), kept in the object's meta `mode_override`. An
 * override belongs to the route incarnation it was set under (its `created_at`): deleting the route
 * voids it at once, even if a route of the same name is created later. It lapses after a retention
 * window, which each accepted inbound and operator send pushes ahead.
 */
export class ThreadMode {
  /**
   * True once this instance knows no override is stored: an inbound then reads nothing. Only `set`
   * stores one, so the knowledge holds until it runs.
   */
  private noneStored = false;

  constructor(private readonly deps: Pick<ThreadDeps, "storage" | "settings" | "clock">) {}

  /** The stored override's text, or null (remembering that there is none). */
  private stored(): string | null {
    if (this.noneStored) return null;
    const raw = getMeta(this.deps.storage, "mode_override");
    if (raw === null) this.noneStored = true;
    return raw;
  }

  /** The live override for `stamp`, or null. A void or expired override is reclaimed here. */
  overrideFor(stamp: ModeStamp): Mode | null {
    const { storage } = this.deps;
    const raw = this.stored();
    if (!raw) return null;
    const live = liveOverride(parseStored(StoredOverride, raw, "thread meta mode_override"), stamp, this.deps.clock.now());
    if (!live) {
      deleteMeta(storage, "mode_override");
      this.noneStored = true;
    }
    return live;
  }

  /** The mode in force: the live override, else the default (the route's initial mode, or a person thread's default). */
  inForce(stamp: ModeStamp, initialMode: Mode): ModeInForce {
    const o = this.overrideFor(stamp);
    return o ? { mode: o, source: "thread" } : { mode: initialMode, source: "route" };
  }

  /** Sets the override under `stamp` (a route incarnation, or null: person-wide) for one retention window. */
  set(stamp: ModeStamp, mode: Mode): void {
    const value: StoredOverride = { mode, route_created_at: stamp.created_at, expires_at: this.deps.clock.now() + this.retentionMs() };
    setMeta(this.deps.storage, "mode_override", JSON.stringify(value));
    this.noneStored = false;
  }

  /** Pushes a live override's expiry a full retention window ahead (accepted inbound, operator send). */
  refresh(): void {
    const { storage } = this.deps;
    const raw = this.stored();
    if (!raw) return;
    const o = parseStored(StoredOverride, raw, "thread meta mode_override");
    if (o.expires_at <= this.deps.clock.now()) return;
    setMeta(storage, "mode_override", JSON.stringify({ ...o, expires_at: this.deps.clock.now() + this.retentionMs() }));
  }

  /** Drops the override (thread forget). */
  clear(): void {
    deleteMeta(this.deps.storage, "mode_override");
    this.noneStored = true;
  }

  private retentionMs(): number {
    return this.deps.settings().conversations.answerRetentionTtlSeconds * 1000;
  }
}

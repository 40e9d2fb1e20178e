import { getMeta, setMeta } from "./store";

/**
 * The thread id an object serves. An object learns it from its first accept or mode write and
 * keeps it in meta; it is cached once a read finds it.
 */
export class ThreadIdentity {
  private cached: string | null = null;

  constructor(private readonly storage: DurableObjectStorage) {}

  /** The stored thread id, or null before the object has been told. */
  get(): string | null {
    this.cached ??= getMeta(this.storage, "thread_id");
    return this.cached;
  }

  /** Stores `threadId` unless one is stored already. */
  adopt(threadId: string): void {
    if (this.get()) return;
    setMeta(this.storage, "thread_id", threadId);
    this.cached = threadId;
  }
}

/**
 * Per-isolate bound on turns in flight (`max_concurrent_turns`, decisions §3: the spec's
 * "worker" is an isolate here). Waiters queue in FIFO order; nobody is refused.
 */
class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  constructor(public limit: number) {}

  async acquire(): Promise<() => void> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active -= 1;
      this.waiting.shift()?.();
    };
  }

  get inFlight(): number {
    return this.active;
  }
}

let turns: Semaphore | null = null;

/** The isolate's turn semaphore, sized by the current setting. */
export function turnSlots(limit: number): Semaphore {
  if (!turns) turns = new Semaphore(limit);
  turns.limit = limit;
  return turns;
}

/**
 * Forgets every slot. For a runtime whose objects were all reset at once: a turn whose object was
 * aborted mid-run never gives its slot back. The workers test files share one runtime and reset
 * every object they reached between files.
 */
export function resetTurnSlots(): void {
  turns = null;
}

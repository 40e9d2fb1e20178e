/**
 * The guard between a live stream and its client (docs/security.md "Every live channel dies with
 * its credential"): every chunk waits for a check of the credential that started after the chunk
 * was queued, and once a check fails nothing more is written and the stream is ended. Chunks
 * queued while a check runs share the next check, so a stream that pushes many small frames (an
 * agent's deltas) pays one check per batch, not one per frame.
 */

/** A sender whose chunks go out only while `allowed()` holds. */
export interface GuardedSender {
  /** Queues `chunk`; resolves once it was written or dropped. Never throws. */
  send(chunk: string): Promise<void>;
  /** True once a check failed: nothing more is written. */
  readonly revoked: boolean;
}

/**
 * `write` puts a chunk on the wire; `allowed` checks the credential (false: revoked, or the check
 * could not be made); `onRevoked` ends the stream, once.
 */
export function guardedSender(write: (chunk: string) => Promise<void>, allowed: () => Promise<boolean>, onRevoked: () => void): GuardedSender {
  let queue: string[] = [];
  let pumping: Promise<void> | null = null;
  let revoked = false;
  const pump = async () => {
    try {
      while (queue.length && !revoked) {
        const batch = queue;
        queue = [];
        let ok = false;
        try {
          ok = await allowed();
        } catch {
          ok = false;
        }
        if (!ok) {
          revoked = true;
          queue = [];
          onRevoked();
          return;
        }
        for (const chunk of batch) await write(chunk);
      }
    } finally {
      pumping = null;
    }
  };
  return {
    send(chunk) {
      if (revoked) return Promise.resolve();
      queue.push(chunk);
      pumping ??= pump();
      return pumping;
    },
    get revoked() {
      return revoked;
    },
  };
}

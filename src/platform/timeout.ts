/** Runs `work` with an abort signal that fires after `ms`; reports a timeout instead of hanging. */
export type Timed<T> = { ok: true; value: T } | { ok: false; timedOut: true };

export async function withTimeout<T>(ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<Timed<T>> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<Timed<T>>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve({ ok: false, timedOut: true });
    }, ms);
  });
  const run = work(controller.signal).then((value): Timed<T> => ({ ok: true, value }));
  // The abort makes `work` reject after the deadline; that late rejection is expected, not an error.
  run.catch(() => undefined);
  try {
    return await Promise.race([run, expired]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

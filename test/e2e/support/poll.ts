/**
 * Bounded polling for outcomes. End-to-end tests never assert on timings: they poll until the
 * outcome shows up or a generous bound runs out, and then fail with the last value seen.
 */
export async function pollUntil<T>(
  what: string,
  probe: () => Promise<T> | T,
  done: (v: T) => boolean,
  opts: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  let last: T;
  for (;;) {
    last = await probe();
    if (done(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(last)?.slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 200));
  }
}

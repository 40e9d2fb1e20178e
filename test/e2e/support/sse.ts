/**
 * Reads a server-sent events stream over real HTTP as it arrives: frames (`id:`, `data:`,
 * comments) collected in order, with a wait for the frame a test expects.
 */
export interface SseFrame {
  id?: string;
  data?: any;
  comment?: string;
}

export interface SseReader {
  frames: SseFrame[];
  /** Resolves with the frames once `check` holds; fails after `timeoutMs` with what arrived. */
  until: (what: string, check: (frames: SseFrame[]) => boolean, timeoutMs?: number) => Promise<SseFrame[]>;
  close: () => void;
}

function parseBlock(block: string): SseFrame {
  const f: SseFrame = {};
  for (const line of block.split("\n")) {
    if (line.startsWith("id: ")) f.id = line.slice(4);
    else if (line.startsWith("data: ")) f.data = JSON.parse(line.slice(6));
    else if (line.startsWith(": ")) f.comment = line.slice(2);
  }
  return f;
}

export async function openSse(url: string, headers: Record<string, string>): Promise<SseReader> {
  const controller = new AbortController();
  const res = await fetch(url, { headers, signal: controller.signal });
  if (res.status !== 200 || !res.body) throw new Error(`the stream answered ${res.status}: ${await res.text()}`);
  const frames: SseFrame[] = [];
  let buffer = "";
  const decoder = new TextDecoder();
  const waiters = new Set<() => void>();
  void (async () => {
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          if (block.trim()) frames.push(parseBlock(block));
        }
        for (const w of [...waiters]) w();
      }
    } catch {
      /* closed */
    }
  })();
  return {
    frames,
    until: (what, check, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        if (check(frames)) return resolve(frames);
        const timer = setTimeout(() => {
          waiters.delete(onData);
          reject(new Error(`timed out waiting for ${what} on the stream; frames: ${JSON.stringify(frames).slice(0, 2000)}`));
        }, timeoutMs);
        const onData = () => {
          if (!check(frames)) return;
          clearTimeout(timer);
          waiters.delete(onData);
          resolve(frames);
        };
        waiters.add(onData);
      }),
    close: () => controller.abort(),
  };
}

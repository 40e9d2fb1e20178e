/**
 * The sustained phase's view of workerd's JavaScript heap, through the DevTools protocol that
 * `npm start -- --inspect` serves (wrangler dev's inspector proxy in front of workerd's inspector):
 * a forced collection and the heap's use after it, heap snapshots summarised by constructor, and
 * the retained size of each Durable Object instance (its dominator subtree). It also reads the
 * RSS of the server's workerd processes from /proc (Linux), the figure the load tests watched.
 *
 * Locally, the Worker and every Durable Object class of the script share one V8 isolate (one
 * workerd process), so the heap after GC is the sum of all of them; the snapshot's dominator tree
 * splits it by object instance.
 */
import { readFileSync, readdirSync } from "node:fs";
import { WebSocket } from "undici";

/** A DevTools session on one inspector target. */
export interface Inspector {
  send: <T = unknown>(method: string, params?: Record<string, unknown>, timeoutMs?: number) => Promise<T>;
  /**
   * The JavaScript heap's used and total bytes after forced full collections: two
   * `HeapProfiler.collectGarbage`, or, when the runtime does not answer that, a heap snapshot
   * (V8 collects garbage before it writes one). V8 runs the collection as a task on the isolate's
   * queue, which workerd drains when the isolate has work: `poke` gives it some (a request) until
   * the command answers.
   */
  heapAfterGc: (poke?: () => Promise<unknown>) => Promise<{ used: number; total: number }>;
  /** The heap's used bytes as they are, before any forced collection (what V8 has not yet freed). */
  heapNow: () => Promise<number>;
  /** A heap snapshot (after the forced collection V8 makes before every snapshot), as parsed JSON. */
  snapshot: () => Promise<HeapSnapshot>;
  close: () => void;
}

/** Opens a DevTools session on the first target the inspector at `port` lists (the bridge's Worker). */
export async function attachInspector(port: number, timeoutMs = 60_000): Promise<Inspector> {
  const deadline = Date.now() + timeoutMs;
  let url: string | undefined;
  while (!url && Date.now() < deadline) {
    try {
      const list = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as Array<{ webSocketDebuggerUrl?: string }>;
      url = list.find((t) => t.webSocketDebuggerUrl)?.webSocketDebuggerUrl;
    } catch {
      /* not up yet */
    }
    if (!url) await new Promise((r) => setTimeout(r, 250));
  }
  if (!url) throw new Error(`no inspector target on port ${port}`);
  // The inspector proxy admits a local DevTools origin only.
  const ws = new WebSocket(url, { headers: { origin: `http://127.0.0.1:${port}` } });
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener("open", () => resolve(), { once: true });
    ws.addEventListener("error", () => reject(new Error(`inspector socket ${url} failed`)), { once: true });
  });
  let nextId = 1;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let chunks: string[] | null = null;
  ws.addEventListener("message", (ev) => {
    const msg = JSON.parse(String(ev.data));
    if (msg.method === "HeapProfiler.addHeapSnapshotChunk") {
      chunks?.push(msg.params.chunk);
      return;
    }
    if (typeof msg.id !== "number") return;
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    if (msg.error) p.reject(new Error(`${msg.error.message ?? "inspector error"} (${JSON.stringify(msg.error)})`));
    else p.resolve(msg.result);
  });
  ws.addEventListener("close", () => {
    for (const p of pending.values()) p.reject(new Error("inspector socket closed"));
    pending.clear();
  });
  const send = <T = unknown>(method: string, params: Record<string, unknown> = {}, timeoutMs = 300_000): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = nextId++;
      // The protocol answers what the method names: the caller's T is that shape.
      pending.set(id, { resolve: (v) => resolve(v as T), reject });
      ws.send(JSON.stringify({ id, method, params }));
      const timer = setTimeout(() => {
        if (pending.delete(id)) reject(new Error(`inspector ${method} timed out`));
      }, timeoutMs);
      timer.unref();
    });
  const usage = () => send<{ usedSize: number; totalSize: number }>("Runtime.getHeapUsage", {}, 60_000);
  const snapshot = async (): Promise<HeapSnapshot> => {
    chunks = [];
    try {
      await send("HeapProfiler.takeHeapSnapshot", { reportProgress: false, captureNumericValue: false });
      return JSON.parse(chunks.join("")) as HeapSnapshot;
    } finally {
      chunks = null;
    }
  };
  // workerd may not run the task V8's `collectGarbage` posts; a snapshot always collects first.
  let gcCommand: boolean | null = null;
  return {
    send,
    heapNow: async () => (await usage()).usedSize,
    heapAfterGc: async (poke) => {
      const collect = async () => {
        let done = false;
        const answered = send("HeapProfiler.collectGarbage", {}, 20_000).finally(() => (done = true));
        while (poke && !done) {
          await Promise.race([answered.catch(() => {}), new Promise((r) => setTimeout(r, 100))]);
          if (!done) await poke().catch(() => {});
        }
        await answered;
      };
      if (gcCommand !== false) {
        try {
          await collect();
          await collect();
          gcCommand = true;
        } catch (err) {
          if (gcCommand) throw err;
          gcCommand = false;
        }
      }
      if (!gcCommand) await snapshot();
      const u = await usage();
      return { used: u.usedSize, total: u.totalSize };
    },
    snapshot,
    close: () => ws.close(),
  };
}

/** The parts of V8's heap snapshot format this file reads. */
export interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]]; edge_fields: string[]; edge_types: [string[], ...unknown[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** Objects of one constructor (or one kind of V8 internal) in a snapshot. */
export interface Bucket {
  count: number;
  bytes: number;
}

/** What a snapshot holds: per constructor, and per Durable Object instance its retained bytes. */
export interface HeapSummary {
  totalBytes: number;
  byConstructor: Map<string, Bucket>;
  /** Per Durable Object class: instances alive and the bytes each retains (largest first). */
  objects: Map<string, number[]>;
}

/**
 * Summarises a snapshot: self sizes by constructor (objects and closures by name, V8 internals by
 * type), and the retained size of every instance of `classes` (the Durable Object classes), from
 * the dominator tree (Cooper, Harvey and Kennedy's iterative algorithm; weak edges ignored, as
 * DevTools ignores them).
 */
export function summarise(snap: HeapSnapshot, classes: string[]): HeapSummary {
  const nf = snap.snapshot.meta.node_fields;
  const ef = snap.snapshot.meta.edge_fields;
  const nodeTypes = snap.snapshot.meta.node_types[0];
  const edgeTypes = snap.snapshot.meta.edge_types[0];
  const N = nf.length;
  const E = ef.length;
  const fType = nf.indexOf("type");
  const fName = nf.indexOf("name");
  const fSelf = nf.indexOf("self_size");
  const fEdges = nf.indexOf("edge_count");
  const eType = ef.indexOf("type");
  const eTo = ef.indexOf("to_node");
  const weak = edgeTypes.indexOf("weak");
  const shortcut = edgeTypes.indexOf("shortcut");
  const { nodes, edges, strings } = snap;
  const n = nodes.length / N;
  const firstEdge = new Int32Array(n + 1);
  for (let i = 0, e = 0; i < n; i++) {
    firstEdge[i] = e;
    e += nodes[i * N + fEdges] * E;
    firstEdge[i + 1] = e;
  }
  const byConstructor = new Map<string, Bucket>();
  let totalBytes = 0;
  for (let i = 0; i < n; i++) {
    const type = nodeTypes[nodes[i * N + fType]];
    const self = nodes[i * N + fSelf];
    totalBytes += self;
    const key = type === "object" || type === "closure" ? `${type === "closure" ? "closure " : ""}${strings[nodes[i * N + fName]]}` : `(${type})`;
    const b = byConstructor.get(key) ?? { count: 0, bytes: 0 };
    b.count++;
    b.bytes += self;
    byConstructor.set(key, b);
  }
  // Reverse postorder from the root (node 0) over strong edges.
  const order = new Int32Array(n).fill(-1); // postorder number
  const post: number[] = [];
  const stack: number[] = [0];
  const cursor = new Int32Array(n);
  const seen = new Uint8Array(n);
  seen[0] = 1;
  for (let i = 0; i < n; i++) cursor[i] = firstEdge[i];
  const strong = (e: number) => {
    const t = edges[e + eType];
    return t !== weak && t !== shortcut;
  };
  while (stack.length) {
    const v = stack[stack.length - 1];
    if (cursor[v] < firstEdge[v + 1]) {
      const e = cursor[v];
      cursor[v] += E;
      if (!strong(e)) continue;
      const w = edges[e + eTo] / N;
      if (!seen[w]) {
        seen[w] = 1;
        stack.push(w);
      }
    } else {
      stack.pop();
      order[v] = post.length;
      post.push(v);
    }
  }
  // Predecessors over strong edges, reachable nodes only.
  const predCount = new Int32Array(n + 1);
  for (let v = 0; v < n; v++) {
    if (!seen[v]) continue;
    for (let e = firstEdge[v]; e < firstEdge[v + 1]; e += E) if (strong(e)) predCount[edges[e + eTo] / N + 1]++;
  }
  for (let i = 0; i < n; i++) predCount[i + 1] += predCount[i];
  const preds = new Int32Array(predCount[n]);
  const fill = predCount.slice(0, n);
  for (let v = 0; v < n; v++) {
    if (!seen[v]) continue;
    for (let e = firstEdge[v]; e < firstEdge[v + 1]; e += E) if (strong(e)) preds[fill[edges[e + eTo] / N]++] = v;
  }
  const idom = new Int32Array(n).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (order[a] < order[b]) a = idom[a];
      while (order[b] < order[a]) b = idom[b];
    }
    return a;
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (let k = post.length - 2; k >= 0; k--) {
      const v = post[k];
      let d = -1;
      for (let p = predCount[v]; p < predCount[v + 1]; p++) {
        const u = preds[p];
        if (idom[u] === -1) continue;
        d = d === -1 ? u : intersect(u, d);
      }
      if (d !== -1 && idom[v] !== d) {
        idom[v] = d;
        changed = true;
      }
    }
  }
  // Retained sizes: children before parents, i.e. in postorder.
  const retained = new Float64Array(n);
  for (const v of post) retained[v] += nodes[v * N + fSelf];
  for (const v of post) if (v !== 0 && idom[v] >= 0 && idom[v] !== v) retained[idom[v]] += retained[v];
  const objects = new Map<string, number[]>();
  const matchers = classes.map((c) => ({ c, re: new RegExp(`^${c}\\d*$`) }));
  for (let i = 0; i < n; i++) {
    if (!seen[i] || nodeTypes[nodes[i * N + fType]] !== "object") continue;
    const name = strings[nodes[i * N + fName]];
    const m = matchers.find((x) => x.re.test(name));
    if (!m) continue;
    const list = objects.get(m.c) ?? [];
    list.push(retained[i]);
    objects.set(m.c, list);
  }
  for (const list of objects.values()) list.sort((a, b) => b - a);
  return { totalBytes, byConstructor, objects };
}

/** The constructors that grew most between two summaries, by bytes then count. */
export function diff(a: HeapSummary, b: HeapSummary, top = 15): Array<{ name: string; count: [number, number]; bytes: [number, number] }> {
  const names = new Set([...a.byConstructor.keys(), ...b.byConstructor.keys()]);
  const rows = [...names].map((name) => {
    const x = a.byConstructor.get(name) ?? { count: 0, bytes: 0 };
    const y = b.byConstructor.get(name) ?? { count: 0, bytes: 0 };
    return { name, count: [x.count, y.count] as [number, number], bytes: [x.bytes, y.bytes] as [number, number] };
  });
  rows.sort((p, q) => Math.abs(q.bytes[1] - q.bytes[0]) - Math.abs(p.bytes[1] - p.bytes[0]) || q.count[1] - q.count[0] - (p.count[1] - p.count[0]));
  return rows.slice(0, top);
}

/** The resident memory (kB → bytes) of the workerd processes in process group `pgid`, from /proc; null elsewhere. */
export function workerdRss(pgid: number | undefined): number | null {
  if (pgid === undefined || process.platform !== "linux") return null;
  let total = 0;
  let found = false;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      if (!stat.slice(stat.indexOf("(") + 1, close).startsWith("workerd")) continue;
      if (Number(stat.slice(close + 2).split(" ")[2]) !== pgid) continue;
      const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${entry}/status`, "utf8"));
      if (rss) {
        total += Number(rss[1]) * 1024;
        found = true;
      }
    } catch {
      /* gone meanwhile */
    }
  }
  return found ? total : null;
}

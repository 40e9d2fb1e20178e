/**
 * The folder tree's rules (docs/tool-metadata.md "Folders"), pure over the parent map
 * (folder id → parent id or null): a move may not put a folder inside itself or a descendant
 * (a cycle), and the tree is at most MAX_FOLDER_DEPTH deep.
 */
export const MAX_FOLDER_DEPTH = 16;
export const MAX_FOLDERS = 1000;

export type ParentMap = ReadonlyMap<string, string | null>;

/** The folders from `id` up to the top, `id` first (stops at a cycle or a dangling parent). */
export function ancestry(parents: ParentMap, id: string | null): string[] {
  const out: string[] = [];
  for (let at = id; at !== null && parents.has(at) && !out.includes(at); at = parents.get(at) ?? null) out.push(at);
  return out;
}

/** Would moving `folder` under `newParent` make it its own ancestor? */
export function wouldCycle(parents: ParentMap, folder: string, newParent: string | null): boolean {
  return newParent !== null && ancestry(parents, newParent).includes(folder);
}

/** How deep `id` sits (a top-level folder is 1). */
export function depthOf(parents: ParentMap, id: string | null): number {
  return ancestry(parents, id).length;
}

/** How many levels the subtree rooted at `folder` spans (a leaf is 1). */
export function subtreeHeight(parents: ParentMap, folder: string): number {
  const children = new Map<string, string[]>();
  for (const [id, parent] of parents) if (parent !== null) children.set(parent, [...(children.get(parent) ?? []), id]);
  const height = (id: string, seen: Set<string>): number => {
    if (seen.has(id)) return 0;
    seen.add(id);
    return 1 + Math.max(0, ...(children.get(id) ?? []).map((c) => height(c, seen)));
  };
  return height(folder, new Set());
}

/** Would moving `folder` under `newParent` take its subtree past the depth limit? */
export function tooDeepAfterMove(parents: ParentMap, folder: string, newParent: string | null): boolean {
  return depthOf(parents, newParent) + subtreeHeight(parents, folder) > MAX_FOLDER_DEPTH;
}

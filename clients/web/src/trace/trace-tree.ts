// A trace's calls nested by parent_id, as the rows of a tree in display order (pre-order: each call
// before its children, siblings in the order given). Flat rows with a level rather than nested
// nodes: a deep trace is then neither a deep recursion here nor in React, and the tree widget
// renders rows with aria-level, aria-setsize and aria-posinset.

/** What nesting reads of a call. */
export type TraceCall = { id: string; parent_id?: string | null };

export type TraceRow<T extends TraceCall> = {
  call: T;
  /** 1 for a root (aria-level). */
  level: number;
  /** The row this one sits under; null for a root. */
  parentId: string | null;
  /** How many rows sit directly under it. */
  children: number;
  /** Its place among its siblings, from 1, and how many siblings there are (aria-posinset, aria-setsize). */
  position: number;
  siblings: number;
  /**
   * A root whose call names a parent that is not among the calls (not stored yet, or past the
   * calls read), or that closes a loop of parents: shown at the top level rather than dropped.
   */
  detached: boolean;
};

/**
 * Nests calls by parent_id. Every call appears exactly once (a repeated id keeps its first call):
 * a call without a parent, naming itself, or naming a parent that is not given is a root; so is
 * the first call (in the order given) of a loop of parents, which is cut there. Iterative, so the
 * depth of a trace costs no stack.
 */
export function traceRows<T extends TraceCall>(calls: readonly T[]): TraceRow<T>[] {
  const byId = new Map<string, T>();
  for (const call of calls) if (!byId.has(call.id)) byId.set(call.id, call);
  const unique = [...byId.values()];

  const childrenOf = new Map<string, T[]>();
  const roots: T[] = [];
  for (const call of unique) {
    const parent = call.parent_id;
    if (parent && parent !== call.id && byId.has(parent)) {
      const list = childrenOf.get(parent);
      if (list) list.push(call);
      else childrenOf.set(parent, [call]);
    } else roots.push(call);
  }

  const rows: TraceRow<T>[] = [];
  const placed = new Set<string>();
  /** Appends `top` and everything under it, depth first, each child once. */
  const walk = (top: T, topInfo: { position: number; siblings: number }) => {
    const stack: { call: T; level: number; parentId: string | null; position: number; siblings: number }[] = [
      { call: top, level: 1, parentId: null, ...topInfo },
    ];
    while (stack.length) {
      const entry = stack.pop()!;
      placed.add(entry.call.id);
      const children = (childrenOf.get(entry.call.id) ?? []).filter((child) => !placed.has(child.id));
      const parent = entry.call.parent_id;
      rows.push({
        call: entry.call,
        level: entry.level,
        parentId: entry.parentId,
        children: children.length,
        position: entry.position,
        siblings: entry.siblings,
        detached: entry.parentId === null && Boolean(parent) && parent !== entry.call.id,
      });
      // Pushed last child first, so that the first child is taken next.
      for (let index = children.length - 1; index >= 0; index--) {
        stack.push({ call: children[index]!, level: entry.level + 1, parentId: entry.call.id, position: index + 1, siblings: children.length });
      }
    }
  };

  // Calls only reachable through a loop of parents become roots after the real ones, in the
  // order given; the number of roots is known only then.
  const topLevel: T[] = [];
  const visit = (top: T) => {
    topLevel.push(top);
    walk(top, { position: 0, siblings: 0 });
  };
  for (const root of roots) visit(root);
  for (const call of unique) if (!placed.has(call.id)) visit(call);
  let position = 0;
  for (const row of rows) {
    if (row.level !== 1) continue;
    row.position = ++position;
    row.siblings = topLevel.length;
  }
  return rows;
}

/**
 * The rows on screen when the rows named in `collapsed` are closed: their descendants are left
 * out. Rows are in display order, so a descendant follows its ancestor at a deeper level.
 */
export function visibleRows<T extends TraceCall>(rows: readonly TraceRow<T>[], collapsed: ReadonlySet<string>): TraceRow<T>[] {
  const shown: TraceRow<T>[] = [];
  let hiddenBelow = Infinity;
  for (const row of rows) {
    if (row.level > hiddenBelow) continue;
    hiddenBelow = Infinity;
    shown.push(row);
    if (row.children && collapsed.has(row.call.id)) hiddenBelow = row.level;
  }
  return shown;
}

/** The ids of a row's ancestors, nearest first (to open them so that the row can be seen). */
export function ancestorsOf<T extends TraceCall>(rows: readonly TraceRow<T>[], id: string): string[] {
  const parentOf = new Map(rows.map((row) => [row.call.id, row.parentId]));
  const found: string[] = [];
  let parent = parentOf.get(id) ?? null;
  while (parent !== null && found.length < rows.length) {
    found.push(parent);
    parent = parentOf.get(parent) ?? null;
  }
  return found;
}

// When the annotator's lease on an item ends. Items carry no lease time, so the page counts from
// the moment it was first handed the item (claim time + the queue's lease_seconds), kept in the
// tab's sessionStorage so that a reload, which claims the same held item again, keeps counting
// from that first claim. The server's lease started a little earlier still (before its answer
// left), so the page never believes in a lease the server has already ended.

const key = (itemId: string) => `loupe.claimedAt.${itemId}`;

export function leaseEndsAt(itemId: string, leaseSeconds: number): number {
  const kept = Number(sessionStorage.getItem(key(itemId)));
  const claimedAt = Number.isFinite(kept) && kept > 0 ? kept : Date.now();
  sessionStorage.setItem(key(itemId), String(claimedAt));
  return claimedAt + leaseSeconds * 1000;
}

/** The item is finished or lost: its claim time is no longer needed. */
export function forgetLease(itemId: string): void {
  sessionStorage.removeItem(key(itemId));
}

/**
 * Where failed authentications are counted, per client, in fixed windows: a window opens with a
 * client's first failure and lasts `windowMs`; the failures counted in it are its count.
 */
export interface FailureCounts {
  /** Counts one failure; returns the window's count with it, and the seconds left in the window. */
  add(client: string): Promise<{ failures: number; secondsLeft: number }>;
  /** The count of the client's open window (0 when none is open): for inspection only. */
  current(client: string): Promise<number>;
}

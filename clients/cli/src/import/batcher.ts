import { fieldPath } from '@loupe/shared/field-path';
import { describeFailure, type Failure } from '../errors.ts';
import { withRetry, type RetryPolicy } from '../retry.ts';

/** One record to store, the input line it came from, and that line's length (what it holds in memory). */
export type Entry = { line: number; record: Record<string, unknown>; size: number };
export type BadLine = { line: number; reason: string; status: number | null };
export type OnError = 'skip' | 'stop';

export type BatcherOptions = {
  /** Stores one batch, all or nothing (the server's batch create). */
  send(records: Record<string, unknown>[]): Promise<unknown>;
  batchSize: number;
  concurrency: number;
  /**
   * The line lengths that the records waiting and in flight may add up to; a batch is sent once it
   * holds its share (heldSize / concurrency) and a record alone always fits.
   */
  heldSize: number;
  onError: OnError;
  retry: RetryPolicy;
  onBadLine(bad: BadLine): void;
  onStored(count: number): void;
};

/** A failure that is no line's fault (401, 403, 500, retries exhausted): the import ends. */
export class FatalFailure extends Error {
  readonly failure: Failure;
  constructor(failure: Failure) {
    super(failure.reason);
    this.failure = failure;
  }
}

/** The element indices a 400/409/413 names: from the schema issues' paths, else `batch[i]` in the reason. */
export function badIndices(failure: Failure, length: number): number[] {
  const found = new Set<number>();
  for (const { path } of failure.issues) if (path[0] === 'batch' && typeof path[1] === 'number') found.add(path[1]);
  if (!found.size) for (const match of failure.reason.matchAll(/batch\[(\d+)\]/g)) found.add(Number(match[1]));
  return [...found].filter((i) => i < length).sort((a, b) => a - b);
}

/**
 * Each bad element's own reason: from its first schema issue, in the words the server uses for the
 * first issue of a request; the failure's reason for the one element it names when there are no
 * issues. Elements without a reason of their own are left out: sent again, they fail with theirs.
 */
export function ownReasons(failure: Failure, bad: readonly number[]): Map<number, string> {
  const reasons = new Map<number, string>();
  for (const { path, message } of failure.issues) {
    const index = path[1];
    if (path[0] === 'batch' && typeof index === 'number' && bad.includes(index) && !reasons.has(index)) {
      reasons.set(index, `Invalid request at ${fieldPath(path)}: ${message}.`);
    }
  }
  if (!reasons.size && bad.length) reasons.set(bad[0]!, failure.reason);
  return reasons;
}

/**
 * Sends batches with several in flight. A 413 splits the batch in halves and sends each; a 400 or
 * 409 naming elements marks those lines bad, and the rest of the batch is sent again without them
 * (`skip`) or only the part before the first bad line is (`stop`, after which nothing new is sent).
 * 429, 503 and network errors are retried with backoff. Stored line numbers are kept as ranges.
 */
export class Batcher {
  private readonly options: BatcherOptions;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly ranges: [number, number][] = [];
  private pending: Entry[] = [];
  private pendingSize = 0;
  private inFlightSize = 0;
  stored = 0;
  stopped = false;
  fatal: FatalFailure | undefined;

  constructor(options: BatcherOptions) {
    this.options = options;
  }

  /**
   * Adds a record; answers whether a batch is full, to be sent with `flush` (which waits while as
   * many batches as allowed are in flight, so memory stays bounded) before the next is added.
   */
  add(entry: Entry): boolean {
    this.pending.push(entry);
    this.pendingSize += entry.size;
    return this.pending.length >= this.options.batchSize || this.pendingSize >= this.options.heldSize / this.options.concurrency;
  }

  /**
   * Waits until a line of `size` may be parsed beside the records held (waiting and in flight),
   * sending what waits first: a file of large lines is read as fast as they are stored, and the
   * memory held stays bounded whatever their sizes.
   */
  async makeRoom(size: number): Promise<void> {
    while (!this.stopped && !this.hasRoom(size)) {
      if (this.pending.length) await this.flush();
      else if (this.inFlight.size) await Promise.race(this.inFlight);
      else return;
    }
  }

  /** Whether a line of `size` may be parsed now (a record alone always fits). */
  hasRoom(size: number): boolean {
    return this.held === 0 || this.held + size <= this.options.heldSize;
  }

  private get held(): number {
    return this.pendingSize + this.inFlightSize;
  }

  /** Sends what is pending as one batch, once a slot is free. */
  async flush(): Promise<void> {
    if (!this.pending.length || this.stopped) return;
    const batch = this.pending;
    const size = this.pendingSize;
    this.pending = [];
    this.pendingSize = 0;
    this.inFlightSize += size;
    while (this.inFlight.size >= this.options.concurrency) await Promise.race(this.inFlight);
    if (this.stopped) {
      this.inFlightSize -= size;
      return;
    }
    const task = this.deliver(batch).catch((error: unknown) => {
      this.stopped = true;
      this.fatal ??= error instanceof FatalFailure ? error : new FatalFailure(describeFailure(error));
    });
    const tracked = task.finally(() => {
      this.inFlight.delete(tracked);
      this.inFlightSize -= size;
    });
    this.inFlight.add(tracked);
  }

  /** Sends what is left and waits for every batch in flight. */
  async finish(): Promise<void> {
    await this.flush();
    while (this.inFlight.size) await Promise.race(this.inFlight);
  }

  /** Stops sending new batches (a bad line under `stop`, or the input failed). */
  stop(): void {
    this.stopped = true;
    this.pending = [];
    this.pendingSize = 0;
  }

  /** The stored line numbers, merged into ascending ranges. */
  storedRanges(): [number, number][] {
    const sorted = [...this.ranges].sort((a, b) => a[0] - b[0]);
    const merged: [number, number][] = [];
    for (const [a, b] of sorted) {
      const last = merged.at(-1);
      if (last && a <= last[1] + 1) last[1] = Math.max(last[1], b);
      else merged.push([a, b]);
    }
    return merged;
  }

  private async deliver(entries: Entry[]): Promise<void> {
    if (!entries.length) return;
    try {
      await withRetry(() => this.options.send(entries.map((e) => e.record)), this.options.retry);
    } catch (error) {
      const failure = describeFailure(error);
      if (failure.status === 413 && entries.length > 1) {
        const half = Math.ceil(entries.length / 2);
        await this.deliver(entries.slice(0, half));
        if (!(this.stopped && this.options.onError === 'stop')) await this.deliver(entries.slice(half));
        return;
      }
      const lineFault = failure.status === 400 || failure.status === 409 || failure.status === 413;
      const bad = lineFault ? (entries.length === 1 ? [0] : badIndices(failure, entries.length)) : [];
      if (!bad.length) throw new FatalFailure(failure);
      const reasons = ownReasons(failure, bad);
      if (this.options.onError === 'stop') {
        const first = bad[0]!;
        this.options.onBadLine({ line: entries[first]!.line, reason: reasons.get(first) ?? failure.reason, status: failure.status });
        this.stop();
        await this.deliver(entries.slice(0, first));
        return;
      }
      // Only the lines whose own reason is known are left out; another bad line in the rest fails
      // the next send with its own reason.
      for (const [i, reason] of reasons) this.options.onBadLine({ line: entries[i]!.line, reason, status: failure.status });
      await this.deliver(entries.filter((_, i) => !reasons.has(i)));
      return;
    }
    this.record(entries);
  }

  private record(entries: Entry[]): void {
    let start = entries[0]!.line;
    let previous = start;
    for (const { line } of entries.slice(1)) {
      if (line !== previous + 1) {
        this.ranges.push([start, previous]);
        start = line;
      }
      previous = line;
    }
    this.ranges.push([start, previous]);
    this.stored += entries.length;
    this.options.onStored(entries.length);
  }
}

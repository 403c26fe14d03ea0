import type { Access } from '../domain/access.ts';
import { DomainError } from '../domain/errors.ts';

export type StreamLimits = { perKey: number; perProcess: number };

/** An open stream, as the periodic access check sees it (events/stream-access-check.ts). */
export type OpenStream = { keyId: string; projectId: string; access: Access; fail(error: DomainError): void };

/** How long a refused client is told to wait before it tries again. */
const RETRY_AFTER_SECONDS = 5;

/**
 * Counts the open event streams of this process, per API key and in all, and refuses one over
 * either limit (429): each stream holds a connection and a subscriber for as long as it lasts.
 * The counts are of this process's own open connections, which is what they bound.
 */
export class StreamSlots {
  readonly #limits: StreamLimits;
  readonly #byKey = new Map<string, number>();
  readonly #streams = new Set<OpenStream>();
  #total = 0;

  constructor(limits: StreamLimits) {
    this.#limits = limits;
  }

  /**
   * Takes a slot for a stream of this key, or throws 429; the returned function gives it back
   * (once). With `stream`, the stream is among those whose access is checked again periodically.
   */
  take(keyId: string, stream?: OpenStream): () => void {
    const held = this.#byKey.get(keyId) ?? 0;
    if (held >= this.#limits.perKey) {
      throw new DomainError('rate_limited', `This API key already holds as many open event streams as one key may (${this.#limits.perKey}); close one first.`, RETRY_AFTER_SECONDS);
    }
    if (this.#total >= this.#limits.perProcess) {
      throw new DomainError('rate_limited', 'The server holds as many open event streams as it serves at once; retry later.', RETRY_AFTER_SECONDS);
    }
    this.#byKey.set(keyId, held + 1);
    this.#total++;
    if (stream) this.#streams.add(stream);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      if (stream) this.#streams.delete(stream);
      this.#total--;
      const left = (this.#byKey.get(keyId) ?? 1) - 1;
      if (left > 0) this.#byKey.set(keyId, left);
      else this.#byKey.delete(keyId);
    };
  }

  /** The open streams (a copy). */
  streams(): OpenStream[] {
    return [...this.#streams];
  }

  get open(): number {
    return this.#total;
  }
}

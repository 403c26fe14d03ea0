import type { AnnotationQueueEvent } from '@loupe/shared';
import { DomainError } from '../domain/errors.ts';
import type { QueueEventSubscriber, Renewal } from './queue-event-bus.ts';

/**
 * Events waiting for a slow client are bounded: past this many, they collapse into one
 * `queue_updated` per queue (a client refetches on it anyway), so a stalled reader costs a fixed
 * amount. A project's stream whose queues alone would overflow is renewed instead.
 */
const MAX_WAITING = 256;


const RENEWAL_REASONS: Record<Renewal, string> = {
  shutdown: 'This server process is shutting down; reconnect.',
  expired: 'Event streams are renewed periodically, so that credentials are checked again; reconnect.',
  missed: 'Events of this stream may have been missed; reconnect and read again what is shown.',
};

/**
 * One subscriber's events (of a queue or of a project) as an async iterable (what a tRPC subscription returns). `onEnd` runs
 * once, when the stream ends for any reason: the client went away, the server is shutting down,
 * the stream reached its longest life, or the iteration stopped.
 */
export class QueueEventStream implements QueueEventSubscriber, AsyncIterable<AnnotationQueueEvent> {
  #waiting: AnnotationQueueEvent[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  #renewal: Renewal | undefined;
  #failure: unknown;
  readonly #onEnd: () => void;

  constructor(onEnd: () => void) {
    this.#onEnd = onEnd;
  }

  push(event: AnnotationQueueEvent): void {
    if (this.#ended) return;
    this.#waiting.push(event);
    if (this.#waiting.length > MAX_WAITING) {
      const queues = new Set(this.#waiting.map((waiting) => waiting.queue_id));
      // Too many queues to name each: the client reconnects and reads everything again.
      this.#waiting = queues.size < MAX_WAITING ? [...queues].map((queueId) => ({ type: 'queue_updated', queue_id: queueId, at: event.at })) : [];
      if (!this.#waiting.length) this.end('missed');
    }
    this.#wakeUp();
  }

  /** Ends the stream; with a renewal, its client is told to reconnect. */
  end(renewal?: Renewal): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#renewal = renewal;
    this.#onEnd();
    this.#wakeUp();
  }

  /** Ends the stream with an error for its client (its key was revoked, its access lost). */
  fail(error: DomainError): void {
    if (this.#ended) return;
    this.#failure = error;
    this.end();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<AnnotationQueueEvent> {
    try {
      for (;;) {
        const next = this.#waiting.shift();
        if (next) {
          yield next;
          continue;
        }
        if (this.#ended) {
          if (this.#failure) throw this.#failure;
          if (this.#renewal) throw new DomainError('unavailable', RENEWAL_REASONS[this.#renewal]);
          return;
        }
        await new Promise<void>((resolve) => (this.#wake = resolve));
      }
    } finally {
      this.end();
    }
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}

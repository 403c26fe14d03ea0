import type { AnnotationQueueEvent } from '@loupe/shared';
import type { QueueEventSubscriber } from './local-fanout.ts';

/**
 * Events waiting for a slow client are bounded: past this many, they collapse into one
 * `queue_updated` (a client refetches on it anyway), so a stalled reader costs a fixed amount.
 */
const MAX_WAITING = 256;

/**
 * One subscriber's events as an async iterable (what a tRPC subscription returns). `onEnd` runs
 * once, when the stream ends for any reason: the client went away, the server is shutting down,
 * or the iteration stopped.
 */
export class QueueEventStream implements QueueEventSubscriber, AsyncIterable<AnnotationQueueEvent> {
  #waiting: AnnotationQueueEvent[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  readonly #onEnd: () => void;

  constructor(onEnd: () => void) {
    this.#onEnd = onEnd;
  }

  push(event: AnnotationQueueEvent): void {
    if (this.#ended) return;
    if (this.#waiting.length >= MAX_WAITING) {
      this.#waiting = [{ type: 'queue_updated', queue_id: event.queue_id, at: event.at }];
    } else {
      this.#waiting.push(event);
    }
    this.#wakeUp();
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#onEnd();
    this.#wakeUp();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<AnnotationQueueEvent> {
    try {
      for (;;) {
        const next = this.#waiting.shift();
        if (next) {
          yield next;
          continue;
        }
        if (this.#ended) return;
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

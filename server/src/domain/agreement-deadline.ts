import { DomainError } from './errors.ts';

// The time limit of one agreement request (agreement.ts), checked wherever it works: the event
// loop, a statistics thread, a reading thread.

/** The 503 of a request whose time limit passed: the work is stopped, its thread ended. */
export function agreementTimedOut(timeoutMs: number): DomainError {
  return new DomainError(
    'unavailable',
    `The agreement took longer than its limit of ${timeoutMs.toLocaleString('en')} ms and was stopped; ask for fewer scorer_refs, or retry when the server is less busy.`,
  );
}

/** A point in time after which an agreement request is given up (on this thread's clock). */
export class AgreementDeadline {
  readonly at: number;
  readonly timeoutMs: number;

  /** `remainingMs` (all of `timeoutMs` when not given): a thread handed the request's time goes on with what is left. */
  constructor(timeoutMs: number, remainingMs = timeoutMs) {
    this.timeoutMs = timeoutMs;
    this.at = performance.now() + remainingMs;
  }

  get remainingMs(): number {
    return this.at - performance.now();
  }

  /** Throws the 503 once the time is up. */
  check(): void {
    if (this.remainingMs <= 0) throw agreementTimedOut(this.timeoutMs);
  }
}

import { Worker } from 'node:worker_threads';
import type { AgreementStatistics } from './agreement-statistics.ts';
import type { AgreementTask } from './agreement-thread.ts';
import { DomainError } from './errors.ts';
import { WorkSlots } from './work-slots.ts';

// Agreement requests of one process run within a time limit, at most AGREEMENT_SLOTS at once, with
// their statistics computed in worker threads: what one request may hold (its values, see
// agreement.ts) and take (a core, until its time is up) is bounded, and the event loop stays free.

/**
 * Agreement requests computed at once per process; later ones wait for a slot within their time.
 * One: what a request holds (agreement.ts's bounds) is then all that agreement holds, and the other
 * core serves every other request.
 */
export const AGREEMENT_SLOTS = 1;
/** The heap of one worker thread: a computation that needs more fails alone. */
const THREAD_HEAP_MB = 128;

const THREAD_URL = new URL('./agreement-thread.ts', import.meta.url);

const idle: Worker[] = [];

/** The 503 of a request whose time limit passed: the work is stopped, its thread ended. */
export function agreementTimedOut(timeoutMs: number): DomainError {
  return new DomainError(
    'unavailable',
    `The agreement took longer than its limit of ${timeoutMs.toLocaleString('en')} ms and was stopped; ask for fewer scorer_refs, or retry when the server is less busy.`,
  );
}

const outOfMemory = () =>
  new DomainError('too_large', `The agreement's statistics of one spec needed more than the ${THREAD_HEAP_MB} MB of memory they may take and were stopped.`);

/** A point in time after which an agreement request is given up. */
export class AgreementDeadline {
  readonly at: number;
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    this.timeoutMs = timeoutMs;
    this.at = performance.now() + timeoutMs;
  }

  get remainingMs(): number {
    return this.at - performance.now();
  }

  /** Throws the 503 once the time is up. */
  check(): void {
    if (this.remainingMs <= 0) throw agreementTimedOut(this.timeoutMs);
  }
}

const slots = new WorkSlots(AGREEMENT_SLOTS);

/** Runs `work` in one of AGREEMENT_SLOTS, waiting for one until the deadline. */
export function inAgreementSlot<T>(deadline: AgreementDeadline, work: () => Promise<T>): Promise<T> {
  return slots.run(work, { waitMs: deadline.remainingMs, refuse: () => agreementTimedOut(deadline.timeoutMs) });
}

/**
 * The statistics of `task`, computed in a worker thread; past the deadline the thread is ended
 * (terminate stops even a loop that never yields) and the request gets a 503.
 */
export function statisticsInThread(task: AgreementTask, deadline: AgreementDeadline): Promise<AgreementStatistics> {
  deadline.check();
  const worker = idle.pop() ?? startThread();
  return new Promise<AgreementStatistics>((resolve, reject) => {
    const settle = (outcome: () => void, reusable: boolean) => {
      clearTimeout(timer);
      worker.off('message', onMessage).off('error', onError).off('exit', onExit);
      if (reusable && idle.length < AGREEMENT_SLOTS) idle.push(worker);
      else void worker.terminate();
      outcome();
    };
    const onMessage = (statistics: AgreementStatistics) => settle(() => resolve(statistics), true);
    const onError = (error: Error & { code?: string }) => settle(() => reject(error.code === 'ERR_WORKER_OUT_OF_MEMORY' ? outOfMemory() : error), false);
    const onExit = (code: number) => settle(() => reject(new Error(`agreement thread exited with code ${code}`)), false);
    const timer = setTimeout(() => settle(() => reject(agreementTimedOut(deadline.timeoutMs)), false), Math.max(0, deadline.remainingMs));
    worker.on('message', onMessage).on('error', onError).on('exit', onExit);
    worker.postMessage(task, [task.itemCreatedMs.buffer, task.itemStarts.buffer, task.entryAnnotator.buffer, task.entryText.buffer]);
  });
}

function startThread(): Worker {
  const worker = new Worker(THREAD_URL, { resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB } });
  // An idle thread does not keep the process alive; one that fails while idle is dropped.
  worker.unref();
  const drop = () => {
    const at = idle.indexOf(worker);
    if (at >= 0) idle.splice(at, 1);
  };
  worker.on('error', drop).on('exit', drop);
  return worker;
}

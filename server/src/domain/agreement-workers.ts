import { Worker } from 'node:worker_threads';
import { agreementTimedOut, type AgreementDeadline } from './agreement-deadline.ts';
import type { AgreementStatistics } from './agreement-statistics.ts';
import type { SpecRead, ThreadAnswer, ThreadWork } from './agreement-thread.ts';
import type { AgreementTask } from './agreement-values.ts';
import { DomainError } from './errors.ts';
import { WorkSlots } from './work-slots.ts';

// Agreement requests of one process run within a time limit, at most AGREEMENT_SLOTS at once, with
// their statistics computed in worker threads, their values mostly read there too: what one
// request may hold (its values, see agreement-values.ts) and take (SPECS_AT_ONCE threads, until its
// time is up) is bounded, and the event loop stays free.

/**
 * Agreement requests computed at once per process; later ones wait for a slot within their time.
 * One: what a request holds (agreement-values.ts's bounds, for SPECS_AT_ONCE specs) is then all
 * that agreement holds.
 */
export const AGREEMENT_SLOTS = 1;
/** Specs of one request read and computed at once, each in a thread of its own (two cores: both). */
export const SPECS_AT_ONCE = 2;
/** The heap of one worker thread: a computation that needs more fails alone. */
const THREAD_HEAP_MB = 128;
/**
 * Its space for new objects: V8 sizes it from the old space otherwise, small enough that a spec's
 * rows, read and dropped a chunk at a time, were collected over and over. A request's threads
 * hold at most SPECS_AT_ONCE × (THREAD_HEAP_MB + THREAD_YOUNG_MB) of heap.
 */
const THREAD_YOUNG_MB = 32;

const THREAD_URL = new URL('./agreement-thread.ts', import.meta.url);

const idle: Worker[] = [];

const outOfMemory = () =>
  new DomainError('too_large', `Reading and comparing one spec's values for the agreement needed more than the ${THREAD_HEAP_MB} MB of memory they may take and were stopped.`);

/** A thread's error as the event loop would have had it: its message, and the driver's codes the error policy reads. */
function threadFailure({ message, stack, code, errcode }: Extract<ThreadAnswer, { failed: unknown }>['failed']): Error {
  const error = Object.assign(new Error(message), code === undefined ? {} : { code }, errcode === undefined ? {} : { errcode });
  if (stack) error.stack = stack;
  return error;
}

/**
 * Threads ended but not yet stopped: terminate cannot interrupt a SQLite statement running in
 * one, which goes on to its end. No request starts threads while any of these is still working,
 * so at most SPECS_AT_ONCE threads ever work for agreement.
 */
const stopping = new Set<Promise<void>>();

function stop(worker: Worker): void {
  const stopped = worker.terminate().then(
    () => undefined,
    () => undefined,
  );
  stopping.add(stopped);
  void stopped.finally(() => stopping.delete(stopped));
}

const slots = new WorkSlots(AGREEMENT_SLOTS);

/** Runs `work` in one of AGREEMENT_SLOTS, waiting for one until the deadline. */
export function inAgreementSlot<T>(deadline: AgreementDeadline, work: () => Promise<T>): Promise<T> {
  return slots.run(
    async () => {
      await threadsStopped(deadline);
      return work();
    },
    { waitMs: deadline.remainingMs, refuse: () => agreementTimedOut(deadline.timeoutMs) },
  );
}

/** Waits, within the deadline, until no thread an earlier request ended is still working. */
async function threadsStopped(deadline: AgreementDeadline): Promise<void> {
  if (!stopping.size) return;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), Math.max(0, deadline.remainingMs))));
  try {
    while (stopping.size) if ((await Promise.race([Promise.all(stopping), late])) === 'late') throw agreementTimedOut(deadline.timeoutMs);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The statistics of `task`, computed in a worker thread; past the deadline the thread is ended
 * (terminate stops even a loop that never yields) and the request gets a 503.
 */
export function statisticsInThread(task: AgreementTask, deadline: AgreementDeadline): Promise<AgreementStatistics> {
  return inThread({ task }, [task.itemCreatedMs.buffer, task.itemStarts.buffer, task.entryAnnotator.buffer, task.entryText.buffer], deadline);
}

/** A spec's values read by a worker thread on a connection of its own, and their statistics (items named); bounded as statisticsInThread. */
export function specInThread(read: Omit<SpecRead, 'timeoutMs' | 'remainingMs'>, deadline: AgreementDeadline): Promise<AgreementStatistics> {
  return inThread({ read: { ...read, timeoutMs: deadline.timeoutMs, remainingMs: deadline.remainingMs } }, [], deadline);
}

function inThread(work: ThreadWork, transfer: ArrayBuffer[], deadline: AgreementDeadline): Promise<AgreementStatistics> {
  deadline.check();
  const worker = idle.pop() ?? startThread();
  return new Promise<AgreementStatistics>((resolve, reject) => {
    const settle = (outcome: () => void, reusable: boolean) => {
      clearTimeout(timer);
      worker.off('message', onMessage).off('error', onError).off('exit', onExit);
      if (reusable && idle.length < AGREEMENT_SLOTS * SPECS_AT_ONCE) idle.push(worker);
      else stop(worker);
      outcome();
    };
    const onMessage = (reply: ThreadAnswer) => {
      if ('statistics' in reply) settle(() => resolve(reply.statistics), true);
      else if ('refused' in reply) settle(() => reject(new DomainError(reply.refused.kind, reply.refused.reason)), true);
      else settle(() => reject(threadFailure(reply.failed)), true);
    };
    const onError = (error: Error & { code?: string }) => settle(() => reject(error.code === 'ERR_WORKER_OUT_OF_MEMORY' ? outOfMemory() : error), false);
    const onExit = (code: number) => settle(() => reject(new Error(`agreement thread exited with code ${code}`)), false);
    const timer = setTimeout(() => settle(() => reject(agreementTimedOut(deadline.timeoutMs)), false), Math.max(0, deadline.remainingMs));
    worker.on('message', onMessage).on('error', onError).on('exit', onExit);
    worker.postMessage(work, transfer);
  });
}

function startThread(): Worker {
  const worker = new Worker(THREAD_URL, { resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB, maxYoungGenerationSizeMb: THREAD_YOUNG_MB } });
  // An idle thread does not keep the process alive; one that fails while idle is dropped.
  worker.unref();
  const drop = () => {
    const at = idle.indexOf(worker);
    if (at >= 0) idle.splice(at, 1);
  };
  worker.on('error', drop).on('exit', drop);
  return worker;
}

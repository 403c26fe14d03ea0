import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AnswerRoom } from '../domain/answer-budget.ts';
import { heapUnits, type HeapHold } from '../domain/heap-budget.ts';
import { heapAccountsOf, releaseBodyHold } from './request-admission.ts';
import type { Services } from './services.ts';

/** What an answer of N bytes of JSON costs in heap, as a body of N bytes does: its rows, their parsed values, the answer and its text. */
const ANSWER_WEIGHT_PER_BYTE = 4;

/**
 * The heap a request's answer takes, from the budget request bodies share (LOUPE_BODY_BUDGET_BYTES),
 * charged to the caller's key and address as their bodies are: many large answers at once, from
 * one viewer or several, wait for room (LOUPE_BODY_WAIT_MS) and are then refused with 503, instead
 * of together passing the heap. Held until the response is done, sent or abandoned.
 */
export function answerRoom(services: Services, req: IncomingMessage, res: ServerResponse): AnswerRoom {
  let hold: HeapHold | undefined;
  return async (bytes) => {
    if (!hold) {
      releaseBodyHold(req);
      const taken = services.heapBudget.hold(heapAccountsOf(req));
      res.once('close', () => taken.release());
      hold = taken;
    }
    // No more than one caller may ever hold: an answer within its byte budget is never refused for
    // its size here (with the defaults, 4 × 32 MiB is well within the 192 MiB one caller may hold).
    const units = Math.min(heapUnits(ANSWER_WEIGHT_PER_BYTE * bytes), services.heapBudget.largest);
    return hold.growTo(units, services.config.limits.bodyWaitMs);
  };
}

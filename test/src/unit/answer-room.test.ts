import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { answerRoom } from '../../../server/src/api/answer-room.ts';
import type { Services } from '../../../server/src/api/services.ts';
import { HEAP_UNIT, heapBudgetOf } from '../../../server/src/domain/heap-budget.ts';

// Answers take their heap from the budget request bodies share: many large answers at once wait
// for one another (and are refused after the wait) instead of passing the heap together.

function services(budgetBytes: number, shareBytes: number, waitMs: number): Services {
  return { heapBudget: heapBudgetOf(budgetBytes, shareBytes), config: { limits: { bodyWaitMs: waitMs } } } as unknown as Services;
}

/** A request from `ip` and its response, which ends (`close`) when told. */
function exchange(ip: string): { req: IncomingMessage; res: ServerResponse & EventEmitter; end: () => void } {
  const req = { ip, socket: { remoteAddress: ip } } as unknown as IncomingMessage;
  const res = new EventEmitter() as ServerResponse & EventEmitter;
  return { req, res, end: () => res.emit('close') };
}

describe('the heap an answer takes', () => {
  it('holds 4 × the answer’s bytes until its response closes; a second large answer waits for it', async () => {
    const shared = services(64 * HEAP_UNIT, 64 * HEAP_UNIT, 2_000);
    const first = exchange('10.0.0.1');
    const second = exchange('10.0.0.2');
    expect(await answerRoom(shared, first.req, first.res)(10 * HEAP_UNIT)).toBe(true); // 40 units
    expect(shared.heapBudget.heldBy('address 10.0.0.1')).toBe(40);
    let served = false;
    const waiting = answerRoom(shared, second.req, second.res)(10 * HEAP_UNIT).then((ok) => (served = ok));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(served).toBe(false);
    first.end();
    expect(await waiting).toBe(true);
    expect(shared.heapBudget.heldBy('address 10.0.0.1')).toBe(0);
    second.end();
    expect(shared.heapBudget.heldBy('address 10.0.0.2')).toBe(0);
  });

  it('refuses an answer that finds no room within the wait', async () => {
    const shared = services(64 * HEAP_UNIT, 64 * HEAP_UNIT, 100);
    const first = exchange('10.0.0.1');
    expect(await answerRoom(shared, first.req, first.res)(12 * HEAP_UNIT)).toBe(true); // 48 of 64 units
    const second = exchange('10.0.0.2');
    expect(await answerRoom(shared, second.req, second.res)(12 * HEAP_UNIT)).toBe(false);
    first.end();
  });
});

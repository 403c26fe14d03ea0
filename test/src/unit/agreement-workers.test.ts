import { describe, expect, it } from 'vitest';
import { agreementStatistics, type RatedItem } from '../../../server/src/domain/agreement-statistics.ts';
import { taskStatistics, type AgreementTask } from '../../../server/src/domain/agreement-thread.ts';
import { AgreementDeadline } from '../../../server/src/domain/agreement-deadline.ts';
import { AGREEMENT_SLOTS, inAgreementSlot, specInThread, statisticsInThread } from '../../../server/src/domain/agreement-workers.ts';
import { isDatabaseUnavailable } from '../../../server/src/db/unavailable.ts';
import { DomainError } from '../../../server/src/domain/errors.ts';

// Agreement statistics in worker threads, within a time limit, AGREEMENT_SLOTS requests at once.

/** A task of two annotators over `count` items, their values apart by a half. */
function task(count: number): AgreementTask {
  const texts = Array.from({ length: 2 * count }, (_, v) => String(v / 2));
  return {
    level: 'ratio',
    annotators: ['a', 'b'],
    texts,
    itemIds: Array.from({ length: count }, (_, i) => `item-${String(count - i).padStart(6, '0')}`),
    itemCreatedMs: new Float64Array(count).fill(1_000),
    itemStarts: Int32Array.from({ length: count + 1 }, (_, i) => 2 * i),
    entryAnnotator: Int32Array.from({ length: 2 * count }, (_, e) => e % 2),
    entryText: Int32Array.from({ length: 2 * count }, (_, e) => 2 * Math.floor(e / 2) + (e % 2)),
  };
}

const isTimeLimit = (error: unknown) => error instanceof DomainError && error.kind === 'unavailable' && /longer than its limit of 5 ms/.test(error.message);

describe('agreement worker threads', () => {
  it('compute what agreementStatistics computes, items ordered by creation time then id', async () => {
    const small = task(50);
    const items: RatedItem[] = small.itemIds
      .map((id, i) => ({ id, i }))
      .sort((x, y) => (x.id < y.id ? -1 : 1))
      .map(({ i }) => ({ item_id: String(i), call_id: '', values: { a: i, b: i + 0.5 } }));
    const expected = agreementStatistics(items, 'ratio');
    expect(taskStatistics(task(50))).toEqual(expected);
    expect(await statisticsInThread(small, new AgreementDeadline(10_000))).toEqual(expected);
  });

  it('end a computation past its time limit with a 503 reason, and compute the next one', async () => {
    // 10,000 distinct values at the ratio level: a sum over 50 million pairs.
    const error = await statisticsInThread(task(5_000), new AgreementDeadline(5)).catch((e: unknown) => e);
    expect(isTimeLimit(error)).toBe(true);
    expect((await statisticsInThread(task(10), new AgreementDeadline(10_000))).items_rated).toBe(10);
  });

  it(`run ${AGREEMENT_SLOTS} requests at once; one more waits for a slot within its time limit`, async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const holders = Array.from({ length: AGREEMENT_SLOTS }, () => inAgreementSlot(new AgreementDeadline(10_000), () => held));
    const late = await inAgreementSlot(new AgreementDeadline(5), async () => 'ran').catch((e: unknown) => e);
    expect(isTimeLimit(late)).toBe(true);
    const waiting = inAgreementSlot(new AgreementDeadline(10_000), async () => 'ran');
    release();
    await Promise.all(holders);
    expect(await waiting).toBe('ran');
  });

  it('hand back a database that cannot serve a reading thread as the event loop would have it (the error policy answers 503)', async () => {
    const read = {
      queue: { queueId: 'q', coverage: 1 },
      scope: { projectId: 'acme/p', queueId: 'q', specName: 's', ref: 'svc:///acme/p/object/s:d', callRefPrefix: 'svc:///acme/p/call/', assignedOnly: false, level: 'nominal' as const },
    };
    // Nothing listens on port 1 of loopback: the connection is refused at once.
    const refused = await specInThread({ ...read, database: { postgresql: { url: 'postgres://postgres@127.0.0.1:1/none', limits: { connectionTimeoutMillis: 2_000 } } } }, new AgreementDeadline(10_000)).catch((e: unknown) => e);
    const missing = await specInThread({ ...read, database: { sqlite: '/nonexistent/loupe.db' } }, new AgreementDeadline(10_000)).catch((e: unknown) => e);
    for (const error of [refused, missing]) {
      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(DomainError);
      expect(isDatabaseUnavailable(error), String(error)).toBe(true);
    }
  });
});

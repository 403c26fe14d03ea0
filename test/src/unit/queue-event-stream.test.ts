import type { AnnotationQueueEvent } from '@loupe/shared';
import { describe, expect, it } from 'vitest';
import { QueueEventStream } from '../../../server/src/events/event-stream.ts';
import { LocalFanout } from '../../../server/src/events/local-fanout.ts';
import { StreamSlots } from '../../../server/src/events/stream-slots.ts';

const event = (n: number, queueId = 'q'): AnnotationQueueEvent => ({ type: 'progress', queue_id: queueId, item_id: `i${n}`, at: '2026-11-25T07:00:00.000Z' });

describe('QueueEventStream', () => {
  it('hands events on in order, and a slow reader holds at most 256 (then one queue_updated per queue)', async () => {
    let ended = 0;
    const stream = new QueueEventStream(() => ended++);
    for (let n = 0; n < 3; n++) stream.push(event(n));
    const iterator = stream[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual(event(0));
    for (let n = 3; n < 1000; n++) stream.push(event(n));
    const rest: AnnotationQueueEvent[] = [];
    stream.end();
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value);
    expect(rest.length).toBeLessThanOrEqual(256);
    expect(rest.at(-1)!.item_id).toBe('i999');
    expect(rest.some((e) => e.type === 'queue_updated')).toBe(true);
    expect(ended).toBe(1);
  });

  it('collapses the waiting events of many queues into one queue_updated each, and is renewed when even those would be too many', async () => {
    const stream = new QueueEventStream(() => {});
    const iterator = stream[Symbol.asyncIterator]();
    for (let n = 0; n < 300; n++) stream.push(event(n, `q${n % 3}`));
    stream.end();
    const rest: AnnotationQueueEvent[] = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value);
    expect(rest.filter((e) => e.type === 'queue_updated').map((e) => e.queue_id).sort()).toEqual(['q0', 'q1', 'q2']);

    const crowded = new QueueEventStream(() => {});
    const reader = crowded[Symbol.asyncIterator]();
    for (let n = 0; n < 300; n++) crowded.push(event(n, `q${n}`));
    await expect(reader.next()).rejects.toMatchObject({ kind: 'unavailable', message: expect.stringMatching(/may have been missed; reconnect/) });
  });

  it('wakes a waiting reader when it ends, and tells the client to reconnect when it ends for renewal', async () => {
    const stream = new QueueEventStream(() => {});
    const iterator = stream[Symbol.asyncIterator]();
    const waiting = iterator.next();
    stream.end('shutdown');
    await expect(waiting).rejects.toMatchObject({ kind: 'unavailable', message: expect.stringMatching(/shutting down; reconnect/) });
  });
});

describe('LocalFanout', () => {
  it('delivers to the subscribers of the event queue and of its project, without the project, and counts them back down', () => {
    const fanout = new LocalFanout();
    const got: string[] = [];
    const pushed: AnnotationQueueEvent[] = [];
    const subscriber = (name: string) => ({
      push: (e: AnnotationQueueEvent) => void (got.push(`${name}:${e.queue_id}`), pushed.push(e)),
      end: (renewal: string) => void got.push(`${name}:end:${renewal}`),
    });
    const offA = fanout.subscribe({ queue_id: 'a' }, subscriber('1'));
    const offB = fanout.subscribe({ queue_id: 'b' }, subscriber('2'));
    const offP = fanout.subscribe({ project_id: 'acme/p' }, subscriber('3'));
    expect(fanout.size).toBe(3);
    fanout.deliver({ ...event(0), queue_id: 'a', project_id: 'acme/p' });
    fanout.deliver({ ...event(1), queue_id: 'c', project_id: 'acme/p' });
    fanout.deliver({ ...event(2), queue_id: 'd', project_id: 'acme/other' });
    expect(got).toEqual(['1:a', '3:a', '3:c']);
    expect(pushed.every((e) => !('project_id' in e))).toBe(true);
    // Missed events: a queue's subscriber refetches on a queue_updated, a project's is renewed.
    fanout.deliverMissed(new Date());
    expect(got.slice(3)).toEqual(['1:a', '2:b', '3:end:missed']);
    offP();
    offA();
    offA();
    expect(fanout.size).toBe(1);
    fanout.endAll();
    expect(got.at(-1)).toBe('2:end:shutdown');
    offB();
    expect(fanout.size).toBe(0);
  });
});

describe('StreamSlots', () => {
  it('refuses past the per-key and per-process limits with 429 reasons, and gives a slot back once', () => {
    const slots = new StreamSlots({ perKey: 1, perProcess: 2 });
    const giveA = slots.take('a');
    expect(() => slots.take('a')).toThrow(/^This API key already holds as many open event streams as one key may \(1\)/);
    slots.take('b');
    expect(() => slots.take('c')).toThrow(/as many open event streams/);
    giveA();
    giveA();
    expect(slots.open).toBe(1);
    expect(() => slots.take('a')).not.toThrow();
  });
});

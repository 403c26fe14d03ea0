import { describe, expect, it } from 'vitest';
import { BodyBudget } from '../../../server/src/http/body-budget.ts';
import { bodyWeight, measureJson } from '../../../server/src/http/json-shape.ts';

describe('BodyBudget', () => {
  it('hands out units at once while there is room, first come first served after that', async () => {
    const budget = new BodyBudget(10);
    expect(budget.take(6, 1000)).toBe(true);
    const big = budget.take(6, 1000);
    const small = budget.take(1, 1000); // room for it, but it waits behind the big one
    expect(big).toBeInstanceOf(Promise);
    expect(small).toBeInstanceOf(Promise);
    const order: string[] = [];
    void (big as Promise<boolean>).then((ok) => order.push(`big ${ok}`));
    void (small as Promise<boolean>).then((ok) => order.push(`small ${ok}`));
    budget.give(6);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(order).toEqual(['big true', 'small true']);
  });

  it('lets a request that holds units take a few more ahead of the waiters', async () => {
    const budget = new BodyBudget(10);
    expect(budget.take(8, 1000)).toBe(true);
    const waiting = budget.take(8, 50);
    expect(budget.take(2, 1000, true)).toBe(true);
    expect(await waiting).toBe(false); // nothing was given back within 50 ms
  });

  it('answers false after the wait, and a timed-out large waiter no longer holds back smaller ones', async () => {
    const budget = new BodyBudget(10);
    expect(budget.take(5, 1000)).toBe(true);
    const large = budget.take(10, 30);
    const small = budget.take(5, 1000);
    expect(await large).toBe(false);
    expect(await small).toBe(true);
    expect(budget.take(1, 0)).toBeInstanceOf(Promise); // all 10 held now
  });

  it('never grants more than its size', () => {
    expect(new BodyBudget(4).take(5, 1000)).toBe(false);
  });
});

describe('measureJson', () => {
  it('counts depth, containers and separators outside strings, escapes included', () => {
    const text = JSON.stringify({ a: [1, 2, { b: 'x,{[' }], c: 'quote \\" inside, \\\\', d: [] });
    expect(measureJson(Buffer.from(text), 64)).toEqual({ depth: 3, containers: 4, separators: 4 });
  });

  it('stops once past the depth bound', () => {
    const deep = Buffer.from('['.repeat(1000) + ']'.repeat(1000));
    expect(measureJson(deep, 64).depth).toBe(65);
  });

  it('weighs tiny values far above their bytes', () => {
    const objects = `[${Array(1000).fill('{}').join(',')}]`;
    expect(bodyWeight(objects.length, measureJson(Buffer.from(objects), 64))).toBeGreaterThan(50 * objects.length);
  });
});

import { describe, expect, it } from 'vitest';
import { HeapBudget } from '../../../server/src/domain/heap-budget.ts';
import { bodyWeight, JsonMeter, measureJson, measureJsonText } from '../../../server/src/domain/json-shape.ts';

describe('HeapBudget', () => {
  const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

  it('hands out units at once while there is room, first come first served after that', async () => {
    const budget = new HeapBudget(10);
    const first = budget.hold();
    expect(first.take(6, 1000)).toBe(true);
    const big = budget.hold().take(6, 1000);
    const small = budget.hold().take(1, 1000); // room for it, but it waits behind the big one
    expect(big).toBeInstanceOf(Promise);
    expect(small).toBeInstanceOf(Promise);
    const order: string[] = [];
    void (big as Promise<boolean>).then((ok) => order.push(`big ${ok}`));
    void (small as Promise<boolean>).then((ok) => order.push(`small ${ok}`));
    first.release();
    first.release(); // once only
    await tick();
    expect(order).toEqual(['big true', 'small true']);
    expect(budget.free).toBe(3);
  });

  it('lets a body that holds units grow ahead of the waiters', async () => {
    const budget = new HeapBudget(10);
    const growing = budget.hold();
    expect(growing.take(8, 1000)).toBe(true);
    const waiting = budget.hold().take(8, 50);
    expect(growing.growTo(10, 1000)).toBe(true);
    expect(growing.held).toBe(10);
    expect(await waiting).toBe(false); // nothing was given back within 50 ms
  });

  it('answers false after the wait, and a timed-out large waiter no longer holds back smaller ones', async () => {
    const budget = new HeapBudget(10);
    expect(budget.hold().take(5, 1000)).toBe(true);
    const large = budget.hold().take(10, 30);
    const small = budget.hold().take(5, 1000);
    expect(await large).toBe(false);
    expect(await small).toBe(true);
    expect(budget.hold().take(1, 0)).toBeInstanceOf(Promise); // all 10 held now
  });

  it('never grants more than its size', () => {
    expect(new HeapBudget(4).hold().take(5, 1000)).toBe(false);
    expect(new HeapBudget(4).largest).toBe(4); // without a share smaller than the size, one body may hold it all
  });

  it('gives back at once units granted after the hold was released (the client went away)', async () => {
    const budget = new HeapBudget(4);
    const first = budget.hold();
    expect(first.take(4, 1000)).toBe(true);
    const late = budget.hold();
    const taken = late.take(2, 1000);
    late.release();
    first.release();
    expect(await taken).toBe(false);
    expect(budget.free).toBe(4);
  });

  it('holds an account (a key, an address) to its share across its bodies, but lets one body alone take more', async () => {
    const budget = new HeapBudget(100, 25);
    const alone = budget.hold(['key a', 'address 1']);
    expect(alone.growTo(60, 1000)).toBe(true); // its only body: more than the share
    expect(budget.heldBy('key a')).toBe(60);
    // A second body of that key (another address) waits, without holding back another key's bodies.
    const second = budget.hold(['key a', 'address 2']);
    const secondTaken = second.take(1, 1000);
    expect(secondTaken).toBeInstanceOf(Promise);
    expect(budget.hold(['key b', 'address 3']).take(25, 1000)).toBe(true);
    // Another key from the same address waits too: the address is at its share.
    const sameAddress = budget.hold(['key c', 'address 1']).take(1, 30);
    expect(await sameAddress).toBe(false);
    alone.release();
    expect(await secondTaken).toBe(true);
    expect(budget.heldBy('key a')).toBe(1);
    expect(budget.heldBy('address 1')).toBe(0);
  });

  it('refuses at once a body of an account past its share that already has one waiting: one waits, not a queue', async () => {
    const budget = new HeapBudget(100, 25);
    const first = budget.hold(['key a', 'address 1']);
    expect(first.growTo(60, 1000)).toBe(true);
    const second = budget.hold(['key a', 'address 1']).take(1, 1000);
    expect(second).toBeInstanceOf(Promise);
    // A third from the same key (or the same address) is refused without waiting.
    expect(budget.hold(['key a', 'address 2']).take(1, 1000)).toBe(false);
    expect(budget.hold(['key z', 'address 1']).take(1, 1000)).toBe(false);
    // Another client is not affected.
    expect(budget.hold(['key b', 'address 3']).take(10, 1000)).toBe(true);
    first.release();
    expect(await second).toBe(true);
  });

  it('lets the oldest body of a key grow past the share while the key\'s others wait, so that they cannot stall each other', async () => {
    const budget = new HeapBudget(100, 25);
    const older = budget.hold(['key a']);
    const younger = budget.hold(['key a']);
    expect(older.growTo(10, 1000)).toBe(true);
    expect(younger.growTo(15, 1000)).toBe(true);
    const youngerMore = younger.growTo(16, 1000);
    expect(youngerMore).toBeInstanceOf(Promise);
    expect(older.growTo(60, 1000)).toBe(true);
    expect(budget.heldBy('key a')).toBe(75); // the share plus one body
    older.release();
    expect(await youngerMore).toBe(true);
  });

  it('never lets one account hold more than the budget less one share, so that others always have one', async () => {
    const budget = new HeapBudget(100, 25);
    expect(budget.largest).toBe(75);
    const heavy = budget.hold(['key a', 'address 1']);
    expect(heavy.growTo(75, 1000)).toBe(true);
    expect(heavy.take(1, 1000)).toBe(false); // past what one body may hold: at once
    expect(budget.hold(['key b', 'address 2']).take(25, 1000)).toBe(true);
  });

  it('lets bodies of one key grow together up to the share only', async () => {
    const budget = new HeapBudget(100, 25);
    const a = budget.hold(['key a']);
    const b = budget.hold(['key a']);
    expect(a.growTo(20, 1000)).toBe(true);
    expect(b.growTo(5, 1000)).toBe(true);
    const more = b.growTo(6, 30);
    expect(await more).toBe(false);
    a.release();
    expect(b.growTo(25, 1000)).toBe(true);
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

describe('measureJsonText', () => {
  it('measures a text held as a string as measureJson measures its UTF-8 bytes, escapes and non-ASCII included', () => {
    const texts = [
      JSON.stringify({ a: [1, 2, { b: 'x,{[' }], c: 'quote \\" inside, \\\\', d: [], e: '\\\\\\"]}', f: [[{}]] }),
      JSON.stringify({ 'ké"y': ['é😀",[', { '\\': [null, true] }], z: '\\"' }),
      '{"open": "never closed, [',
      '[[[',
    ];
    for (const text of texts) expect(measureJsonText(text), text).toEqual(measureJson(Buffer.from(text), Number.POSITIVE_INFINITY));
  });
});

describe('JsonMeter', () => {
  it('measures a text fed in chunks of any size as measureJson measures it whole, escapes across chunks included', () => {
    const text = JSON.stringify({ a: [1, 2, { b: 'x,{[' }], c: 'quote \\" inside, \\\\', d: [], e: '\\\\\\"]}', f: [[{}]] });
    const bytes = Buffer.from(text);
    const whole = measureJson(bytes, 64);
    for (const size of [1, 2, 3, 5, 7]) {
      const meter = new JsonMeter(64);
      for (let i = 0; i < bytes.length; i += size) meter.write(bytes.subarray(i, i + size));
      expect(meter.shape(), `chunks of ${size}`).toEqual(whole);
    }
  });

  it('says to stop once past the depth bound', () => {
    const meter = new JsonMeter(64);
    expect(meter.write(Buffer.from('['.repeat(64)))).toBe(true);
    expect(meter.write(Buffer.from('[['))).toBe(false);
    expect(meter.shape().depth).toBe(65);
  });
});

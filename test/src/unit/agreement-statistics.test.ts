import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  agreementStatistics,
  krippendorffMetric,
  MAX_DISAGREEMENTS,
  MAX_RATIO_DISTINCT,
  REASONS,
  type AgreementLevel,
  type AgreementStatistics,
  type RatedItem,
} from '../../../server/src/domain/agreement-statistics.ts';

// Annotator agreement (contract 5.7): Krippendorff's alpha, Cohen's kappa per pair and the items
// that disagree most, checked against published worked examples and by properties.

const LEVELS: AgreementLevel[] = ['nominal', 'ordinal', 'interval', 'ratio'];

/** Items from one row of values per annotator, `undefined` where that annotator gave none. */
function fromRows(rows: Record<string, readonly unknown[]>): RatedItem[] {
  const length = Math.max(...Object.values(rows).map((row) => row.length));
  return Array.from({ length }, (_, u) => ({
    item_id: `item-${u + 1}`,
    call_id: `call-${u + 1}`,
    values: Object.fromEntries(Object.entries(rows).flatMap(([annotator, row]) => (row[u] === undefined ? [] : [[annotator, row[u]]]))),
  }));
}

/** Two annotators' values on the same items, from the cells of their contingency table. */
function fromTable(cells: Array<[a: unknown, b: unknown, count: number]>): RatedItem[] {
  const a = cells.flatMap(([x, , count]) => Array<unknown>(count).fill(x));
  const b = cells.flatMap(([, y, count]) => Array<unknown>(count).fill(y));
  return fromRows({ a, b });
}

const kappaOf = (items: RatedItem[], level: AgreementLevel) => agreementStatistics(items, level).pairs[0]!.kappa;
const ids = (result: AgreementStatistics) => result.disagreements.map((item) => item.item_id);

describe('Krippendorff (2011), "Computing Krippendorff\'s Alpha-Reliability": 4 observers × 12 units with missing values', () => {
  // The paper's example C reliability data; "." (missing) is undefined here.
  const _ = undefined;
  const items = fromRows({
    A: [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
    B: [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
    C: [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
    D: [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
  });

  it.each([
    ['nominal', 0.743],
    ['ordinal', 0.815],
    ['interval', 0.849],
    ['ratio', 0.797],
  ] as const)('alpha at the %s level is the published %f', (level, published) => {
    const result = agreementStatistics(items, level);
    expect(result.alpha).toBeCloseTo(published, 3);
    expect(result.reason).toBeNull();
  });

  it('counts 12 rated items, 11 pairable ones (unit 12 has a single value) and n = 40 pairable values', () => {
    const result = agreementStatistics(items, 'nominal');
    expect(result).toMatchObject({ annotators: ['A', 'B', 'C', 'D'], items_rated: 12, items_pairable: 11, values: 40 });
    // Σ_c o_cc over the units, m_u − 1 dividing each unit's identical ordered pairs:
    // 6/2 + 6/3 + 12/3 + 12/3 + 12/3 + 0 + 12/3 + 6/3 + 12/3 + 6/2 + 2/1 = 32, so 32/40.
    expect(result.observed_agreement).toBe(0.8);
  });

  it('lists the disagreeing units by their own disagreement under the level metric, then unit order', () => {
    // Nominal: unit 6 (1,2,3,4) disagrees entirely; units 2 and 8 (one value off out of four) tie.
    expect(ids(agreementStatistics(items, 'nominal'))).toEqual(['item-6', 'item-2', 'item-8']);
    // Ratio: 1 against 2 ((1/3)²) is farther apart than 2 against 3 ((1/5)²).
    expect(ids(agreementStatistics(items, 'ratio'))).toEqual(['item-6', 'item-8', 'item-2']);
    expect(agreementStatistics(items, 'nominal').disagreements[0]).toEqual({
      item_id: 'item-6',
      call_id: 'call-6',
      values: [
        { annotator_user_id: 'A', value: 1 },
        { annotator_user_id: 'B', value: 2 },
        { annotator_user_id: 'C', value: 3 },
        { annotator_user_id: 'D', value: 4 },
      ],
    });
  });

  it('reports every pair of observers with items in common, in annotator order', () => {
    const pairs = agreementStatistics(items, 'nominal').pairs;
    expect(pairs.map((pair) => `${pair.annotator_a}${pair.annotator_b}:${pair.items}`)).toEqual(['AB:9', 'AC:8', 'AD:9', 'BC:9', 'BD:10', 'CD:10']);
    // A and B differ only on unit 6.
    expect(pairs[0]!.agreement).toBeCloseTo(8 / 9, 15);
  });
});

describe("Cohen's kappa", () => {
  it('unweighted: the 50-item yes/no example of Wikipedia\'s "Cohen\'s kappa" article gives κ = 0.4', () => {
    const items = fromTable([
      ['yes', 'yes', 20],
      ['yes', 'no', 5],
      ['no', 'yes', 10],
      ['no', 'no', 15],
    ]);
    const [pair] = agreementStatistics(items, 'nominal').pairs;
    expect(pair).toMatchObject({ annotator_a: 'a', annotator_b: 'b', items: 50, agreement: 0.7 });
    expect(pair!.kappa).toBeCloseTo(0.4, 12);
  });

  it('quadratic-weighted on values: Maple EssayTools[QuadraticWeightedKappa] help examples 1 and 2', () => {
    // Published outputs 0.758620689655172 and 0.438095238095238; categories span min..max of the
    // scores, so weights are squared differences of the values (the interval level here).
    const a = [9, 7, 8, 7, 6, 8, 3, 5, 10];
    expect(kappaOf(fromRows({ a, b: [8, 8, 6, 6, 7, 6, 1, 4, 8] }), 'interval')).toBeCloseTo(0.758620689655172, 12);
    expect(kappaOf(fromRows({ a, b: [3, 5, 6, 6, 7, 6, 1, 4, 8] }), 'interval')).toBeCloseTo(0.438095238095238, 12);
  });

  it('quadratic-weighted on ranks: the weighting example of scikit-learn\'s test_cohen_kappa (0.9315 unweighted, 0.9541 quadratic)', () => {
    // y1 = 46×0, 44×1, 10×2 against y2 = 50×0, 40×1, 10×2, position by position.
    const items = fromTable([
      [0, 0, 46],
      [1, 0, 4],
      [1, 1, 40],
      [2, 2, 10],
    ]);
    expect(kappaOf(items, 'nominal')).toBeCloseTo(0.9315, 4);
    expect(kappaOf(items, 'ordinal')).toBeCloseTo(0.9541, 4);
    // Consecutive categories: ranks and values are one scale apart, so the interval level agrees.
    expect(kappaOf(items, 'interval')).toBeCloseTo(kappaOf(items, 'ordinal')!, 12);
  });

  it('is null when undefined: both annotators gave one and the same value throughout', () => {
    const items = fromRows({ a: [1, 1, 1], b: [1, 1, 1], c: [1, 2, 3] });
    const pairs = agreementStatistics(items, 'ordinal').pairs;
    expect(pairs.map((pair) => pair.kappa === null)).toEqual([true, false, false]);
    expect(pairs[0]!.agreement).toBe(1);
  });
});

describe('null with a reason', () => {
  it('no items, or fewer than two pairable items', () => {
    expect(agreementStatistics([], 'nominal')).toEqual({
      annotators: [],
      items_rated: 0,
      items_pairable: 0,
      values: 0,
      alpha: null,
      observed_agreement: null,
      pairs: [],
      disagreements: [],
      reason: REASONS.fewItems,
    });
    const one = agreementStatistics(fromRows({ a: ['x', 'y', undefined], b: ['z', undefined, 'y'] }), 'nominal');
    expect(one).toMatchObject({ annotators: ['a', 'b'], items_rated: 3, items_pairable: 1, values: 2, alpha: null, observed_agreement: null });
    expect(one.reason).toBe(REASONS.fewItems);
    expect(one.pairs).toEqual([{ annotator_a: 'a', annotator_b: 'b', items: 1, agreement: 0, kappa: 0 }]);
    expect(ids(one)).toEqual(['item-1']);
  });

  it('no variation at all', () => {
    const result = agreementStatistics(fromRows({ a: ['x', 'x', 'x'], b: ['x', 'x', undefined], c: [undefined, 'x', 'x'] }), 'nominal');
    expect(result).toMatchObject({ alpha: null, observed_agreement: null, reason: REASONS.noVariation, disagreements: [] });
    expect(result.pairs.every((pair) => pair.agreement === 1 && pair.kappa === null)).toBe(true);
  });

  it('objects or arrays: pairs still compare them as canonical JSON, disagreements by identity', () => {
    const result = agreementStatistics(
      fromRows({ a: [{ x: 1, y: 2 }, ['p'], 3], b: [{ y: 2, x: 1 }, ['q'], 3] }),
      'nominal',
    );
    expect(result).toMatchObject({ alpha: null, observed_agreement: null, reason: REASONS.notScalar });
    expect(result.pairs).toEqual([{ annotator_a: 'a', annotator_b: 'b', items: 3, agreement: 2 / 3, kappa: null }]);
    expect(ids(result)).toEqual(['item-2']);
    // Objects or arrays are named first even when other values are not numbers either.
    expect(agreementStatistics(fromRows({ a: ['x', [1], 2], b: ['y', [1], 3] }), 'interval').reason).toBe(REASONS.notScalar);
  });

  it('values the level cannot measure: non-numbers beyond nominal, negative numbers at the ratio level', () => {
    const words = fromRows({ a: ['low', 'high', 'low'], b: ['low', 'high', 'high'] });
    for (const level of ['ordinal', 'interval', 'ratio'] as const) {
      const result = agreementStatistics(words, level);
      expect(result).toMatchObject({ alpha: null, observed_agreement: null, reason: REASONS.notNumber(level) });
      expect(result.pairs[0]).toMatchObject({ agreement: 2 / 3, kappa: null });
      expect(ids(result)).toEqual(['item-3']);
    }
    expect(agreementStatistics(words, 'nominal').alpha).not.toBeNull();
    const negative = agreementStatistics(fromRows({ a: [-1, 2, 3], b: [-1, 2, 4] }), 'ratio');
    expect(negative.reason).toBe('Values at the ratio level must be non-negative numbers.');
    expect(agreementStatistics(fromRows({ a: [-1, 2, 3], b: [-1, 2, 4] }), 'interval').reason).toBeNull();
  });
});

describe('values', () => {
  it('tells 1 from "1" and true from "true", and takes null as a nominal category', () => {
    const result = agreementStatistics(fromRows({ a: [1, true, null, 'n'], b: ['1', 'true', null, 'n'] }), 'nominal');
    expect(result.pairs[0]!.agreement).toBe(0.5);
    expect(result.reason).toBeNull();
    expect(ids(result)).toEqual(['item-1', 'item-2']);
  });

  it(`lists at most ${MAX_DISAGREEMENTS} disagreements, the largest first, then in item order`, () => {
    // Items 1..25 disagree by |a − b| = 1, 2, 1, 2, …; item 26 agrees.
    const a = Array.from({ length: 26 }, () => 0);
    const b = Array.from({ length: 26 }, (_, u) => (u === 25 ? 0 : (u % 2) + 1));
    const result = agreementStatistics(fromRows({ a, b }), 'interval');
    expect(result.disagreements).toHaveLength(MAX_DISAGREEMENTS);
    const even = Array.from({ length: 12 }, (_, i) => `item-${2 * i + 2}`);
    const odd = Array.from({ length: 8 }, (_, i) => `item-${2 * i + 1}`);
    expect(ids(result)).toEqual([...even, ...odd]);
  });
});

describe('properties', () => {
  const annotatorIds = ['u1', 'u2', 'u3', 'u4'];
  const scalar = fc.integer({ min: 0, max: 4 });
  /** Items with up to four annotators, any of whom may have given no value. */
  const ratings = fc.array(fc.tuple(...annotatorIds.map(() => fc.option(scalar, { nil: undefined }))), { minLength: 0, maxLength: 30 });
  const toItems = (rows: Array<Array<number | undefined>>): RatedItem[] =>
    rows.map((row, u) => ({
      item_id: `item-${u}`,
      call_id: `call-${u}`,
      values: Object.fromEntries(row.flatMap((value, i) => (value === undefined ? [] : [[annotatorIds[i]!, value]]))),
    }));
  const level = fc.constantFrom(...LEVELS);

  /** Everything but the order of equally disagreeing items, with floats compared to 12 digits. */
  function expectSameStatistics(actual: AgreementStatistics, expected: AgreementStatistics) {
    const { alpha, observed_agreement, pairs, disagreements, ...counts } = expected;
    expect(actual).toMatchObject(counts);
    for (const [got, want] of [[actual.alpha, alpha], [actual.observed_agreement, observed_agreement]] as const) {
      if (want === null) expect(got).toBeNull();
      else expect(got).toBeCloseTo(want, 12);
    }
    expect(actual.pairs.length).toBe(pairs.length);
    actual.pairs.forEach((pair, i) => {
      expect(pair).toMatchObject({ annotator_a: pairs[i]!.annotator_a, annotator_b: pairs[i]!.annotator_b, items: pairs[i]!.items });
      expect(pair.agreement).toBeCloseTo(pairs[i]!.agreement, 12);
      if (pairs[i]!.kappa === null) expect(pair.kappa).toBeNull();
      else expect(pair.kappa).toBeCloseTo(pairs[i]!.kappa!, 12);
    });
    expect(actual.disagreements.length).toBe(disagreements.length);
  }

  it('perfect agreement gives alpha 1 when there is variation, and lists no disagreements', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(scalar, fc.integer({ min: 2, max: 4 })), { minLength: 2, maxLength: 20 }), level, (units, lvl) => {
        fc.pre(new Set(units.map(([value]) => value)).size >= 2);
        const items = toItems(units.map(([value, raters]) => annotatorIds.map((_, i) => (i < raters ? value : undefined))));
        const result = agreementStatistics(items, lvl);
        expect(result.alpha).toBeCloseTo(1, 12);
        expect(result.observed_agreement).toBe(1);
        expect(result.reason).toBeNull();
        expect(result.disagreements).toEqual([]);
        for (const pair of result.pairs) {
          expect(pair.agreement).toBe(1);
          if (pair.kappa !== null) expect(pair.kappa).toBeCloseTo(1, 12);
        }
      }),
    );
  });

  it('allows missing values: counts add up, alpha ≤ 1, shares lie in [0, 1]', () => {
    fc.assert(
      fc.property(ratings, level, (rows, lvl) => {
        const result = agreementStatistics(toItems(rows), lvl);
        const sizes = rows.map((row) => row.filter((value) => value !== undefined).length);
        expect(result.items_rated).toBe(sizes.filter((m) => m >= 1).length);
        expect(result.items_pairable).toBe(sizes.filter((m) => m >= 2).length);
        expect(result.values).toBe(sizes.filter((m) => m >= 2).reduce((a, b) => a + b, 0));
        expect((result.alpha === null) === (result.reason !== null)).toBe(true);
        if (result.alpha !== null) expect(result.alpha).toBeLessThanOrEqual(1 + 1e-12);
        if (result.observed_agreement !== null) expect(result.observed_agreement).toBeGreaterThanOrEqual(0);
        for (const pair of result.pairs) expect(pair.agreement).toBeGreaterThanOrEqual(0);
        expect(result.disagreements.length).toBeLessThanOrEqual(MAX_DISAGREEMENTS);
      }),
    );
  });

  it('permuting items changes nothing', () => {
    fc.assert(
      fc.property(ratings, level, fc.func(fc.integer()), (rows, lvl, key) => {
        const shuffled = rows.map((row, u) => ({ row, order: key(u) })).sort((a, b) => a.order - b.order).map(({ row }) => row);
        expectSameStatistics(agreementStatistics(toItems(shuffled), lvl), agreementStatistics(toItems(rows), lvl));
      }),
    );
  });

  it('permuting annotators (their order in the input, or which id gave which values) changes nothing but the pair names', () => {
    fc.assert(
      fc.property(ratings, level, fc.shuffledSubarray([0, 1, 2, 3], { minLength: 4, maxLength: 4 }), (rows, lvl, permutation) => {
        // Reordering the columns hands each id another annotator's values; alpha cannot tell.
        const permuted = agreementStatistics(toItems(rows.map((row) => permutation.map((i) => row[i]))), lvl);
        const original = agreementStatistics(toItems(rows), lvl);
        for (const [got, want] of [[permuted.alpha, original.alpha], [permuted.observed_agreement, original.observed_agreement]] as const) {
          if (want === null) expect(got).toBeNull();
          else expect(got).toBeCloseTo(want, 12);
        }
        expect(permuted.reason).toBe(original.reason);
        expect(permuted.pairs.map((pair) => pair.items).sort()).toEqual(original.pairs.map((pair) => pair.items).sort());
        // Reversing the insertion order of the ids within each item changes nothing at all.
        const reversed = toItems(rows).map((item) => ({ ...item, values: Object.fromEntries(Object.entries(item.values).reverse()) }));
        expect(agreementStatistics(reversed, lvl)).toEqual(original);
      }),
    );
  });

  it('ordinal results depend only on the order of the values, interval ones survive affine maps, ratio ones scaling', () => {
    const maps: Array<[AgreementLevel, (x: number) => number]> = [
      ['ordinal', (x) => x ** 3 + 10],
      ['interval', (x) => 2.5 * x - 7],
      ['ratio', (x) => 3 * x],
    ];
    fc.assert(
      fc.property(ratings, fc.constantFrom(...maps), (rows, [lvl, map]) => {
        const mapped = rows.map((row) => row.map((value) => (value === undefined ? undefined : map(value))));
        expectSameStatistics(agreementStatistics(toItems(mapped), lvl), agreementStatistics(toItems(rows), lvl));
      }),
    );
  });
});

describe("the expected disagreement's sums over sorted values", () => {
  /** Σ_c Σ_k n_c n_k δ²_ck over every pair of distinct values, with δ² as Krippendorff (2011) writes it. */
  function pairwiseExpected(level: AgreementLevel, xs: number[], ns: number[]): number {
    const delta = (c: number, k: number): number => {
      if (c === k) return 0;
      switch (level) {
        case 'nominal':
          return 1;
        case 'ordinal': {
          const [low, high] = c < k ? [c, k] : [k, c];
          let between = 0;
          for (let g = low; g <= high; g++) between += ns[g]!;
          return (between - (ns[c]! + ns[k]!) / 2) ** 2;
        }
        case 'interval':
          return (xs[c]! - xs[k]!) ** 2;
        case 'ratio':
          return ((xs[c]! - xs[k]!) / (xs[c]! + xs[k]!)) ** 2;
      }
    };
    let sum = 0;
    for (let c = 0; c < xs.length; c++) for (let k = 0; k < xs.length; k++) sum += ns[c]! * ns[k]! * delta(c, k);
    return sum;
  }

  it('equal the pairwise sum at every level, on random distinct values and counts', () => {
    const distinct = fc.uniqueArray(fc.double({ min: 0, max: 1e6, noNaN: true, noDefaultInfinity: true }), { minLength: 2, maxLength: 60 });
    fc.assert(
      fc.property(distinct, fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 60, maxLength: 60 }), fc.constantFrom(...LEVELS), (values, counts, level) => {
        const xs = [...values].sort((a, b) => a - b);
        const ns = counts.slice(0, xs.length);
        const want = pairwiseExpected(level, xs, ns);
        const got = krippendorffMetric(level, { values: xs, counts: ns }).expected;
        expect(Math.abs(got - want)).toBeLessThanOrEqual(1e-9 * Math.abs(want) + 1e-9);
      }),
    );
  });

  it(`ratio: past ${MAX_RATIO_DISTINCT.toLocaleString('en')} distinct values alpha is null with a reason; pairs and disagreements remain`, () => {
    const count = MAX_RATIO_DISTINCT + 1;
    const items = fromRows({ a: Array.from({ length: count }, (_, u) => u), b: Array.from({ length: count }, (_, u) => u + 0.5) });
    const result = agreementStatistics(items, 'ratio');
    expect(result).toMatchObject({ alpha: null, observed_agreement: null, items_pairable: count, values: 2 * count });
    expect(result.reason).toBe(REASONS.tooManyDistinct(2 * count));
    expect(result.reason).toBe('The ratio level computes alpha over at most 10,000 distinct values; these are 20,002.');
    expect(result.pairs[0]!.kappa).toEqual(expect.any(Number));
    expect(result.disagreements).toHaveLength(MAX_DISAGREEMENTS);
    // One value fewer is computed.
    const fewer = fromRows({ a: Array.from({ length: MAX_RATIO_DISTINCT / 2 }, (_, u) => u), b: Array.from({ length: MAX_RATIO_DISTINCT / 2 }, (_, u) => u + 0.5) });
    expect(agreementStatistics(fewer, 'ratio').alpha).toEqual(expect.any(Number));
  });
});

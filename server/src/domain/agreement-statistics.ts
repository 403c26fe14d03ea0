import canonicalize from 'canonicalize';

// Agreement between annotators on one annotation spec (contract 5.7), as pure arithmetic over the
// values they gave: Krippendorff's alpha over all annotators, Cohen's kappa for each pair, and the
// items that disagree most. The npm package for alpha (krippendorff 0.1.0) has the nominal level
// only and no kappa, so the formulas are written out here, each next to the source it follows.

export type AgreementLevel = 'nominal' | 'ordinal' | 'interval' | 'ratio';

export interface RatedItem {
  item_id: string;
  call_id: string;
  /**
   * Annotator user id → that annotator's value; an absent key or `undefined` is no value. Scalars
   * are strings, finite numbers, booleans and null (a category of its own at the nominal level).
   */
  values: Readonly<Record<string, unknown>>;
}

export interface AnnotatorValue {
  annotator_user_id: string;
  value: unknown;
}

export interface PairAgreement {
  annotator_a: string;
  annotator_b: string;
  /** Items both annotators gave a value to. */
  items: number;
  /** Share of those items on which their values are identical. */
  agreement: number;
  kappa: number | null;
}

export interface ItemDisagreement {
  item_id: string;
  call_id: string;
  values: AnnotatorValue[];
}

export interface AgreementStatistics {
  annotators: string[];
  items_rated: number;
  items_pairable: number;
  values: number;
  alpha: number | null;
  observed_agreement: number | null;
  pairs: PairAgreement[];
  disagreements: ItemDisagreement[];
  reason: string | null;
}

export const MAX_DISAGREEMENTS = 20;

export const REASONS = {
  fewItems: 'Fewer than two items have values from at least two annotators.',
  notScalar: 'Some values are objects or arrays, not scalars.',
  notNumber: (level: AgreementLevel) =>
    level === 'ratio' ? 'Values at the ratio level must be non-negative numbers.' : `Values at the ${level} level must be numbers.`,
  noVariation: 'All values are the same, so agreement beyond chance is undefined.',
  tooManyDistinct: (distinct: number) =>
    `The ratio level computes alpha over at most ${MAX_RATIO_DISTINCT.toLocaleString('en')} distinct values; these are ${distinct.toLocaleString('en')}.`,
} as const;

/**
 * The ratio level's expected disagreement is a sum over pairs of distinct values (its difference
 * function has no closed form over sorted sums, unlike the other levels): past this many distinct
 * values alpha is null with a reason, which bounds that sum's CPU. Pairs, kappa and the listed
 * disagreements do not depend on it.
 */
export const MAX_RATIO_DISTINCT = 10_000;

/** One annotator's value within an item; `index` points into the distinct values of the data. */
interface Entry {
  annotator: string;
  /** The annotator's position in code-point order of all annotators' ids. */
  rank: number;
  value: unknown;
  key: string;
  index: number;
}

export interface Metric {
  /** δ²_ck between two distinct values, given by their indices. */
  delta: (c: number, k: number) => number;
  /** Σ_c Σ_k n_c n_k δ²_ck over the distinct values, D_e's numerator. */
  expected: number;
}

const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

const isScalar = (value: unknown) =>
  value === null || typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));

/** Whether the level's difference function applies to the value. */
function fitsLevel(value: unknown, level: AgreementLevel): boolean {
  if (level === 'nominal') return isScalar(value);
  if (typeof value !== 'number' || !Number.isFinite(value)) return false;
  return level !== 'ratio' || value >= 0;
}

/**
 * `items` in item order, each with the values its annotators gave. Numbers are not rounded;
 * annotators are in code-point order of their ids and pairs follow that order. Linear in the
 * number of values, bar the distinct values' sort (and the ratio level's sum over pairs of them, bounded by MAX_RATIO_DISTINCT).
 */
export function agreementStatistics(items: readonly RatedItem[], level: AgreementLevel): AgreementStatistics {
  const annotators = annotatorsOf(items);
  const rank = new Map(annotators.map((annotator, r) => [annotator, r]));
  const keyOf = canonicalKeys();
  const rated: Unit[] = [];
  for (const item of items) {
    const entries: Entry[] = [];
    for (const annotator of Object.keys(item.values)) {
      const value = item.values[annotator];
      if (value !== undefined) entries.push({ annotator, rank: rank.get(annotator)!, value, key: keyOf(value), index: -1 });
    }
    if (!entries.length) continue;
    // Insertion sort: an item has a handful of values, for which Array#sort is far slower.
    for (let i = 1; i < entries.length; i++) {
      const entry = entries[i]!;
      let j = i;
      for (; j > 0 && entries[j - 1]!.rank > entry.rank; j--) entries[j] = entries[j - 1]!;
      entries[j] = entry;
    }
    rated.push({ item, entries });
  }
  const pairable = rated.filter((unit) => unit.entries.length >= 2);
  const values: Entry[] = [];
  for (const unit of pairable) for (const entry of unit.entries) values.push(entry);

  // Values the level cannot measure fall back to identity, so disagreements can still be listed.
  const unfit = values.some((entry) => !fitsLevel(entry.value, level));
  const metricLevel: AgreementLevel = unfit ? 'nominal' : level;
  const distinct = distinctValues(values, metricLevel !== 'nominal');
  const tooMany = metricLevel === 'ratio' && distinct.values.length > MAX_RATIO_DISTINCT;
  const metric = krippendorffMetric(metricLevel, distinct, !tooMany);

  const reason =
    pairable.length < 2 ? REASONS.fewItems
    : values.some((entry) => !isScalar(entry.value)) ? REASONS.notScalar
    : unfit ? REASONS.notNumber(level)
    : distinct.values.length < 2 ? REASONS.noVariation
    : tooMany ? REASONS.tooManyDistinct(distinct.values.length)
    : null;
  const units = pairable.map((unit) => unit.entries.map((entry) => entry.index));
  const coefficients = reason === null ? krippendorffAlpha(units, distinct.counts, metric) : null;

  return {
    annotators,
    items_rated: rated.length,
    items_pairable: pairable.length,
    values: values.length,
    alpha: coefficients?.alpha ?? null,
    observed_agreement: coefficients?.observedAgreement ?? null,
    pairs: pairAgreements(annotators, pairable, level),
    disagreements: mostDisagreeing(units, metric.delta).map((order) => {
      const unit = pairable[order]!;
      return {
        item_id: unit.item.item_id,
        call_id: unit.item.call_id,
        values: unit.entries.map((entry) => ({ annotator_user_id: entry.annotator, value: entry.value })),
      };
    }),
    reason,
  };
}

interface Unit {
  item: RatedItem;
  /** In annotator order. */
  entries: Entry[];
}

/** Every annotator with a value anywhere, in code-point order of their ids. */
function annotatorsOf(items: readonly RatedItem[]): string[] {
  const seen = new Set<string>();
  for (const item of items) for (const annotator of Object.keys(item.values)) if (item.values[annotator] !== undefined) seen.add(annotator);
  return [...seen].sort(byCodePoint);
}

/**
 * The canonical JSON of a value (values are equal when their keys are), remembered for scalars:
 * a queue's values are mostly a few scalars repeated many times.
 */
function canonicalKeys(): (value: unknown) => string {
  const scalars = new Map<unknown, string>();
  return (value) => {
    if (value !== null && typeof value === 'object') return canonicalize(value) ?? 'undefined';
    let key = scalars.get(value);
    if (key === undefined) scalars.set(value, (key = canonicalize(value) ?? 'undefined'));
    return key;
  };
}

/**
 * Positions (in `units`) of at most MAX_DISAGREEMENTS units with a disagreement above 0, most
 * disagreeing first, ties in unit order: a bounded insertion instead of sorting every unit.
 */
function mostDisagreeing(units: number[][], delta: Metric['delta']): number[] {
  const top: Array<{ order: number; disagreement: number }> = [];
  for (let order = 0; order < units.length; order++) {
    const disagreement = unitDisagreement(units[order]!, delta);
    if (!(disagreement > 0)) continue;
    if (top.length === MAX_DISAGREEMENTS && disagreement <= top[top.length - 1]!.disagreement) continue;
    // After every kept unit of greater or equal disagreement: equal ones came earlier in unit order.
    let at = top.length;
    while (at > 0 && top[at - 1]!.disagreement < disagreement) at--;
    top.splice(at, 0, { order, disagreement });
    if (top.length > MAX_DISAGREEMENTS) top.pop();
  }
  return top.map((kept) => kept.order);
}

export interface Distinct {
  /** The distinct values, numbers in ascending order, otherwise in order of their canonical JSON. */
  values: unknown[];
  /** n_c: how often each distinct value occurs. */
  counts: number[];
}

/** Sets each entry's `index` to its value's position among the distinct values. */
function distinctValues(entries: Entry[], numeric: boolean): Distinct {
  const byKey = new Map<string, unknown>();
  for (const entry of entries) byKey.set(entry.key, entry.value);
  const keys = [...byKey.keys()].sort(numeric ? (a, b) => (byKey.get(a) as number) - (byKey.get(b) as number) : byCodePoint);
  const position = new Map(keys.map((key, i) => [key, i]));
  const counts = keys.map(() => 0);
  for (const entry of entries) {
    entry.index = position.get(entry.key)!;
    counts[entry.index]!++;
  }
  return { values: keys.map((key) => byKey.get(key)), counts };
}

/**
 * The difference functions δ²_ck of Krippendorff (2011), "Computing Krippendorff's Alpha-
 * Reliability", section on metric differences, with Σ_c Σ_k n_c n_k δ²_ck in closed form where
 * one exists (distinct values can be as many as the values, so the double sum is a last resort,
 * taken only with `sumRatioPairs`, below MAX_RATIO_DISTINCT). Exported for its tests.
 */
export function krippendorffMetric(level: AgreementLevel, distinct: Distinct, sumRatioPairs = true): Metric {
  const { counts } = distinct;
  const number = (i: number) => distinct.values[i] as number;
  switch (level) {
    case 'nominal': {
      // δ² = 0 when c = k, else 1: Σ_{c≠k} n_c n_k = n² − Σ_c n_c².
      const n = sum(counts);
      return { delta: (c, k) => (c === k ? 0 : 1), expected: n * n - sum(counts.map((count) => count * count)) };
    }
    case 'ordinal': {
      // δ² = (Σ_{g=c..k} n_g − (n_c + n_k)/2)² with the values in rank order and n_g their
      // marginals. With the mid-rank r_c = n_0 + … + n_{c−1} + n_c/2 the bracket is r_k − r_c, so
      // the ordinal metric is the interval one over mid-ranks.
      const midRanks: number[] = [];
      let below = 0;
      for (const count of counts) {
        midRanks.push(below + count / 2);
        below += count;
      }
      return squaredDifferences(midRanks, counts);
    }
    case 'interval':
      // δ² = (c − k)²
      return squaredDifferences(distinct.values as number[], counts);
    case 'ratio': {
      // δ² = ((c − k)/(c + k))²; values are non-negative, so c + k is 0 only when c = k = 0.
      // No closed form: the double sum over distinct values, in a tight loop.
      const delta = (c: number, k: number) => (c === k ? 0 : ((number(c) - number(k)) / (number(c) + number(k))) ** 2);
      if (!sumRatioPairs) return { delta, expected: Number.NaN };
      const xs = Float64Array.from(distinct.values as number[]);
      const ns = Float64Array.from(counts);
      let expected = 0;
      for (let c = 0; c < xs.length; c++) {
        let row = 0;
        for (let k = c + 1; k < xs.length; k++) row += ns[k]! * ((xs[c]! - xs[k]!) / (xs[c]! + xs[k]!)) ** 2;
        expected += 2 * ns[c]! * row;
      }
      return { delta, expected };
    }
  }
}

/**
 * δ²_ck = (x_c − x_k)², for which Σ_c Σ_k n_c n_k (x_c − x_k)² = 2n Σ_c n_c (x_c − x̄)², x̄ the
 * mean of the values (the pairwise form of the variance), taken about the mean to keep precision.
 */
function squaredDifferences(positions: number[], counts: number[]): Metric {
  const n = sum(counts);
  const mean = sum(positions.map((x, c) => counts[c]! * x)) / n;
  return {
    delta: (c, k) => (positions[c]! - positions[k]!) ** 2,
    expected: 2 * n * sum(positions.map((x, c) => counts[c]! * (x - mean) ** 2)),
  };
}

const sum = (terms: number[]) => terms.reduce((a, b) => a + b, 0);

/**
 * Krippendorff (2011): the coincidence matrix counts each ordered pair of values within unit u
 * with weight 1/(m_u − 1), o_ck = Σ_u (number of c–k pairs in u)/(m_u − 1); its margins are
 * n_c = Σ_k o_ck (how often c occurs among pairable values) and n = Σ_c n_c. Then
 *   D_o = (1/n) Σ_c Σ_k o_ck δ²_ck,   D_e = 1/(n(n − 1)) Σ_c Σ_k n_c n_k δ²_ck,   α = 1 − D_o/D_e,
 * and the observed agreement is Σ_c o_cc / n (= 1 − D_o with the nominal metric). The sums over
 * o_ck are taken unit by unit, without building the matrix.
 */
function krippendorffAlpha(units: number[][], counts: number[], metric: Metric): { alpha: number; observedAgreement: number } {
  const n = sum(counts);
  let observed = 0; // Σ_c Σ_k o_ck δ²_ck
  let matching = 0; // Σ_c o_cc
  for (const unit of units) {
    let differences = 0;
    let same = 0;
    for (let i = 0; i < unit.length; i++) {
      for (let j = i + 1; j < unit.length; j++) {
        differences += metric.delta(unit[i]!, unit[j]!);
        if (unit[i] === unit[j]) same++;
      }
    }
    // Each unordered pair stands for the two ordered pairs (c, k) and (k, c).
    observed += (2 * differences) / (unit.length - 1);
    matching += (2 * same) / (unit.length - 1);
  }
  return { alpha: 1 - ((n - 1) * observed) / metric.expected, observedAgreement: matching / n };
}

/** An item's own D_o: the mean δ² over the ordered pairs of its values (Krippendorff's D_o over that unit alone). */
function unitDisagreement(unit: number[], delta: Metric['delta']): number {
  // Sorted, so that items holding the same values give bit-identical sums.
  const sorted = sortedIndices(unit);
  let sum = 0;
  for (let i = 0; i < sorted.length; i++) for (let j = i + 1; j < sorted.length; j++) sum += delta(sorted[i]!, sorted[j]!);
  return (2 * sum) / (sorted.length * (sorted.length - 1));
}

/** A sorted copy of a unit's value indices (insertion sort: a unit holds a handful). */
function sortedIndices(unit: number[]): number[] {
  const sorted = unit.slice();
  for (let i = 1; i < sorted.length; i++) {
    const index = sorted[i]!;
    let j = i;
    for (; j > 0 && sorted[j - 1]! > index; j--) sorted[j] = sorted[j - 1]!;
    sorted[j] = index;
  }
  return sorted;
}

function pairAgreements(annotators: string[], pairable: Unit[], level: AgreementLevel): PairAgreement[] {
  // Entries are in annotator order, so each unit adds its (a, b) pairs with a before b; a pair's
  // values are kept in two parallel lists under the number a·A + b.
  const count = annotators.length;
  const common = new Map<number, { xs: Entry[]; ys: Entry[] }>();
  for (const { entries } of pairable) {
    for (let i = 0; i < entries.length; i++) {
      for (let j = i + 1; j < entries.length; j++) {
        const key = entries[i]!.rank * count + entries[j]!.rank;
        let lists = common.get(key);
        if (!lists) common.set(key, (lists = { xs: [], ys: [] }));
        lists.xs.push(entries[i]!);
        lists.ys.push(entries[j]!);
      }
    }
  }
  const pairs: PairAgreement[] = [];
  for (let a = 0; a < count; a++) {
    for (let b = a + 1; b < count; b++) {
      const lists = common.get(a * count + b);
      if (!lists) continue;
      const { xs, ys } = lists;
      let fits = true;
      let same = 0;
      for (let u = 0; u < xs.length; u++) {
        if (fits && !(fitsLevel(xs[u]!.value, level) && fitsLevel(ys[u]!.value, level))) fits = false;
        if (xs[u]!.key === ys[u]!.key) same++;
      }
      pairs.push({
        annotator_a: annotators[a]!,
        annotator_b: annotators[b]!,
        items: xs.length,
        agreement: same / xs.length,
        kappa: fits ? cohenKappa(xs, ys, level) : null,
      });
    }
  }
  return pairs;
}

/**
 * Cohen's kappa in the disagreement-weight form of Cohen (1968), "Weighted kappa":
 *   κ_w = 1 − Σ_ij v_ij p_o,ij / Σ_ij v_ij p_e,ij,   p_e,ij = p_i. p_.j,
 * which with v_ij = 0 on the diagonal and 1 elsewhere is Cohen's (1960) κ = (p_o − p_e)/(1 − p_e).
 * Beyond the nominal level the weights are quadratic (Fleiss & Cohen 1973), v_ij = (x_i − x_j)²,
 * where x is the value itself at the interval and ratio levels, and at the ordinal level its rank
 * among the distinct values the two annotators gave (the categories of their table). The usual
 * normalisation by (k − 1)² cancels out of the ratio. Values fit the level (see `fitsLevel`).
 * Null when the denominator is 0, which happens exactly when both annotators gave one and the
 * same value throughout. `xs[u]` and `ys[u]` are the two annotators' values on their u-th item.
 */
function cohenKappa(xs: Entry[], ys: Entry[], level: AgreementLevel): number | null {
  const categories = new Map<string, unknown>();
  for (let u = 0; u < xs.length; u++) categories.set(xs[u]!.key, xs[u]!.value).set(ys[u]!.key, ys[u]!.value);
  if (categories.size === 1) return null;
  const items = xs.length;
  // Both sums are over items: N Σ v_ij p_o,ij = Σ_u v(x_u, y_u) and N² Σ v_ij p_e,ij = Σ_u Σ_w v(x_u, y_w).
  if (level === 'nominal') {
    const columns = new Map<string, number>();
    for (const y of ys) columns.set(y.key, (columns.get(y.key) ?? 0) + 1);
    let observed = 0;
    let matching = 0;
    for (let u = 0; u < items; u++) {
      if (xs[u]!.key !== ys[u]!.key) observed++;
      matching += columns.get(xs[u]!.key) ?? 0;
    }
    return 1 - (items * observed) / (items * items - matching);
  }
  const number = (key: string) => categories.get(key) as number;
  const ranks = level === 'ordinal' ? new Map([...categories.keys()].sort((a, b) => number(a) - number(b)).map((key, r) => [key, r])) : null;
  const position = (entry: Entry) => (ranks ? ranks.get(entry.key)! : (entry.value as number));
  // Sums taken in item order, as a left fold from 0.
  let observed = 0;
  let sumX = 0;
  let sumY = 0;
  const px = new Float64Array(items);
  const py = new Float64Array(items);
  for (let u = 0; u < items; u++) {
    const x = (px[u] = position(xs[u]!));
    const y = (py[u] = position(ys[u]!));
    observed += (x - y) ** 2;
    sumX += x;
    sumY += y;
  }
  // Σ_u Σ_w (x_u − y_w)² = N Σ x'² + N Σ y'² − 2 Σ x' Σ y', with x' = x − m and y' = y − m taken
  // about the mean m of all 2N positions to keep precision.
  const mean = (sumX + sumY) / (2 * items);
  let squaresX = 0;
  let squaresY = 0;
  let deviationsX = 0;
  let deviationsY = 0;
  for (let u = 0; u < items; u++) {
    const dx = px[u]! - mean;
    const dy = py[u]! - mean;
    squaresX += dx * dx;
    squaresY += dy * dy;
    deviationsX += dx;
    deviationsY += dy;
  }
  const expected = items * squaresX + items * squaresY - 2 * deviationsX * deviationsY;
  return 1 - (items * observed) / expected;
}

import { describe, expect, it } from 'vitest';
import { linearRegExp, linearRegExpEngine, PatternError } from '../../../server/src/domain/json-schema-patterns.ts';
import { compileFieldSchema, fieldSchemaCache, schemaProblem } from '../../../server/src/domain/json-schema.ts';

// Field schemas (annotation specs) are compiled per spec, run patterns on RE2, and live in a
// bounded LRU cache (the API tests cover what a client sees).

describe('the compiled field schema cache', () => {
  it('keeps at most its number of entries, evicting the least recently used', () => {
    const cache = fieldSchemaCache(2, 1024 * 1024);
    const first = compileFieldSchema({ type: 'integer' }, 'p/a:1', cache);
    compileFieldSchema({ type: 'string' }, 'p/b:1', cache);
    expect(compileFieldSchema({ type: 'integer' }, 'p/a:1', cache)).toBe(first); // a hit, and now the most recent
    compileFieldSchema({ type: 'boolean' }, 'p/c:1', cache);
    expect([...cache.keys()].sort()).toEqual(['p/a:1', 'p/c:1']);
    // An evicted spec compiles again (from the schema its caller read from storage).
    const again = compileFieldSchema({ type: 'string' }, 'p/b:1', cache);
    expect(schemaProblem(again, 'x')).toBeNull();
    expect(schemaProblem(again, 1)).toBe('(value) must be string');
    expect(cache.size).toBe(2);
  });

  it('keeps at most its total of schema bytes', () => {
    const cache = fieldSchemaCache(1000, 100);
    const schema = (n: number) => ({ type: 'string', enum: [String(n).padStart(21, '0')] }); // 50 bytes of JSON
    for (let n = 0; n < 10; n++) compileFieldSchema(schema(n), `p/s:${n}`, cache);
    expect(cache.calculatedSize).toBe(100);
    expect([...cache.keys()].sort()).toEqual(['p/s:8', 'p/s:9']);
  });

  it('compiles two schemas with the same $id side by side, each by its own rules', () => {
    const cache = fieldSchemaCache();
    const a = compileFieldSchema({ $id: 'https://x.example/s', type: 'integer' }, 'a/x:1', cache);
    const b = compileFieldSchema({ $id: 'https://x.example/s', type: 'string' }, 'b/x:1', cache);
    expect([schemaProblem(a, 1), schemaProblem(b, 'x')]).toEqual([null, null]);
    expect([schemaProblem(a, 'x'), schemaProblem(b, 1)]).toEqual(['(value) must be integer', '(value) must be string']);
  });
});

describe('patterns', () => {
  it('run in linear time: /^(a+)+$/ on forty "a" and a "!" answers in well under 100 ms', () => {
    const regExp = linearRegExp('^(a+)+$');
    const started = performance.now();
    expect(regExp.test(`${'a'.repeat(40)}!`)).toBe(false);
    expect(regExp.test('a'.repeat(100_000))).toBe(true);
    expect(performance.now() - started).toBeLessThan(100);
  });

  it('keep ECMAScript meaning: unanchored, \\u escapes, named groups, [^]', () => {
    expect(linearRegExp('b+').test('abbc')).toBe(true);
    expect(linearRegExp('^\\u00e9\\u{1F600}$').test('é😀')).toBe(true);
    expect(linearRegExp('^(?<year>\\d{4})-\\d{2}$').test('2024-05')).toBe(true);
    expect(linearRegExp('^[^]$').test('\n')).toBe(true);
    expect(linearRegExp('^.$').test('😀')).toBe(true);
  });

  it('refuse lookaround, backreferences and what is not ECMAScript, naming the pattern', () => {
    for (const pattern of ['(?=a)', '(?!a)', '(?<=a)b', '(?<!a)b', '(a)\\1', '(?<n>a)\\k<n>', '(', 'a{2,1}']) {
      expect(() => linearRegExp(pattern), pattern).toThrow(PatternError);
      expect(() => linearRegExp(pattern), pattern).toThrow(`pattern ${JSON.stringify(pattern)}`);
    }
    // An escaped backslash before "k" is no backreference.
    expect(linearRegExp('\\\\k<n>').test('\\k<n>')).toBe(true);
  });

  it('are at most so many distinct ones per compile', () => {
    const engine = linearRegExpEngine(2);
    engine('a', 'u');
    engine('a', 'u');
    engine('b', 'u');
    expect(() => engine('c', 'u')).toThrow('has more than 2 distinct patterns');
  });
});

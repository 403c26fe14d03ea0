import { describe, expect, it } from 'vitest';
import { sql, Statement } from '../../../server/src/db/statement.ts';

describe('the sql template', () => {
  it('binds every value as a parameter, numbered per dialect', () => {
    const statement = sql`select id from items where queue_id = ${'q1'} and state = ${'done'} limit ${10}`;
    expect(statement.text('sqlite')).toBe('select id from items where queue_id = ? and state = ? limit ?');
    expect(statement.text('postgresql')).toBe('select id from items where queue_id = $1 and state = $2 limit $3');
    expect(statement.params).toEqual(['q1', 'done', 10]);
  });

  it('leaves a ? in a literal and the jsonb ?| operator as written: the text is never scanned', () => {
    const statement = sql`select '?' as mark, payload ?| array['a'] as any_key from feedback where id = ${'f1'}`;
    expect(statement.text('postgresql')).toBe(`select '?' as mark, payload ?| array['a'] as any_key from feedback where id = $1`);
    expect(statement.params).toEqual(['f1']);
  });

  it('a value that looks like SQL is a parameter, not text', () => {
    const statement = sql`select * from users where username = ${"x' or '1'='1"}`;
    expect(statement.text('postgresql')).toBe('select * from users where username = $1');
    expect(statement.params).toEqual(["x' or '1'='1"]);
  });

  it('makes the text of a call site once', () => {
    const at = (id: string) => sql`select 1 from calls where id = ${id}`;
    const [a, b] = [at('a'), at('b')];
    expect(a.parts).toBe(b.parts);
    expect(a.text('postgresql')).toBe(b.text('postgresql'));
    expect(b.params).toEqual(['b']);
  });

  it('composes statements, lists and joins, numbering on across them', () => {
    const conditions = [sql`project_id = ${'acme/bot'}`, sql`id in (${sql.list(['c1', 'c2', 'c3'])})`, sql`op_name = ${'chat'}`];
    const statement = sql`select id from calls where ${sql.join(conditions, ' and ')} order by ${sql.raw('started_at')} limit ${5}`;
    expect(statement.text('sqlite')).toBe('select id from calls where project_id = ? and id in (?, ?, ?) and op_name = ? order by started_at limit ?');
    expect(statement.text('postgresql')).toBe('select id from calls where project_id = $1 and id in ($2, $3, $4) and op_name = $5 order by started_at limit $6');
    expect(statement.params).toEqual(['acme/bot', 'c1', 'c2', 'c3', 'chat', 5]);
    expect(statement).toBeInstanceOf(Statement);
  });

  it('refuses an empty list and an empty join rather than writing invalid SQL', () => {
    expect(() => sql.list([])).toThrow(/at least one/);
    expect(() => sql.join([], ' and ')).toThrow(/at least one/);
  });

  it('writes rows of values for a multi-row VALUES, and refuses a partial row', () => {
    const statement = sql.rows(['a', 1, 'b', 2], 2, { before: 'insert into t (x, y) values ', after: ' returning x' });
    expect(statement.text('sqlite')).toBe('insert into t (x, y) values (?, ?), (?, ?) returning x');
    expect(statement.text('postgresql')).toBe('insert into t (x, y) values ($1, $2), ($3, $4) returning x');
    expect(statement.params).toEqual(['a', 1, 'b', 2]);
    expect(sql`with v (x) as (${sql.rows([null], 1, { before: 'values ' })}) select x from v`.text('sqlite')).toBe('with v (x) as (values (?)) select x from v');
    expect(() => sql.rows(['a', 1, 'b'], 2)).toThrow(/whole rows/);
    expect(() => sql.rows([], 2)).toThrow(/whole rows/);
  });

  it('composes statements nested several deep, raw text and empty statements among them', () => {
    const size = (column: string) => sql`coalesce(octet_length(${sql`${sql.raw(column)}`}), 0)`;
    const lock = sql``;
    const statement = sql`select ${sql.join([size('a'), size('b')], ' + ')} as bytes from t where (${sql.raw('x, y')}) > (${sql.list([1, 2])}) and z = ${'z'}${lock}`;
    expect(statement.text('postgresql')).toBe('select coalesce(octet_length(a), 0) + coalesce(octet_length(b), 0) as bytes from t where (x, y) > ($1, $2) and z = $3');
    expect(statement.params).toEqual([1, 2, 'z']);
  });

  it('refuses to become text in a plain template string, where its parameters would be lost', () => {
    const condition = sql`id = ${'c1'}`;
    expect(() => `select id from calls where ${condition as unknown as string}`).toThrow(/sql`/);
  });
});

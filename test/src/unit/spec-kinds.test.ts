import { describe, expect, it } from 'vitest';
import { checkValue, fieldKind, optionTitles, type JsonValue } from '../../../clients/web/src/annotate/rubric-fields.ts';
import { emptyDraft, schemaOf, type Draft } from '../../../clients/web/src/project/spec-kinds.ts';
import { compileFieldSchema, schemaProblem } from '../../../server/src/domain/json-schema.ts';

// The rubric builder's kinds: each draft's schema compiles on the server (strict Ajv), and the
// annotate page reads it back as the field it was built as, with the same verdict on values.

const draft = (changes: Partial<Draft>): Draft => ({ ...emptyDraft(), ...changes });
const built = (changes: Partial<Draft>) => {
  const result = schemaOf(draft(changes));
  if (!('schema' in result)) throw new Error(result.problem.reason);
  return result.schema;
};

describe('kinds of field and their schemas', () => {
  it.each([
    ['a scale with words for both ends', { minLabel: 'Not at all', maxLabel: 'Completely' }, 'scale', [1, 5], [0, 6, 2.5]],
    ['a scale with words for one end', { min: '0', max: '1', maxLabel: 'Yes' }, 'scale', [0, 1], [2]],
    ['a scale without words', { min: '-2', max: '2' }, 'scale', [-2, 0, 2], [3]],
    ['yes or no', { kind: 'boolean' }, 'boolean', [true, false], ['yes']],
    ['one of a list', { kind: 'choice', options: 'good\n bad \n\n' }, 'choice', ['good', 'bad'], ['ok']],
    ['several of a list', { kind: 'multi', options: 'a\nb\nc' }, 'multi', [[], ['a', 'c']], [['a', 'a'], ['d'], 'a']],
    ['free text', { kind: 'text', maxLength: '3' }, 'text', ['abc'], ['abcd']],
    ['a number', { kind: 'number', min: '0.5', max: '' }, 'number', [0.5, 7.25], [0.4]],
    ['a whole number', { kind: 'number', integer: true, min: '0', max: '1000' }, 'number', [0, 1000], [1.5, 1001]],
  ] as const)('%s: compiles on the server and reads back as that field, which takes and refuses the same values', (_, changes, kind, taken, refused) => {
    const schema = built(changes as Partial<Draft>);
    const validate = compileFieldSchema(schema);
    expect(fieldKind(schema).kind).toBe(kind);
    for (const value of taken as readonly unknown[] as JsonValue[]) expect([schemaProblem(validate, value), checkValue(schema, value)]).toEqual([null, null]);
    for (const value of refused as readonly unknown[] as JsonValue[]) {
      expect(schemaProblem(validate, value)).not.toBeNull();
      expect(checkValue(schema, value)).not.toBeNull();
    }
  });

  it('names the ends of a scale, and only them', () => {
    const schema = built({ min: '1', max: '5', minLabel: ' Poor ', maxLabel: 'Great' });
    expect([...optionTitles(schema)]).toEqual([
      ['1', 'Poor'],
      ['5', 'Great'],
    ]);
    expect(fieldKind(schema)).toMatchObject({ kind: 'scale', options: [1, 2, 3, 4, 5] });
  });

  it.each([
    [{ min: 'one' }, 'min'],
    [{ max: '1' }, 'max'],
    [{ min: '1', max: '12' }, 'max'],
    [{ kind: 'choice', options: 'only' }, 'options'],
    [{ kind: 'multi', options: 'a\nb\na' }, 'options'],
    [{ kind: 'text', maxLength: '0' }, 'maxLength'],
    [{ kind: 'number', integer: true, min: '0.5' }, 'min'],
    [{ kind: 'number', min: '5', max: '1' }, 'max'],
    [{ kind: 'json', schema: '{"type": ' }, 'schema'],
    [{ kind: 'json', schema: '[1]' }, 'schema'],
  ] as const)('refuses %j at %s', (changes, field) => {
    const result = schemaOf(draft(changes as Partial<Draft>));
    expect('problem' in result && result.problem.field).toBe(field);
  });
});

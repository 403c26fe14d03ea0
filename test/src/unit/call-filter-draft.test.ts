import { describe, expect, it } from 'vitest';
import { emptyFilterDraft, filterOfDraft } from '../../../clients/web/src/project/call-filter-draft.ts';

// The call browser's filter fields as a CallFilter (contract 5.1): times typed in the browser's
// time zone, the model as an exact attribute condition.

describe('filterOfDraft', () => {
  const draft = (changes: Partial<ReturnType<typeof emptyFilterDraft>>) => ({ ...emptyFilterDraft(), ...changes });

  it('makes a CallFilter of the fields filled in, the model as an exact gen_ai.request.model condition', () => {
    expect(filterOfDraft(emptyFilterDraft())).toEqual({ filter: {} });
    const from = '2026-01-02T09:30';
    const before = '2026-01-03T00:00:15';
    expect(filterOfDraft(draft({ opName: ' chat ', text: 'refund', model: ' gpt-5 ', exception: 'with', startedFrom: from, startedBefore: before }))).toEqual({
      filter: {
        op_name_contains: 'chat',
        text: 'refund',
        attributes: [{ path: 'gen_ai.request.model', op: 'eq', value: 'gpt-5' }],
        has_exception: true,
        started_after: new Date(from).toISOString(),
        started_before: new Date(before).toISOString(),
      },
    });
    expect(filterOfDraft(draft({ exception: 'without' }))).toEqual({ filter: { has_exception: false } });
  });

  it('refuses a range that ends before it starts, and a time that is not one, at its field', () => {
    expect(filterOfDraft(draft({ startedFrom: '2026-01-02T10:00', startedBefore: '2026-01-02T10:00' }))).toEqual({ problem: { field: 'startedBefore', message: expect.any(String) } });
    expect(filterOfDraft(draft({ startedFrom: '2026-02-31T10:00' }))).toEqual({ problem: { field: 'startedFrom', message: expect.any(String) } });
    expect(filterOfDraft(draft({ startedBefore: 'tomorrow' }))).toEqual({ problem: { field: 'startedBefore', message: expect.any(String) } });
  });

  it('adds the other attribute conditions after the model, each value in its JSON type, and names a row\'s problem', () => {
    const row = (path: string, op: 'eq' | 'gt' | 'contains' | 'exists', value = '') => ({ path, op, value });
    expect(
      filterOfDraft(draft({ model: 'gpt-5', attributes: [row('usage.tokens', 'gt', '300'), row('stream', 'eq', 'true'), row('code', 'eq', '"42"'), row('', 'eq'), row('user.id', 'exists', 'ignored'), row('name', 'contains', 'bot')] })),
    ).toEqual({
      filter: {
        attributes: [
          { path: 'gen_ai.request.model', op: 'eq', value: 'gpt-5' },
          { path: 'usage.tokens', op: 'gt', value: 300 },
          { path: 'stream', op: 'eq', value: true },
          { path: 'code', op: 'eq', value: '42' },
          { path: 'user.id', op: 'exists' },
          { path: 'name', op: 'contains', value: 'bot' },
        ],
      },
    });
    expect(filterOfDraft(draft({ attributes: [row('a', 'eq', '1'), row('usage.tokens', 'gt', 'many')] }))).toEqual({ problem: { field: 'attributes.1.value', message: 'Enter a number.' } });
    expect(filterOfDraft(draft({ attributes: [row('', 'eq', 'x')] }))).toEqual({ problem: { field: 'attributes.0.path', message: expect.any(String) } });
  });
});

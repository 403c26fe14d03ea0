import { describe, expect, it } from 'vitest';
import { emptyRuleDraft, previewAskOf, previewWords, ruleOfDraft, type RuleDraft } from '../../../clients/web/src/queue/rule-draft.ts';

// The web app's rule form as a create request and a preview ask (contract 5.10): the share in
// percent as a sample rate, the cap, the backfill's start typed in the browser's time zone.

describe('rule form', () => {
  const draft = (changes: Partial<RuleDraft>): RuleDraft => ({ ...emptyRuleDraft(), name: 'r', ...changes });

  it('makes a call rule of the call filter, the share and the cap, with a backfill when asked', () => {
    const since = '2026-01-02T09:30';
    const call = { ...emptyRuleDraft().call, opName: 'chat' };
    expect(ruleOfDraft(draft({ call, percent: '12.5', cap: '200', backfill: true, backfillSince: since }))).toEqual({
      rule: { name: 'r', trigger: 'call', filter: { op_name_contains: 'chat' }, sample_rate: 0.125, max_items_per_day: 200, backfill_since: new Date(since).toISOString() },
    });
    expect(previewAskOf(draft({ call, percent: '50', backfill: true, backfillSince: since }))).toEqual({ filter: { op_name_contains: 'chat' }, sample_rate: 0.5, since: new Date(since).toISOString() });
    // No backfill: no since, and none asked of the preview.
    expect(ruleOfDraft(draft({ backfillSince: since }))).toEqual({ rule: { name: 'r', trigger: 'call', filter: {}, sample_rate: 1, max_items_per_day: null } });
  });

  it('makes a feedback rule of the types and payload conditions, the call filter left out', () => {
    const payload = [{ path: 'detoned_alias', op: 'eq' as const, value: ':thumbs_down:' }];
    expect(ruleOfDraft(draft({ trigger: 'feedback', feedbackTypes: 'svc.reaction.1, svc.note.1', payload, call: { ...emptyRuleDraft().call, opName: 'ignored' } }))).toEqual({
      rule: { name: 'r', trigger: 'feedback', filter: { feedback_types: ['svc.reaction.1', 'svc.note.1'], payload }, sample_rate: 1, max_items_per_day: null },
    });
  });

  it('names the field of a problem, and asks no preview while there is one', () => {
    expect(ruleOfDraft(draft({ name: ' ' }))).toEqual({ problem: { field: 'name', message: expect.any(String) } });
    for (const percent of ['0', '101', '', 'half']) expect(ruleOfDraft(draft({ percent }))).toEqual({ problem: { field: 'percent', message: expect.any(String) } });
    for (const cap of ['0', '1.5', 'x']) expect(ruleOfDraft(draft({ cap }))).toEqual({ problem: { field: 'cap', message: expect.any(String) } });
    expect(ruleOfDraft(draft({ backfill: true }))).toEqual({ problem: { field: 'backfillSince', message: expect.any(String) } });
    expect(ruleOfDraft(draft({ call: { ...emptyRuleDraft().call, startedFrom: '2026-02-31T10:00' } }))).toEqual({ problem: { field: 'call.startedFrom', message: expect.any(String) } });
    expect(ruleOfDraft(draft({ trigger: 'feedback', payload: [{ path: '', op: 'eq', value: 'x' }] }))).toEqual({ problem: { field: 'payload.0.path', message: expect.any(String) } });
    expect(previewAskOf(draft({ percent: '0' }))).toBeNull();
  });

  it('says "about" only when sampled', () => {
    expect(previewWords({ matching_calls: 5012, would_add: 5012 }, 1)).toBe(`Would add ${(5012).toLocaleString()} of ${(5012).toLocaleString()} matching calls`);
    expect(previewWords({ matching_calls: 5012, would_add: 250 }, 0.05)).toBe(`Would add about 250 of ${(5012).toLocaleString()} matching calls`);
    expect(previewWords({ matching_calls: 1, would_add: 0 }, 1)).toBe('Would add 0 of 1 matching call');
  });
});

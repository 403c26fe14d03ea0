import { describe, expect, it } from 'vitest';
import { bandOf, formatAlpha, formatKappa } from '../../../clients/web/src/agreement/reading.ts';
import { annotatorsOf, valuesByCall } from '../../../clients/web/src/queue/annotator-values.ts';
import type { FeedbackRecord } from '../../../clients/web/src/queue/queue-queries.ts';

// The web app's reading of agreement figures and of who gave which value, as pure functions.

describe("alpha read by Krippendorff's (2004, p. 241) thresholds", () => {
  it.each([
    [1, 'reliable'],
    [0.8, 'reliable'],
    [0.7999, 'tentative'],
    [0.667, 'tentative'],
    [0.6669, 'unreliable'],
    [0, 'unreliable'],
    [-0.5, 'unreliable'],
  ] as const)('α = %f is %s', (alpha, band) => {
    expect(bandOf(alpha)).toBe(band);
  });

  it('writes a minus sign below zero', () => {
    expect(formatAlpha(-0.75)).toBe('−0.750');
    expect(formatKappa(-1)).toBe('−1.00');
    expect(formatAlpha(0.7434)).toBe('0.743');
  });
});

describe("each annotator's value per item and spec", () => {
  const PROJECT = 'acme/views';
  const callRef = (callId: string) => `svc:///${PROJECT}/call/${callId}`;
  const specs = [
    { ref: `svc:///${PROJECT}/object/tone:d1`, name: 'tone' },
    { ref: `svc:///${PROJECT}/object/score:d2`, name: 'score' },
  ];
  let sequence = 0;
  function record(fields: Partial<FeedbackRecord> & { svc_user_id: string; created_at: string }): FeedbackRecord {
    return {
      id: `0000000${++sequence}`.slice(-8),
      project_id: PROJECT,
      svc_ref: callRef('c1'),
      feedback_type: 'svc.annotation.tone',
      payload: { value: 'friendly' },
      creator: null,
      annotation_ref: specs[0]!.ref,
      runnable_ref: null,
      call_ref: callRef('c1'),
      trigger_ref: null,
      queue_id: 'q',
      ...fields,
    };
  }

  it('takes the latest record per annotator (ties broken by id), the call from svc_ref else call_ref, and ignores other specs and types', () => {
    const records = [
      record({ svc_user_id: 'b', created_at: '2026-01-01T00:00:02.000Z', payload: { value: 'rude' } }),
      record({ svc_user_id: 'a', created_at: '2026-01-01T00:00:01.000Z', payload: { value: 'neutral' } }),
      record({ svc_user_id: 'a', created_at: '2026-01-01T00:00:03.000Z', payload: { value: 'friendly' } }),
      record({ svc_user_id: 'b', created_at: '2026-01-01T00:00:02.000Z', payload: { value: 'neutral' } }), // same time, larger id
      record({ svc_user_id: 'a', created_at: '2026-01-01T00:00:04.000Z', feedback_type: 'svc.annotation.score', annotation_ref: specs[1]!.ref, payload: { value: 4 } }),
      // A record of the same type under another spec version counts for nothing.
      record({ svc_user_id: 'a', created_at: '2026-01-01T00:00:05.000Z', annotation_ref: `svc:///${PROJECT}/object/tone:old`, payload: { value: 'rude' } }),
      record({ svc_user_id: 'c', created_at: '2026-01-01T00:00:01.000Z', feedback_type: 'svc.note.1', annotation_ref: null, payload: { note: 'hm' } }),
      record({ svc_user_id: 'c', created_at: '2026-01-01T00:00:01.000Z', svc_ref: `svc:///${PROJECT}/object/answer:x`, call_ref: callRef('c2'), payload: { value: 'rude' } }),
    ];
    const values = valuesByCall(PROJECT, records, specs);
    expect([...values.keys()].sort()).toEqual(['c1', 'c2']);
    const c1 = values.get('c1')!;
    expect(Object.fromEntries(c1.bySpec.get(specs[0]!.ref)!)).toEqual({ a: 'friendly', b: 'neutral' });
    expect(Object.fromEntries(c1.bySpec.get(specs[1]!.ref)!)).toEqual({ a: 4 });
    expect(Object.fromEntries(c1.notes)).toEqual({ c: 'hm' });
    expect(annotatorsOf(c1)).toEqual(['a', 'b', 'c']);
    expect(Object.fromEntries(values.get('c2')!.bySpec.get(specs[0]!.ref)!)).toEqual({ c: 'rude' });
  });
});

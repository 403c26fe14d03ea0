import { parseRef, PROGRESS_STATES, type ProgressState, type Ref } from '@loupe/shared';
import { describe, expect, it } from 'vitest';
import { decideTransition } from '../../../server/src/domain/transitions.ts';

const P = 'svc:///acme/chatbot';

const VALID: { ref: string; parsed: Ref }[] = [
  {
    ref: `${P}/object/helpfulness:abc123`,
    parsed: { kind: 'object', entity: 'acme', project: 'chatbot', projectId: 'acme/chatbot', name: 'helpfulness', digest: 'abc123', extra: [] },
  },
  {
    ref: `${P}/op/my.op-v_2:Zx9_-=`,
    parsed: { kind: 'op', entity: 'acme', project: 'chatbot', projectId: 'acme/chatbot', name: 'my.op-v_2', digest: 'Zx9_-=', extra: [] },
  },
  {
    ref: 'svc:///Ac.me-1/my_proj.2/object/n:d/key/output/index/3/attr/score/id/x-1',
    parsed: {
      kind: 'object',
      entity: 'Ac.me-1',
      project: 'my_proj.2',
      projectId: 'Ac.me-1/my_proj.2',
      name: 'n',
      digest: 'd',
      extra: [
        { edge: 'key', value: 'output' },
        { edge: 'index', value: '3' },
        { edge: 'attr', value: 'score' },
        { edge: 'id', value: 'x-1' },
      ],
    },
  },
  {
    ref: `${P}/op/run:d1/index/0/index/-12`,
    parsed: {
      kind: 'op',
      entity: 'acme',
      project: 'chatbot',
      projectId: 'acme/chatbot',
      name: 'run',
      digest: 'd1',
      extra: [
        { edge: 'index', value: '0' },
        { edge: 'index', value: '-12' },
      ],
    },
  },
  {
    ref: `${P}/object/${'n'.repeat(128)}:d`,
    parsed: { kind: 'object', entity: 'acme', project: 'chatbot', projectId: 'acme/chatbot', name: 'n'.repeat(128), digest: 'd', extra: [] },
  },
  {
    ref: `${P}/call/01a2020e-2413-779b-871d-43bffc69cf0c`,
    parsed: { kind: 'call', entity: 'acme', project: 'chatbot', projectId: 'acme/chatbot', callId: '01a2020e-2413-779b-871d-43bffc69cf0c' },
  },
  {
    ref: `${P}/call/my.call:1`,
    parsed: { kind: 'call', entity: 'acme', project: 'chatbot', projectId: 'acme/chatbot', callId: 'my.call:1' },
  },
  {
    ref: `${P}/table/deadbeef`,
    parsed: { kind: 'table', entity: 'acme', project: 'chatbot', projectId: 'acme/chatbot', digest: 'deadbeef' },
  },
];

const INVALID: { ref: string; why: string; says: RegExp }[] = [
  { ref: 'weave:///acme/chatbot/object/n:d', why: 'wrong scheme', says: /svc:\/\/\// },
  { ref: 'svc://acme/chatbot/object/n:d', why: 'two slashes', says: /svc:\/\/\// },
  { ref: 'SVC:///acme/chatbot/object/n:d', why: 'scheme in capitals', says: /svc:\/\/\// },
  { ref: '', why: 'empty', says: /svc:\/\/\// },
  { ref: 'svc:///', why: 'nothing after the scheme', says: /entity/ },
  { ref: 'svc:///acme', why: 'no project', says: /project/ },
  { ref: 'svc:///acme/', why: 'empty project', says: /project/ },
  { ref: 'svc:///-acme/chatbot/object/n:d', why: 'entity starting with a dash', says: /entity/ },
  { ref: 'svc:///acme/chat bot/object/n:d', why: 'space in project', says: /project/ },
  { ref: 'svc:///acme/chatbot', why: 'no kind', says: /kind/ },
  { ref: 'svc:///acme/chatbot/', why: 'empty kind', says: /kind/ },
  { ref: 'svc:///acme/chatbot/thing/n:d', why: 'unknown kind', says: /unknown kind "thing"/ },
  { ref: 'svc:///acme/chatbot/Object/n:d', why: 'kind in capitals', says: /unknown kind/ },
  { ref: 'svc:///acme/chatbot/object', why: 'object without name', says: /<name>:<digest>/ },
  { ref: 'svc:///acme/chatbot/object/', why: 'object with empty name part', says: /<name>:<digest>/ },
  { ref: 'svc:///acme/chatbot/object/name', why: 'name without digest', says: /digest is missing/ },
  { ref: 'svc:///acme/chatbot/op/name', why: 'op name without digest', says: /digest is missing/ },
  { ref: 'svc:///acme/chatbot/object/name:', why: 'empty digest', says: /digest/ },
  { ref: 'svc:///acme/chatbot/object/:digest', why: 'empty name', says: /name/ },
  { ref: 'svc:///acme/chatbot/object/na me:d', why: 'space in name', says: /name/ },
  { ref: 'svc:///acme/chatbot/object/na+me:d', why: '+ in name', says: /name/ },
  { ref: 'svc:///acme/chatbot/object/né:d', why: 'non-ASCII name', says: /name/ },
  { ref: `svc:///acme/chatbot/object/${'n'.repeat(129)}:d`, why: 'name of 129 characters', says: /name/ },
  { ref: 'svc:///acme/chatbot/object/n:d:e', why: 'digest holding ":"', says: /digest/ },
  { ref: 'svc:///acme/chatbot/object/n:d/key', why: 'edge without value (odd pairs)', says: /pairs/ },
  { ref: 'svc:///acme/chatbot/object/n:d/key/a/attr', why: 'three extra parts', says: /pairs/ },
  { ref: 'svc:///acme/chatbot/object/n:d/key/', why: 'edge with empty value', says: /empty value/ },
  { ref: 'svc:///acme/chatbot/object/n:d/field/a', why: 'unknown edge', says: /unknown edge "field"/ },
  { ref: 'svc:///acme/chatbot/object/n:d/KEY/a', why: 'edge in capitals', says: /unknown edge/ },
  { ref: 'svc:///acme/chatbot/object/n:d/index/x', why: 'non-integer index', says: /integer/ },
  { ref: 'svc:///acme/chatbot/object/n:d/index/1.5', why: 'fractional index', says: /integer/ },
  { ref: 'svc:///acme/chatbot/object/n:d/index/01', why: 'index with a leading zero', says: /integer/ },
  { ref: 'svc:///acme/chatbot/op/n:d/index/-', why: 'index of a lone minus', says: /integer/ },
  { ref: 'svc:///acme/chatbot/call', why: 'call without id', says: /call id/ },
  { ref: 'svc:///acme/chatbot/call/', why: 'call with empty id', says: /call id/ },
  { ref: 'svc:///acme/chatbot/call/abc/def', why: 'call ref with extra parts', says: /exactly one call id/ },
  { ref: 'svc:///acme/chatbot/call/abc/key/x', why: 'call ref with an edge pair', says: /exactly one call id/ },
  { ref: 'svc:///acme/chatbot/call/a b', why: 'call id with a space', says: /call id/ },
  { ref: 'svc:///acme/chatbot/table', why: 'table without digest', says: /digest/ },
  { ref: 'svc:///acme/chatbot/table/a:b', why: 'table digest with ":"', says: /digest/ },
  { ref: 'svc:///acme/chatbot/table/abc/key/x', why: 'table ref with extra parts', says: /exactly one digest/ },
];

describe('parseRef', () => {
  for (const { ref, parsed } of VALID) {
    it(`parses ${ref}`, () => {
      expect(parseRef(ref)).toEqual({ ok: true, ref: parsed });
    });
  }
  for (const { ref, why, says } of INVALID) {
    it(`refuses ${why}: ${JSON.stringify(ref)}`, () => {
      const result = parseRef(ref);
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.reason).toMatch(says);
    });
  }
  it('gives projectId as <entity>/<project> for every kind', () => {
    for (const kind of ['object/n:d', 'op/n:d', 'call/c1', 'table/t1']) {
      const result = parseRef(`svc:///Org-1/proj.x/${kind}`);
      expect(result.ok && result.ref.projectId).toBe('Org-1/proj.x');
    }
  });
});

describe('decideTransition (contract 4.1)', () => {
  const cases: { current: ProgressState | null; requested: ProgressState; decision: ReturnType<typeof decideTransition> }[] = [
    { current: null, requested: 'in_progress', decision: { action: 'insert' } },
    { current: null, requested: 'completed', decision: { action: 'insert' } },
    { current: null, requested: 'skipped', decision: { action: 'insert' } },
    { current: 'in_progress', requested: 'in_progress', decision: { action: 'none' } },
    { current: 'in_progress', requested: 'completed', decision: { action: 'update' } },
    { current: 'in_progress', requested: 'skipped', decision: { action: 'update' } },
    { current: 'completed', requested: 'completed', decision: { action: 'none' } },
    { current: 'completed', requested: 'in_progress', decision: { action: 'reject', reason: 'invalid state transition from completed to in_progress' } },
    { current: 'completed', requested: 'skipped', decision: { action: 'reject', reason: 'invalid state transition from completed to skipped' } },
    { current: 'skipped', requested: 'skipped', decision: { action: 'none' } },
    { current: 'skipped', requested: 'in_progress', decision: { action: 'reject', reason: 'invalid state transition from skipped to in_progress' } },
    { current: 'skipped', requested: 'completed', decision: { action: 'reject', reason: 'invalid state transition from skipped to completed' } },
  ];

  it('has a case for every (current, requested) pair', () => {
    expect(cases).toHaveLength((PROGRESS_STATES.length + 1) * PROGRESS_STATES.length);
    for (const current of [null, ...PROGRESS_STATES]) {
      for (const requested of PROGRESS_STATES) {
        expect(cases.filter((c) => c.current === current && c.requested === requested), `${current} → ${requested}`).toHaveLength(1);
      }
    }
  });

  for (const { current, requested, decision } of cases) {
    it(`${current ?? 'none'} → ${requested}: ${decision.action}`, () => {
      expect(decideTransition(current, requested)).toEqual(decision);
    });
  }
});

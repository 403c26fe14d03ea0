import { randomUUID } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { withClient } from '../harness/databases.ts';
import {
  batchCreate,
  callRefOf,
  createSpec,
  freeForm,
  objectRefOf,
  queryFeedback,
  type FeedbackElement,
  type StoredFeedback,
} from '../harness/feedback.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { createQueue, projectQuery, TIMESTAMP } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Contract 4.2 (field rules) and 4.3 (built-in feedback types). Every bad element is sent as
// batch[1] behind a valid batch[0]: the 400 must name `batch[1]` and the field, and nothing of the
// batch may be stored.

const RULES = 'acme/rules'; // only failing batches are sent here: it must stay empty
const GOOD = 'acme/good';
const OTHER = 'acme/other';
const SCORE_SCHEMA = { type: 'integer', minimum: 1, maximum: 5 };

type Case = { name: string; bad: FeedbackElement; field: string; says?: string | RegExp };

describeEachBackend('feedback rules', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  /** An annotation spec "score" in each of RULES, GOOD and OTHER (OTHER's has another schema). */
  const score: Record<string, { ref: string; digest: string }> = {};
  let liveQueue: string;
  let deletedQueue: string;
  let otherProjectQueue: string;

  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    for (const projectId of [RULES, GOOD]) score[projectId] = await createSpec(server, member.api_key, projectId, 'score', SCORE_SCHEMA);
    score[OTHER] = await createSpec(server, member.api_key, OTHER, 'score', { type: 'string' });
    expect(score[OTHER]!.digest).not.toBe(score[RULES]!.digest);
    liveQueue = await createQueue(server, member.api_key, RULES);
    deletedQueue = await createQueue(server, member.api_key, RULES);
    const deleted = await rest(server, 'DELETE', `/annotation_queues/${deletedQueue}${projectQuery(RULES)}`, { key: member.api_key });
    expect(deleted.status, deleted.text).toBe(200);
    otherProjectQueue = await createQueue(server, member.api_key, OTHER);
  });
  afterAll(() => server?.stop());

  /** A valid element of RULES with the given fields replaced (undefined removes a field). */
  function element(fields: FeedbackElement = {}): FeedbackElement {
    const base = freeForm(RULES, fields);
    for (const [field, value] of Object.entries(fields)) if (value === undefined) delete base[field];
    return base;
  }
  const withPayload = (payload: unknown, fields: FeedbackElement = {}) => element({ ...fields, payload });
  const reaction = (payload: unknown) => element({ feedback_type: 'svc.reaction.1', payload });
  const note = (payload: unknown) => element({ feedback_type: 'svc.note.1', payload });
  const annotation = (fields: FeedbackElement) =>
    element({ feedback_type: 'svc.annotation.score', annotation_ref: score[RULES]!.ref, payload: { value: 3 }, ...fields });
  const runnable = (fields: FeedbackElement) =>
    element({
      feedback_type: 'svc.runnable.judge',
      runnable_ref: objectRefOf(RULES, 'judge', 'v1', 'op'),
      call_ref: callRefOf(RULES, 'call-1'),
      payload: { output: { verdict: 'ok' } },
      ...fields,
    });

  /** Sends [valid, bad]; expects 400 naming batch[1] and the field; then checks RULES is empty. */
  async function expectRejected(cases: Case[], target: TestServer = server, key = member.api_key) {
    for (const c of cases) {
      const valid = element();
      const reply = await batchCreate(target, key, [valid, c.bad]);
      expect(reply.status, `${c.name}: ${reply.text}`).toBe(400);
      expect(reply.body.code, c.name).toBe('BAD_REQUEST');
      const reason: string = reply.body.reason;
      expect(reason, c.name).toContain('batch[1]');
      expect(reason, c.name).toContain(c.field);
      expect(reason, c.name).not.toContain('batch[0]');
      if (c.says) expect(reason, c.name).toMatch(c.says);
      expect(await queryFeedback(target, key, RULES, { filter: { ids: [valid.id] } }), c.name).toEqual([]);
    }
    expect(await queryFeedback(target, key, RULES, { limit: 10_000 })).toEqual([]);
  }

  /** Sends one valid element to GOOD; checks the result, and the stored record through query. */
  async function expectStored(fields: FeedbackElement, payload: Record<string, unknown>): Promise<StoredFeedback> {
    const sent = freeForm(GOOD, fields);
    const reply = await batchCreate(server, member.api_key, [sent]);
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.res).toEqual([{ id: sent.id, created_at: expect.stringMatching(TIMESTAMP), svc_user_id: member.user_id, payload }]);
    const stored = await queryFeedback(server, member.api_key, GOOD, { filter: { ids: [sent.id] } });
    expect(stored).toEqual([
      {
        id: sent.id,
        project_id: GOOD,
        svc_ref: sent.svc_ref,
        feedback_type: sent.feedback_type,
        payload,
        creator: sent.creator ?? null,
        annotation_ref: sent.annotation_ref ?? null,
        runnable_ref: sent.runnable_ref ?? null,
        call_ref: sent.call_ref ?? null,
        trigger_ref: sent.trigger_ref ?? null,
        queue_id: sent.queue_id ?? null,
        svc_user_id: member.user_id,
        created_at: reply.body.res[0].created_at,
      },
    ]);
    return stored[0]!;
  }

  it('control: the valid batch[0] used below is stored when sent alone', async () => {
    await expectStored({ creator: 'Ann', payload: { text: 'fine', nested: { n: [1, 2.5, null, true] } } }, {
      text: 'fine',
      nested: { n: [1, 2.5, null, true] },
    });
  });

  it('project_id: must be <entity>/<project>, each part [A-Za-z0-9][A-Za-z0-9_.-]{0,127}', async () => {
    const bad = ['acme', 'acme/', '/rules', 'acme/rules/x', '-acme/rules', 'acme/_rules', 'acme/ru les', 'acme/rülés', `${'a'.repeat(129)}/rules`, '', 7, null];
    await expectRejected([
      ...bad.map((project_id) => ({ name: `project_id ${JSON.stringify(project_id)}`, bad: element({ project_id }), field: 'project_id' })),
      { name: 'project_id missing', bad: element({ project_id: undefined }), field: 'project_id' },
    ]);
    // 128 characters per part, and '_', '.', '-' after the first character, are allowed.
    const entity = `E${'e_.-'.repeat(31)}e09`;
    const projectId = `${entity}/${'p'.repeat(128)}`;
    expect(entity).toHaveLength(128);
    const owner = await createUser(server, { entity, role: 'member' });
    const sent = freeForm(projectId);
    const reply = await batchCreate(server, owner.api_key, [sent]);
    expect(reply.status, reply.text).toBe(200);
    expect((await queryFeedback(server, owner.api_key, projectId)).map((f) => [f.id, f.project_id])).toEqual([[sent.id, projectId]]);
  });

  it('svc_ref: required, a valid ref (section 6), in the same project', async () => {
    const invalid = [
      'not a ref',
      'svc://acme/rules/call/c1',
      'svc:///acme/rules',
      'svc:///acme/rules/call/',
      'svc:///acme/rules/call/a/b',
      'svc:///acme/rules/widget/x',
      'svc:///acme/rules/object/name',
      'svc:///acme/rules/object/:digest',
      'svc:///acme/rules/object/name:',
      'svc:///acme/rules/object/na me:digest',
      'svc:///acme/rules/object/name:di:gest',
      'svc:///acme/rules/object/name:digest/key',
      'svc:///acme/rules/object/name:digest/colour/red',
      'svc:///acme/rules/object/name:digest/index/one',
      'svc:///acme/rules/object/name:digest/key/',
      'svc:///acme/rules/table/',
      `svc:///acme/rules/object/${'n'.repeat(129)}:d`,
      '',
    ];
    await expectRejected([
      { name: 'svc_ref missing', bad: element({ svc_ref: undefined }), field: 'svc_ref' },
      { name: 'svc_ref null', bad: element({ svc_ref: null }), field: 'svc_ref' },
      { name: 'svc_ref number', bad: element({ svc_ref: 12 }), field: 'svc_ref' },
      ...invalid.map((svc_ref) => ({ name: `svc_ref ${JSON.stringify(svc_ref)}`, bad: element({ svc_ref }), field: 'svc_ref' })),
      { name: 'svc_ref in another project', bad: element({ svc_ref: callRefOf(OTHER, 'c1') }), field: 'svc_ref', says: RULES },
      { name: 'svc_ref in another entity', bad: element({ svc_ref: callRefOf('globex/rules', 'c1') }), field: 'svc_ref' },
      { name: 'svc_ref object in another project', bad: element({ svc_ref: objectRefOf(OTHER, 'doc', 'd1') }), field: 'svc_ref' },
    ]);
    // Every kind of ref, with every edge, is a valid svc_ref.
    for (const svc_ref of [
      callRefOf(GOOD, 'c.1:x-y_z'),
      objectRefOf(GOOD, 'doc', 'abc'),
      objectRefOf(GOOD, 'fn', 'abc', 'op'),
      `svc:///${GOOD}/object/doc:abc/key/k/index/-3/attr/a/id/i`,
      `svc:///${GOOD}/table/abc123`,
    ]) {
      await expectStored({ svc_ref }, { text: 'fine' });
    }
  });

  it('feedback_type: required, 1-256 characters', async () => {
    await expectRejected([
      { name: 'empty', bad: element({ feedback_type: '' }), field: 'feedback_type' },
      { name: '257 characters', bad: element({ feedback_type: 't'.repeat(257) }), field: 'feedback_type' },
      { name: 'missing', bad: element({ feedback_type: undefined }), field: 'feedback_type' },
      { name: 'null', bad: element({ feedback_type: null }), field: 'feedback_type' },
      { name: 'number', bad: element({ feedback_type: 1 }), field: 'feedback_type' },
    ]);
    await expectStored({ feedback_type: 't'.repeat(256) }, { text: 'fine' });
    await expectStored({ feedback_type: 'x' }, { text: 'fine' });
  });

  it('payload: required, a JSON object', async () => {
    const notObjects: unknown[] = [[], [{ a: 1 }], 'text', 3, true, null];
    await expectRejected([
      ...notObjects.map((payload) => ({ name: `payload ${JSON.stringify(payload)}`, bad: withPayload(payload), field: 'payload' })),
      { name: 'payload missing', bad: element({ payload: undefined }), field: 'payload' },
    ]);
    await expectStored({ payload: {} }, {});
  });

  it('payload: its JSON serialization after enrichment at most LOUPE_MAX_PAYLOAD_BYTES, else "Feedback payload too large"', async () => {
    const small = await startTestServer(backend, { LOUPE_MAX_PAYLOAD_BYTES: '100' });
    try {
      const user = await createUser(small, { entity: 'acme', role: 'member' });
      // {"t":"…"} is 8 bytes plus the string.
      const sized = (bytes: number, char = 'x') => ({ t: char.repeat((bytes - 8) / Buffer.byteLength(char)) });
      expect(Buffer.byteLength(JSON.stringify(sized(100)))).toBe(100);
      // Multi-byte characters count as bytes: 46 × "é" is 92 bytes.
      expect(Buffer.byteLength(JSON.stringify(sized(100, 'é')))).toBe(100);
      // A reaction fits as sent but not once alias, detoned and detoned_alias are added.
      const smallReaction = { emoji: '👍🏽', pad: 'x'.repeat(60) };
      expect(Buffer.byteLength(JSON.stringify(smallReaction))).toBeLessThanOrEqual(100);
      await expectRejected(
        [
          { name: '101 bytes', bad: withPayload({ t: 'x'.repeat(93) }), field: 'payload', says: 'Feedback payload too large' },
          { name: '102 bytes of é', bad: withPayload(sized(102, 'é')), field: 'payload', says: 'Feedback payload too large' },
          {
            name: 'reaction over the limit after enrichment',
            bad: element({ feedback_type: 'svc.reaction.1', payload: smallReaction }),
            field: 'payload',
            says: 'Feedback payload too large',
          },
        ],
        small,
        user.api_key,
      );
      expect(Buffer.byteLength(JSON.stringify({ t: 'x'.repeat(93) }))).toBe(101);
      for (const payload of [sized(100), sized(100, 'é')]) {
        const sent = freeForm(GOOD, { payload });
        const reply = await batchCreate(small, user.api_key, [sent]);
        expect(reply.status, reply.text).toBe(200);
        expect(reply.body.res[0].payload).toEqual(payload);
        expect((await queryFeedback(small, user.api_key, GOOD, { filter: { ids: [sent.id] } }))[0]?.payload).toEqual(payload);
      }
    } finally {
      await small.stop();
    }
  });

  it('payload: 1 MiB (1,048,576 bytes) by default — exactly 1 MiB is stored, ~1.1 MiB is refused', async () => {
    const exact = { t: 'x'.repeat(1_048_576 - 8) };
    expect(Buffer.byteLength(JSON.stringify(exact))).toBe(1_048_576);
    const over = { t: 'x'.repeat(1_150_000) };
    await expectRejected([{ name: '~1.1 MiB', bad: withPayload(over), field: 'payload', says: 'Feedback payload too large' }]);
    const sent = freeForm(GOOD, { payload: exact });
    const reply = await batchCreate(server, member.api_key, [sent]);
    expect(reply.status, reply.text.slice(0, 300)).toBe(200);
    const [stored] = await queryFeedback(server, member.api_key, GOOD, { filter: { ids: [sent.id] } });
    expect((stored?.payload.t as string).length).toBe(1_048_576 - 8);
  });

  it('id: optional, a UUID', async () => {
    const bad: unknown[] = ['abc', '123', '', randomUUID().replaceAll('-', ''), `${randomUUID()}0`, `{${randomUUID()}}`, 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz', 42, null];
    await expectRejected(bad.map((id) => ({ name: `id ${JSON.stringify(id)}`, bad: element({ id }), field: 'id' })));
    // Absent: the server makes a UUIDv7.
    const sent = freeForm(GOOD, { id: undefined });
    delete sent.id;
    const reply = await batchCreate(server, member.api_key, [sent]);
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.res[0].id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(await queryFeedback(server, member.api_key, GOOD, { filter: { ids: [reply.body.res[0].id] } })).toHaveLength(1);
  });

  it('creator: optional, a string of at most 256 characters, or null', async () => {
    await expectRejected([
      { name: '257 characters', bad: element({ creator: 'c'.repeat(257) }), field: 'creator' },
      { name: 'number', bad: element({ creator: 5 }), field: 'creator' },
      { name: 'object', bad: element({ creator: { name: 'x' } }), field: 'creator' },
    ]);
    await expectStored({ creator: 'c'.repeat(256) }, { text: 'fine' });
    await expectStored({ creator: null }, { text: 'fine' });
  });

  it('an unknown field is a 400 naming it', async () => {
    await expectRejected([
      { name: 'colour', bad: element({ colour: 'red' }), field: 'colour' },
      { name: 'feedbackType', bad: element({ feedbackType: 'x' }), field: 'feedbackType' },
      { name: 'created_at', bad: element({ created_at: '2026-01-01T00:00:00.000Z' }), field: 'created_at' },
    ]);
  });

  it('queue_id: optional, an existing, not deleted queue of the same project', async () => {
    await expectRejected([
      { name: 'unknown queue', bad: element({ queue_id: randomUUID() }), field: 'queue_id' },
      { name: 'deleted queue', bad: element({ queue_id: deletedQueue }), field: 'queue_id' },
      { name: 'queue of another project', bad: element({ queue_id: otherProjectQueue }), field: 'queue_id' },
      { name: 'not a string', bad: element({ queue_id: 12 }), field: 'queue_id' },
    ]);
    // The live queue of RULES is accepted (stored in RULES, then purged, so RULES stays empty).
    const ok = element({ queue_id: liveQueue });
    const reply = await batchCreate(server, member.api_key, [ok]);
    expect(reply.status, reply.text).toBe(200);
    const [stored] = await queryFeedback(server, member.api_key, RULES, { filter: { queue_id: liveQueue } });
    expect(stored?.queue_id).toBe(liveQueue);
    const purge = await rest(server, 'POST', '/feedback/purge', { key: member.api_key, body: { project_id: RULES, ids: [ok.id] } });
    expect(purge.body).toEqual({ deleted_count: 1 });
  });

  it('svc.reaction.1: payload.emoji is exactly one RGI emoji', async () => {
    const bad: unknown[] = ['a👍', '👍👍', '', 'a', ':thumbs_up:', '❤', '👍 ', '#⃣', '🇺', 42, null, ['👍'], { e: '👍' }];
    await expectRejected([
      ...bad.map((emoji) => ({ name: `emoji ${JSON.stringify(emoji)}`, bad: reaction({ emoji }), field: 'payload.emoji' })),
      { name: 'emoji missing', bad: reaction({ smile: '👍' }), field: 'payload.emoji' },
      { name: 'annotation_ref on a reaction', bad: element({ feedback_type: 'svc.reaction.1', payload: { emoji: '👍' }, annotation_ref: score[RULES]!.ref }), field: 'annotation_ref' },
    ]);
  });

  it('svc.reaction.1: stores the emoji with its alias, detoned form and detoned alias', async () => {
    const reactionOf = (emoji: string, extra: Record<string, unknown> = {}) => ({ feedback_type: 'svc.reaction.1', payload: { emoji, ...extra } });
    await expectStored(reactionOf('👍'), { emoji: '👍', alias: ':thumbs_up:', detoned: '👍', detoned_alias: ':thumbs_up:' });
    await expectStored(reactionOf('👍🏽'), { emoji: '👍🏽', alias: ':thumbs_up_medium_skin_tone:', detoned: '👍', detoned_alias: ':thumbs_up:' });
    // A ZWJ sequence with two skin tones is one emoji.
    const holding = await expectStored(reactionOf('🧑🏽‍🤝‍🧑🏻'), {
      emoji: '🧑🏽‍🤝‍🧑🏻',
      alias: ':people_holding_hands_medium_skin_tone_light_skin_tone:',
      detoned: '🧑‍🤝‍🧑',
      detoned_alias: ':people_holding_hands:',
    });
    expect(holding.payload.detoned).toBe('\u{1F9D1}\u200D\u{1F91D}\u200D\u{1F9D1}');
    // A flag (two regional indicators) is one emoji.
    await expectStored(reactionOf('🇫🇷'), { emoji: '🇫🇷', alias: ':flag_france:', detoned: '🇫🇷', detoned_alias: ':flag_france:' });
    // Other payload fields are kept; a reaction may carry a call_ref and a trigger_ref.
    await expectStored(
      { ...reactionOf('❤️', { by: 'widget' }), call_ref: callRefOf(GOOD, 'c9'), trigger_ref: objectRefOf(GOOD, 'rule', 'r1') },
      { emoji: '❤️', by: 'widget', alias: ':red_heart:', detoned: '❤️', detoned_alias: ':red_heart:' },
    );
  });

  it('svc.note.1: payload.note is a string of 1-1024 characters', async () => {
    await expectRejected([
      { name: 'empty', bad: note({ note: '' }), field: 'payload.note' },
      { name: '1025 characters', bad: note({ note: 'n'.repeat(1025) }), field: 'payload.note' },
      { name: 'missing', bad: note({ text: 'hello' }), field: 'payload.note' },
      { name: 'number', bad: note({ note: 12 }), field: 'payload.note' },
      { name: 'null', bad: note({ note: null }), field: 'payload.note' },
    ]);
    await expectStored({ feedback_type: 'svc.note.1', payload: { note: 'n' } }, { note: 'n' });
    await expectStored({ feedback_type: 'svc.note.1', payload: { note: 'n'.repeat(1024) } }, { note: 'n'.repeat(1024) });
  });

  it('svc.note.1: counts characters (code points), as every other length limit does', async () => {
    // feedback_type and creator count code points: 256 emoji (512 UTF-16 units) are 256 characters.
    await expectStored({ feedback_type: '😀'.repeat(256), creator: '😀'.repeat(256) }, { text: 'fine' });
    await expectRejected([{ name: '1025 emoji', bad: note({ note: '😀'.repeat(1025) }), field: 'payload.note' }]);
    await expectStored({ feedback_type: 'svc.note.1', payload: { note: '😀'.repeat(1024) } }, { note: '😀'.repeat(1024) });
    await expectStored({ feedback_type: 'svc.note.1', payload: { note: 'é'.repeat(1024) } }, { note: 'é'.repeat(1024) });
  });

  it('svc.annotation.<name>: annotation_ref to a stored spec of the project named <name>; payload.value valid against its field_schema', async () => {
    const unknownDigest = objectRefOf(RULES, 'score', 'nosuchdigest');
    // OTHER has a spec "score" too, but with this digest only in OTHER, not in RULES.
    const digestOfOtherProject = objectRefOf(RULES, 'score', score[OTHER]!.digest);
    await expectRejected([
      { name: 'annotation_ref missing', bad: annotation({ annotation_ref: undefined }), field: 'annotation_ref' },
      { name: 'annotation_ref null', bad: annotation({ annotation_ref: null }), field: 'annotation_ref' },
      { name: 'annotation_ref not a ref', bad: annotation({ annotation_ref: 'score' }), field: 'annotation_ref' },
      { name: 'annotation_ref to another project', bad: annotation({ annotation_ref: score[OTHER]!.ref }), field: 'annotation_ref' },
      { name: 'annotation_ref with another name', bad: annotation({ feedback_type: 'svc.annotation.tone' }), field: 'annotation_ref' },
      { name: 'annotation_ref to an unknown digest', bad: annotation({ annotation_ref: unknownDigest }), field: 'annotation_ref' },
      { name: "annotation_ref with another project's digest", bad: annotation({ annotation_ref: digestOfOtherProject }), field: 'annotation_ref' },
      { name: 'annotation_ref an op ref', bad: annotation({ annotation_ref: objectRefOf(RULES, 'score', score[RULES]!.digest, 'op') }), field: 'annotation_ref' },
      { name: 'payload.value missing', bad: annotation({ payload: { score: 3 } }), field: 'payload.value' },
      { name: 'value above maximum', bad: annotation({ payload: { value: 6 } }), field: 'payload.value' },
      { name: 'value not an integer', bad: annotation({ payload: { value: 2.5 } }), field: 'payload.value' },
      { name: 'value a string', bad: annotation({ payload: { value: '3' } }), field: 'payload.value' },
      { name: 'value null', bad: annotation({ payload: { value: null } }), field: 'payload.value' },
      { name: 'empty name', bad: annotation({ feedback_type: 'svc.annotation.' }), field: 'feedback_type' },
      { name: 'runnable_ref on an annotation', bad: annotation({ runnable_ref: objectRefOf(RULES, 'judge', 'v1') }), field: 'runnable_ref' },
    ]);
    const ref = score[GOOD]!.ref;
    await expectStored({ feedback_type: 'svc.annotation.score', annotation_ref: ref, payload: { value: 5 } }, { value: 5 });
    await expectStored(
      { feedback_type: 'svc.annotation.score', annotation_ref: ref, call_ref: callRefOf(GOOD, 'c1'), payload: { value: 1, comment: 'bad' } },
      { value: 1, comment: 'bad' },
    );
  });

  it('svc.annotation.<name>: a catastrophic pattern runs in linear time; the value is answered within 100 ms, /health meanwhile', async () => {
    const schema = { type: 'string', pattern: '^(a+)+$' };
    const rules = await createSpec(server, member.api_key, RULES, 'redos', schema);
    const good = await createSpec(server, member.api_key, GOOD, 'redos', schema);
    // V8's backtracking engine took 107 s for this value, the whole process frozen.
    const evil = element({ feedback_type: 'svc.annotation.redos', annotation_ref: rules.ref, payload: { value: `${'a'.repeat(40)}!` } });
    const started = performance.now();
    const [reply, health] = await Promise.all([batchCreate(server, member.api_key, [evil]), rest(server, 'GET', '/health')]);
    const elapsed = performance.now() - started;
    expect(reply.status, reply.text).toBe(400);
    expect(reply.body.reason).toBe(`batch[0].payload.value does not match the spec's field_schema: (value) must match pattern "^(a+)+$".`);
    expect(health.status).toBe(200);
    expect(elapsed).toBeLessThan(100);
    expect(await queryFeedback(server, member.api_key, RULES, { limit: 10_000 })).toEqual([]);
    // A value that matches is stored.
    await expectStored({ feedback_type: 'svc.annotation.redos', annotation_ref: good.ref, payload: { value: 'a'.repeat(40) } }, { value: 'a'.repeat(40) });
  });

  it('svc.annotation.<name>: specs of two entities with the same $id each validate by their own schema', async () => {
    const globex = await createUser(server, { entity: 'globex', role: 'member' });
    const id = 'https://loupe.example/schemas/verdict';
    const acme = await createSpec(server, member.api_key, GOOD, 'verdict', { $id: id, type: 'integer', minimum: 1 });
    const theirs = await createSpec(server, globex.api_key, 'globex/good', 'verdict', { $id: id, type: 'string', enum: ['yes', 'no'] });
    const verdict = (projectId: string, ref: string, value: unknown) =>
      freeForm(projectId, { feedback_type: 'svc.annotation.verdict', annotation_ref: ref, payload: { value } });

    await expectStored({ feedback_type: 'svc.annotation.verdict', annotation_ref: acme.ref, payload: { value: 3 } }, { value: 3 });
    const acmeWrong = await batchCreate(server, member.api_key, [verdict(GOOD, acme.ref, 'yes')]);
    expect(acmeWrong.status, acmeWrong.text).toBe(400);
    expect(acmeWrong.body.reason).toContain('must be integer');

    const stored = verdict('globex/good', theirs.ref, 'yes');
    const theirsRight = await batchCreate(server, globex.api_key, [stored]);
    expect(theirsRight.status, theirsRight.text).toBe(200);
    const theirsWrong = await batchCreate(server, globex.api_key, [verdict('globex/good', theirs.ref, 3)]);
    expect(theirsWrong.status, theirsWrong.text).toBe(400);
    expect(theirsWrong.body.reason).toContain('must be string');
    const globexRecords = await queryFeedback(server, globex.api_key, 'globex/good', { limit: 10_000 });
    expect(globexRecords.map((record) => [record.id, record.payload])).toEqual([[stored.id, { value: 'yes' }]]);
  });

  it('svc.annotation.<name>: a spec not compiled by this process is compiled from storage, under the same rules', async () => {
    // Rows written straight into the table, as specs stored before these rules were.
    const insertSpec = async (projectId: string, name: string, digest: string, fieldSchema: unknown) => {
      const sql = 'insert into annotation_specs (project_id, name, digest, description, field_schema, created_at, created_by) select project_id, %1, %2, null, %3, created_at, created_by from annotation_specs where project_id = %4 and name = %5';
      const params = [name, digest, JSON.stringify(fieldSchema), projectId, 'score'];
      if (backend === 'sqlite') {
        const db = new DatabaseSync(server.database.url.slice('sqlite:'.length));
        try {
          expect(db.prepare(sql.replace(/%\d/g, '?')).run(...params).changes).toBe(1);
        } finally {
          db.close();
        }
      } else {
        const result = await withClient(server.database.url, (client) => client.query(sql.replace('%3', '%3::jsonb').replace(/%(\d)/g, '$$$1'), params));
        expect(result.rowCount).toBe(1);
      }
      return objectRefOf(projectId, name, digest);
    };
    const catastrophic = { type: 'string', pattern: '^(a+)+$' };
    const inRules = await insertSpec(RULES, 'legacy', `catastrophic-${backend}`, catastrophic);
    const inGood = await insertSpec(GOOD, 'legacy', `catastrophic-${backend}`, catastrophic);
    const lookahead = await insertSpec(RULES, 'legacy', `lookahead-${backend}`, { type: 'string', pattern: '(?=a)a' });
    const legacy = (ref: string, value: unknown) => annotation({ feedback_type: 'svc.annotation.legacy', annotation_ref: ref, payload: { value } });

    const started = performance.now();
    await expectRejected([
      { name: 'catastrophic pattern', bad: legacy(inRules, `${'a'.repeat(40)}!`), field: 'payload.value', says: 'must match pattern' },
    ]);
    expect(performance.now() - started).toBeLessThan(1000);
    await expectStored({ feedback_type: 'svc.annotation.legacy', annotation_ref: inGood, payload: { value: 'aaa' } }, { value: 'aaa' });

    const refused = await batchCreate(server, member.api_key, [legacy(lookahead, 'a')]);
    expect(refused.status, refused.text).toBe(400);
    expect(refused.body.reason).toBe(
      `annotation spec ${lookahead} can no longer be used: field_schema pattern "(?=a)a" cannot run on the linear-time engine (RE2; no lookaround or backreferences): invalid or unsupported Perl syntax: \`(?=\`.`,
    );
    expect(await queryFeedback(server, member.api_key, RULES, { limit: 10_000 })).toEqual([]);
  });

  it('svc.annotation.<name>: uniqueItems answers in time linear in the value; duplicates are still found', async () => {
    const rules = await createSpec(server, member.api_key, RULES, 'labels', { type: 'array', uniqueItems: true });
    const good = await createSpec(server, member.api_key, GOOD, 'labels', { type: 'array', uniqueItems: true });
    // Ajv compares every pair of objects: 20,000 of them took 4.6 s.
    const many = Array.from({ length: 20_000 }, (_, i) => ({ label: 'x', i }));
    const labels = (ref: string, value: unknown) => annotation({ feedback_type: 'svc.annotation.labels', annotation_ref: ref, payload: { value } });
    await expectRejected([
      { name: 'a duplicate at the end', bad: labels(rules.ref, [...many, { i: 19_999, label: 'x' }]), field: 'payload.value', says: 'must NOT have duplicate items' },
      { name: 'an object again in another key order', bad: labels(rules.ref, [{ a: 1, b: [1, { c: null }] }, 'x', { b: [1, { c: null }], a: 1 }]), field: 'payload.value', says: 'items ## 0 and 2 are identical' },
    ]);
    const started = performance.now();
    const reply = await batchCreate(server, member.api_key, [freeForm(GOOD, { feedback_type: 'svc.annotation.labels', annotation_ref: good.ref, payload: { value: many } })]);
    expect(reply.status, reply.text).toBe(200);
    expect(performance.now() - started).toBeLessThan(1000);
    await expectStored({ feedback_type: 'svc.annotation.labels', annotation_ref: good.ref, payload: { value: [{ a: 1 }, { a: '1' }, [1], 1] } }, { value: [{ a: 1 }, { a: '1' }, [1], 1] });
  });

  it('svc.runnable.<name>: runnable_ref (op or object ref named <name>) required; an op ref needs call_ref; payload.output required', async () => {
    await expectRejected([
      { name: 'runnable_ref missing', bad: runnable({ runnable_ref: undefined }), field: 'runnable_ref' },
      { name: 'runnable_ref a call ref', bad: runnable({ runnable_ref: callRefOf(RULES, 'judge') }), field: 'runnable_ref' },
      { name: 'runnable_ref in another project', bad: runnable({ runnable_ref: objectRefOf(OTHER, 'judge', 'v1', 'op') }), field: 'runnable_ref' },
      { name: 'op ref without call_ref', bad: runnable({ call_ref: undefined }), field: 'call_ref' },
      { name: 'payload.output missing', bad: runnable({ payload: { result: 1 } }), field: 'payload.output' },
      { name: 'name mismatch', bad: runnable({ feedback_type: 'svc.runnable.grader' }), field: 'runnable_ref' },
      { name: 'empty name', bad: runnable({ feedback_type: 'svc.runnable.' }), field: 'feedback_type' },
      { name: 'annotation_ref on a runnable', bad: runnable({ annotation_ref: score[RULES]!.ref }), field: 'annotation_ref' },
    ]);
    const op = objectRefOf(GOOD, 'judge', 'v1', 'op');
    const call = callRefOf(GOOD, 'c1');
    await expectStored({ feedback_type: 'svc.runnable.judge', runnable_ref: op, call_ref: call, payload: { output: { verdict: 'ok' } } }, {
      output: { verdict: 'ok' },
    });
    // An object ref needs no call_ref; output may be any JSON value, null included.
    await expectStored({ feedback_type: 'svc.runnable.judge', runnable_ref: objectRefOf(GOOD, 'judge', 'v2'), payload: { output: null } }, { output: null });
  });

  it('any other svc. type is reserved (400)', async () => {
    const reserved = ['svc.', 'svc.reaction', 'svc.reaction.2', 'svc.note', 'svc.note.2', 'svc.annotation', 'svc.runnable', 'svc.custom.1'];
    await expectRejected(reserved.map((feedback_type) => ({ name: feedback_type, bad: element({ feedback_type }), field: 'feedback_type' })));
    // Not the prefix: these are free-form types.
    for (const feedback_type of ['svc', 'svcx.note', 'SVC.note', 'my.svc.note']) await expectStored({ feedback_type }, { text: 'fine' });
  });

  it('a free-form type allows none of annotation_ref, runnable_ref, call_ref, trigger_ref', async () => {
    await expectRejected([
      { name: 'annotation_ref', bad: element({ annotation_ref: score[RULES]!.ref }), field: 'annotation_ref' },
      { name: 'runnable_ref', bad: element({ runnable_ref: objectRefOf(RULES, 'judge', 'v1', 'op') }), field: 'runnable_ref' },
      { name: 'call_ref', bad: element({ call_ref: callRefOf(RULES, 'c1') }), field: 'call_ref' },
      { name: 'trigger_ref', bad: element({ trigger_ref: objectRefOf(RULES, 'rule', 'r1') }), field: 'trigger_ref' },
    ]);
    await expectStored(
      { feedback_type: 'thumbs', payload: { up: true, reasons: ['clear', 'short'] }, annotation_ref: null, runnable_ref: null, call_ref: null, trigger_ref: null },
      { up: true, reasons: ['clear', 'short'] },
    );
  });

  it('call_ref must be a call ref and trigger_ref an object ref, both in the same project', async () => {
    await expectRejected([
      { name: 'call_ref an object ref', bad: runnable({ call_ref: objectRefOf(RULES, 'doc', 'd1') }), field: 'call_ref' },
      { name: 'call_ref an op ref', bad: runnable({ call_ref: objectRefOf(RULES, 'judge', 'v1', 'op') }), field: 'call_ref' },
      { name: 'call_ref not a ref', bad: runnable({ call_ref: 'call-1' }), field: 'call_ref' },
      { name: 'call_ref in another project', bad: runnable({ call_ref: callRefOf(OTHER, 'c1') }), field: 'call_ref' },
      { name: 'trigger_ref a call ref', bad: annotation({ trigger_ref: callRefOf(RULES, 'c1') }), field: 'trigger_ref' },
      { name: 'trigger_ref an op ref', bad: annotation({ trigger_ref: objectRefOf(RULES, 'rule', 'r1', 'op') }), field: 'trigger_ref' },
      { name: 'trigger_ref in another project', bad: annotation({ trigger_ref: objectRefOf(OTHER, 'rule', 'r1') }), field: 'trigger_ref' },
      { name: 'trigger_ref not a ref', bad: annotation({ trigger_ref: 'rule' }), field: 'trigger_ref' },
    ]);
    await expectStored(
      { feedback_type: 'svc.annotation.score', annotation_ref: score[GOOD]!.ref, trigger_ref: objectRefOf(GOOD, 'rule', 'r1'), payload: { value: 2 } },
      { value: 2 },
    );
  });
});

import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { TIMESTAMP } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

const SCORE = { type: 'integer', minimum: 1, maximum: 5 };

describeEachBackend('annotation specs', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
  });
  afterAll(() => server?.stop());

  const createSpec = (body: Record<string, unknown>, key = member.api_key) => rest(server, 'POST', '/annotation_specs', { key, body });
  const querySpecs = (body: Record<string, unknown>, key = member.api_key) => rest(server, 'POST', '/annotation_specs/query', { key, body });

  async function specsOf(projectId: string, filter: Record<string, unknown> = {}): Promise<any[]> {
    const reply = await querySpecs({ project_id: projectId, ...filter });
    expect(reply.status, reply.text).toBe(200);
    return reply.body.specs;
  }

  it('creates a spec and answers its object ref svc:///<entity>/<project>/object/<name>:<digest>', async () => {
    const reply = await createSpec({ project_id: 'acme/specs', name: 'helpfulness', description: 'How helpful, 1-5', field_schema: SCORE });
    expect(reply.status, reply.text).toBe(200);
    const { ref, name, digest, created_at } = reply.body;
    expect(Object.keys(reply.body).sort()).toEqual(['created_at', 'digest', 'name', 'ref']);
    expect(name).toBe('helpfulness');
    expect(digest).toMatch(/^[^/:]+$/);
    expect(digest.length).toBeGreaterThan(0);
    expect(ref).toBe(`svc:///acme/specs/object/helpfulness:${digest}`);
    expect(created_at).toMatch(TIMESTAMP);
    expect(await specsOf('acme/specs')).toEqual([
      {
        ref,
        project_id: 'acme/specs',
        name: 'helpfulness',
        digest,
        description: 'How helpful, 1-5',
        field_schema: SCORE,
        created_at,
        created_by: member.user_id,
      },
    ]);
  });

  it('gives the same content the same digest and ref, keeping the first created_at', async () => {
    const body = { project_id: 'acme/same', name: 'tone', field_schema: { type: 'string', enum: ['calm', 'rude'] } };
    const first = await createSpec(body);
    expect(first.status, first.text).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Key order does not change the content.
    const again = await createSpec({ field_schema: { enum: ['calm', 'rude'], type: 'string' }, name: 'tone', project_id: 'acme/same' });
    expect(again.status, again.text).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(await specsOf('acme/same')).toHaveLength(1);
  });

  it('gives a different schema (or description) a different digest, and keeps both versions', async () => {
    const projectId = 'acme/versions';
    const v1 = (await createSpec({ project_id: projectId, name: 'score', field_schema: SCORE })).body;
    const v2 = (await createSpec({ project_id: projectId, name: 'score', field_schema: { ...SCORE, maximum: 10 } })).body;
    const v3 = (await createSpec({ project_id: projectId, name: 'score', description: 'other words', field_schema: SCORE })).body;
    expect(new Set([v1.digest, v2.digest, v3.digest]).size).toBe(3);
    expect(v2.ref).toBe(`svc:///${projectId}/object/score:${v2.digest}`);
    expect((await specsOf(projectId)).map((s) => s.ref).sort()).toEqual([v1.ref, v2.ref, v3.ref].sort());
  });

  it('refuses a field_schema that is not valid JSON Schema with a 400 that says why, storing nothing', async () => {
    const projectId = 'acme/invalid';
    const cases: { schema: unknown; says: RegExp }[] = [
      { schema: { type: 'objekt' }, says: /type/ },
      { schema: { type: 'object', propertiez: { a: { type: 'string' } } }, says: /propertiez/ },
      { schema: { type: 'integer', minimum: 'one' }, says: /minimum/ },
    ];
    for (const { schema, says } of cases) {
      const reply = await createSpec({ project_id: projectId, name: 'broken', field_schema: schema });
      expect(reply.status, reply.text).toBe(400);
      expect(reply.body.code).toBe('BAD_REQUEST');
      expect(reply.body.reason).toMatch(/field_schema/);
      expect(reply.body.reason).toMatch(says);
    }
    // Not an object at all: a schema violation of the body.
    const notObject = await createSpec({ project_id: projectId, name: 'broken', field_schema: 'string' });
    expect(notObject.status).toBe(400);
    expect(notObject.body.reason).toContain('field_schema');
    expect(await specsOf(projectId)).toEqual([]);
  });

  it('refuses a pattern that RE2 cannot run (lookaround, backreference) with a 400 naming the pattern, storing nothing', async () => {
    const projectId = 'acme/patterns';
    const patterns = ['(?=a)b', '(?!a)b', '(?<=a)b', '(?<!a)b', '(a)\\1', '(?<n>a)\\k<n>'];
    const schemas = [
      ...patterns.map((pattern) => ({ pattern, schema: { type: 'string', pattern } })),
      // The same rules hold for patternProperties, and for a pattern deep in the schema.
      { pattern: '^x(?=y)', schema: { type: 'object', patternProperties: { '^x(?=y)': { type: 'integer' } } } },
      { pattern: '(a)\\1', schema: { type: 'array', items: { type: 'object', properties: { n: { type: 'string', pattern: '(a)\\1' } } } } },
    ];
    for (const { pattern, schema } of schemas) {
      const reply = await createSpec({ project_id: projectId, name: 'pattern', field_schema: schema });
      expect(reply.status, pattern).toBe(400);
      expect(reply.body.code).toBe('BAD_REQUEST');
      expect(reply.body.reason, pattern).toContain(`field_schema pattern ${JSON.stringify(pattern)}`);
      expect(reply.body.reason, pattern).toMatch(/RE2|backreference/);
    }
    // A pattern that is not an ECMAScript regular expression at all.
    const broken = await createSpec({ project_id: projectId, name: 'pattern', field_schema: { type: 'string', pattern: '(' } });
    expect(broken.status, broken.text).toBe(400);
    expect(broken.body.reason).toMatch(/field_schema.*pattern/);
    expect(await specsOf(projectId)).toEqual([]);
    // What RE2 runs is accepted, ECMAScript escapes and named groups included.
    const fine = { type: 'string', pattern: '^(?<word>\\w+)-\\u00e9\\d{2,3}$' };
    expect((await createSpec({ project_id: projectId, name: 'pattern', field_schema: fine })).status).toBe(200);
    expect((await specsOf(projectId)).map((spec) => spec.field_schema)).toEqual([fine]);
  });

  it(`refuses a field_schema over ${16 * 1024} bytes of JSON or ${32} levels deep with a 400 saying the bound, storing nothing`, async () => {
    const projectId = 'acme/bounds';
    /** An enum schema whose JSON is exactly `bytes` long. */
    const ofBytes = (bytes: number) => {
      const schema = { enum: ['x'] };
      schema.enum[0] = 'x'.repeat(bytes - JSON.stringify(schema).length + 1);
      expect(Buffer.byteLength(JSON.stringify(schema))).toBe(bytes);
      return schema;
    };
    /** A schema whose objects and arrays nest `levels` deep (the schema itself is level 1). */
    const ofDepth = (levels: number) => {
      // The innermost schema and its `enum` array are two levels; each `items` adds one.
      let schema: Record<string, unknown> = { type: 'integer', enum: [1] };
      for (let level = 2; level < levels; level++) schema = { type: 'array', items: schema };
      return schema;
    };
    const tooBig = await createSpec({ project_id: projectId, name: 'big', field_schema: ofBytes(16 * 1024 + 1) });
    expect(tooBig.status, tooBig.text).toBe(400);
    expect(tooBig.body.reason).toBe('field_schema is 16385 bytes as JSON; at most 16384 are allowed.');
    const tooDeep = await createSpec({ project_id: projectId, name: 'deep', field_schema: ofDepth(33) });
    expect(tooDeep.status, tooDeep.text).toBe(400);
    expect(tooDeep.body.reason).toBe('field_schema is nested more than 32 levels deep (objects and arrays); at most 32 are allowed.');
    expect(await specsOf(projectId)).toEqual([]);
    // Exactly at the bounds is accepted.
    const big = ofBytes(16 * 1024);
    const deep = ofDepth(32);
    expect((await createSpec({ project_id: projectId, name: 'big', field_schema: big })).status).toBe(200);
    expect((await createSpec({ project_id: projectId, name: 'deep', field_schema: deep })).status).toBe(200);
    expect((await specsOf(projectId)).map((spec) => spec.field_schema)).toEqual([big, deep]);
  });

  it('refuses what would run V8 RegExps on values or reach outside the schema: formats regex and url, another $schema, a remote $ref, too many patterns', async () => {
    const projectId = 'acme/refused';
    const cases: { schema: Record<string, unknown>; says: string }[] = [
      { schema: { type: 'string', format: 'regex' }, says: 'unknown format "regex"' },
      { schema: { type: 'string', format: 'url' }, says: 'unknown format "url"' },
      { schema: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'string' }, says: '$schema must be "https://json-schema.org/draft/2020-12/schema"' },
      // A pointer into the meta-schemas would check the schema against that part only.
      { schema: { $schema: 'https://json-schema.org/draft/2020-12/meta/core', type: 'objekt' }, says: '$schema must be' },
      { schema: { $ref: 'https://json-schema.org/draft/2019-09/schema' }, says: "can't resolve reference https://json-schema.org/draft/2019-09/schema" },
      { schema: { $ref: 'http://127.0.0.1:9/schema.json' }, says: "can't resolve reference http://127.0.0.1:9/schema.json" },
      {
        schema: { type: 'object', patternProperties: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`^p${i}_`, { type: 'integer' }])) },
        says: 'field_schema has more than 16 distinct patterns',
      },
    ];
    for (const { schema, says } of cases) {
      const reply = await createSpec({ project_id: projectId, name: 'refused', field_schema: schema });
      expect(reply.status, says).toBe(400);
      expect(reply.body.code).toBe('BAD_REQUEST');
      expect(reply.body.reason).toContain('field_schema');
      expect(reply.body.reason).toContain(says);
    }
    expect(await specsOf(projectId)).toEqual([]);
    // The formats that remain work, and sixteen patterns are allowed.
    const sixteen = { type: 'object', patternProperties: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`^p${i}_`, { type: 'integer' }])) };
    const email = { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'string', format: 'email' };
    expect((await createSpec({ project_id: projectId, name: 'email', field_schema: email })).status).toBe(200);
    expect((await createSpec({ project_id: projectId, name: 'sixteen', field_schema: sixteen })).status).toBe(200);
    expect((await specsOf(projectId)).map((spec) => spec.name)).toEqual(['email', 'sixteen']);
  });

  it('stores the same $id in two entities, and twice in one project: a schema id is never registered globally', async () => {
    const globex = await createUser(server, { entity: 'globex', role: 'member' });
    const id = 'https://loupe.example/schemas/rubric';
    const acmeSpec = await createSpec({ project_id: 'acme/ids', name: 'rubric', field_schema: { $id: id, type: 'integer' } });
    expect(acmeSpec.status, acmeSpec.text).toBe(200);
    const globexSpec = await createSpec({ project_id: 'globex/ids', name: 'rubric', field_schema: { $id: id, type: 'string' } }, globex.api_key);
    expect(globexSpec.status, globexSpec.text).toBe(200);
    const secondVersion = await createSpec({ project_id: 'acme/ids', name: 'rubric', field_schema: { $id: id, type: 'boolean' } });
    expect(secondVersion.status, secondVersion.text).toBe(200);
    expect((await specsOf('acme/ids')).map((spec) => spec.field_schema.type).sort()).toEqual(['boolean', 'integer']);
    expect((await querySpecs({ project_id: 'globex/ids' }, globex.api_key)).body.specs.map((spec: any) => spec.field_schema)).toEqual([{ $id: id, type: 'string' }]);
  });

  it('refuses a bad name, and a write by a viewer', async () => {
    for (const name of ['', 'has space', 'a/b', 'x:y', 'n'.repeat(129)]) {
      const reply = await createSpec({ project_id: 'acme/names', name, field_schema: SCORE });
      expect(reply.status, name).toBe(400);
      expect(reply.body.reason).toContain('name');
    }
    const byViewer = await createSpec({ project_id: 'acme/names', name: 'ok', field_schema: SCORE }, viewer.api_key);
    expect(byViewer.status).toBe(403);
    expect(await specsOf('acme/names')).toEqual([]);
  });

  it('queries by names and by refs (either matching), a viewer too', async () => {
    const projectId = 'acme/query';
    const a1 = (await createSpec({ project_id: projectId, name: 'alpha', field_schema: SCORE })).body;
    const a2 = (await createSpec({ project_id: projectId, name: 'alpha', field_schema: { type: 'boolean' } })).body;
    const b = (await createSpec({ project_id: projectId, name: 'beta', field_schema: SCORE })).body;
    const c = (await createSpec({ project_id: projectId, name: 'gamma', field_schema: SCORE })).body;
    // The same name in another project is never returned.
    expect((await createSpec({ project_id: 'acme/query-other', name: 'alpha', field_schema: SCORE })).status).toBe(200);

    const refs = async (filter: Record<string, unknown>, key = member.api_key) => {
      const reply = await querySpecs({ project_id: projectId, ...filter }, key);
      expect(reply.status, reply.text).toBe(200);
      return reply.body.specs.map((s: { ref: string }) => s.ref).sort();
    };
    expect(await refs({})).toEqual([a1.ref, a2.ref, b.ref, c.ref].sort());
    expect(await refs({ names: ['alpha'] })).toEqual([a1.ref, a2.ref].sort());
    expect(await refs({ names: ['beta', 'nothing'] })).toEqual([b.ref]);
    expect(await refs({ refs: [a2.ref] })).toEqual([a2.ref]);
    expect(await refs({ refs: [a2.ref, c.ref] })).toEqual([a2.ref, c.ref].sort());
    expect(await refs({ names: ['beta'], refs: [c.ref] })).toEqual([b.ref, c.ref].sort());
    expect(await refs({ refs: [`svc:///${projectId}/object/alpha:nosuchdigest`] })).toEqual([]);
    expect(await refs({ names: [] })).toEqual([]);
    expect(await refs({ refs: [b.ref] }, viewer.api_key)).toEqual([b.ref]);
  });

  it('refuses a ref from another project or a malformed ref in a query with 400 naming it', async () => {
    const projectId = 'acme/badrefs';
    const spec = (await createSpec({ project_id: projectId, name: 'alpha', field_schema: SCORE })).body;
    const other = (await createSpec({ project_id: 'acme/elsewhere', name: 'alpha', field_schema: SCORE })).body;
    const bad = [
      other.ref,
      'http:///acme/badrefs/object/alpha:x',
      `svc:///${projectId}/object/alpha`,
      `svc:///${projectId}/object/alpha:`,
      `svc:///${projectId}/call/some-call`,
      `svc:///${projectId}/thing/alpha:x`,
      'not a ref',
    ];
    for (const ref of bad) {
      const reply = await querySpecs({ project_id: projectId, refs: [spec.ref, ref] });
      expect(reply.status, ref).toBe(400);
      expect(reply.body.code).toBe('BAD_REQUEST');
      expect(reply.body.reason, ref).toContain('refs[1]');
    }
  });
});

import { SpanKind, SpanStatusCode, context, trace, type Span, type Tracer } from '@opentelemetry/api';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { exportBody, otelEnvironment, postOtlp, spanTime, tracing, type Protocol } from '../harness/otel.ts';
import { RpcStatus } from '../harness/otlp-wire.ts';
import { createQueue, queryItems, TIMESTAMP } from '../harness/queues.ts';
import { createRule, readRule } from '../harness/rules.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

const SYSTEM = [{ type: 'text', content: 'You answer questions about the weather.' }];
const QUESTION = [{ role: 'user', parts: [{ type: 'text', content: 'Weather in Paris?' }] }];
const TOOL_CALL = [{ role: 'assistant', parts: [{ type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } }], finish_reason: 'tool_call' }];
const ANSWER = [{ role: 'assistant', parts: [{ type: 'text', content: 'Sunny, 21 °C.' }], finish_reason: 'stop' }];


/** A hand-made OTLP/JSON request of one resource and one scope. */
function jsonExport(spans: object[], resource: object[] = []): string {
  return JSON.stringify({ resourceSpans: [{ resource: { attributes: resource }, scopeSpans: [{ scope: { name: 'hand', version: '1' }, spans }] }] });
}

const NOW_NS = () => String(BigInt(Date.now()) * 1_000_000n);
const TRACE = '5b8efff798038103d269b633813fc60c';
const jsonSpan = (extra: object = {}) => ({ traceId: TRACE, spanId: 'eee19b7ec3c1b174', name: 'op', startTimeUnixNano: NOW_NS(), endTimeUnixNano: NOW_NS(), ...extra });

/** Runs `body` in a span named `name`, a child of `parent` (a root span without one), and ends it. */
function inSpan(tracer: Tracer, { name, parent, kind, attributes }: { name: string; parent?: Span; kind?: SpanKind; attributes?: Record<string, string | number> }, body?: (span: Span) => void): void {
  const span = tracer.startSpan(name, { kind, attributes }, parent ? trace.setSpan(context.active(), parent) : undefined);
  body?.(span);
  span.end();
}

/** An agent's trace as an application instrumented with the GenAI conventions (≥ 1.37) records it. */
function agentTrace(tracer: Tracer): void {
  inSpan(tracer, { name: 'invoke_agent weather', attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'weather' } }, (root) => {
    llmCall(tracer, root, { input: QUESTION, output: TOOL_CALL, usage: [40, 12] });
    inSpan(tracer, { name: 'execute_tool get_weather', parent: root, attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'get_weather', 'gen_ai.tool.call.id': 'call_1' } });
    llmCall(tracer, root, { input: [...QUESTION, ...TOOL_CALL, { role: 'tool', parts: [{ type: 'tool_call_response', id: 'call_1', response: 'sunny, 21' }] }], output: ANSWER, usage: [70, 9] });
    inSpan(tracer, { name: 'send_report', parent: root }, (failing) => {
      const error = new TypeError('report channel closed');
      failing.recordException(error);
      failing.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    });
  });
}

function llmCall(tracer: Tracer, parent: Span, { input, output, usage }: { input: unknown[]; output: unknown[]; usage: [number, number] }): void {
  inSpan(tracer, { name: 'chat gpt-4o', parent, kind: SpanKind.CLIENT }, (span) => {
    span.setAttributes({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o',
      'gen_ai.response.model': 'gpt-4o-2024-08-06',
      'gen_ai.system_instructions': JSON.stringify(SYSTEM),
      'gen_ai.input.messages': JSON.stringify(input),
      'gen_ai.output.messages': JSON.stringify(output),
      'gen_ai.usage.input_tokens': usage[0],
      'gen_ai.usage.output_tokens': usage[1],
    });
  });
}

/** The call a span of agentTrace must be stored as, from what the SDK sent. */
function expectedCall(span: ReadableSpan, { projectId, userId }: { projectId: string; userId: string }) {
  const attributes = { ...span.attributes } as Record<string, unknown>;
  const isLlm = span.name.startsWith('chat');
  let inputs = null;
  let output = null;
  if (isLlm) {
    const messages = JSON.parse(attributes['gen_ai.input.messages'] as string).map(({ role, parts, ...rest }: any) => ({ role, content: parts, ...rest }));
    inputs = { messages: [{ role: 'system', content: SYSTEM }, ...messages] };
    output = { messages: JSON.parse(attributes['gen_ai.output.messages'] as string).map(({ role, parts, ...rest }: any) => ({ role, content: parts, ...rest })) };
    for (const key of ['gen_ai.system_instructions', 'gen_ai.input.messages', 'gen_ai.output.messages']) delete attributes[key];
  }
  const nested: Record<string, any> = {};
  for (const [key, value] of Object.entries(attributes)) {
    const path = key.split('.');
    let at = nested;
    for (const segment of path.slice(0, -1)) at = at[segment] ??= {};
    at[path.at(-1)!] = value;
  }
  const resource: Record<string, any> = {};
  for (const [key, value] of Object.entries(span.resource.attributes)) {
    const path = key.split('.');
    let at = resource;
    for (const segment of path.slice(0, -1)) at = at[segment] ??= {};
    at[path.at(-1)!] = value;
  }
  const exception = span.events.find((event) => event.name === 'exception');
  return {
    project_id: projectId,
    id: span.spanContext().spanId,
    trace_id: span.spanContext().traceId,
    parent_id: span.parentSpanContext?.spanId ?? null,
    op_name: span.name,
    started_at: spanTime(span.startTime),
    ended_at: spanTime(span.endTime),
    inputs,
    output,
    attributes: { ...nested, resource, scope: { name: 'loupe-tests', version: '1.2.3' } },
    exception: exception ? (exception.attributes!['exception.stacktrace'] as string) : null,
    created_at: expect.stringMatching(TIMESTAMP),
    created_by: userId,
  };
}

/** Two spans of a trace, ended (not exported). */
function tracingSpans(): ReadableSpan[] {
  const otel = tracing({ protocol: 'http/protobuf', env: {} });
  inSpan(otel.tracer, { name: 'a' }, (parent) => inSpan(otel.tracer, { name: 'b', parent }));
  return otel.finished();
}

describeEachBackend('OTLP/HTTP trace ingest', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let stranger: CreatedKeyForTest;
  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    stranger = await createUser(server, { entity: 'other', role: 'member' });
  });
  afterAll(() => server?.stop());

  async function storedTrace(projectId: string, traceId: string): Promise<any[]> {
    const reply = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: projectId, filter: { trace_ids: [traceId] } } });
    expect(reply.status, reply.text).toBe(200);
    return reply.body.calls;
  }

  for (const protocol of ['http/protobuf', 'http/json'] as Protocol[]) {
    it(`stores an agent trace sent by the SDK's ${protocol} exporter (gzip), call by call, and a re-export stores nothing new`, async () => {
      const projectId = `acme/agent-${protocol === 'http/protobuf' ? 'proto' : 'json'}`;
      const otel = tracing({ protocol, env: otelEnvironment(server, { key: member.api_key, project: projectId }) });
      agentTrace(otel.tracer);
      await otel.flush();
      const sent = otel.finished();
      expect(sent).toHaveLength(5);
      const traceId = sent[0]!.spanContext().traceId;
      const stored = await storedTrace(projectId, traceId);
      expect(stored).toHaveLength(5);
      for (const span of sent) {
        const call = stored.find((candidate) => candidate.id === span.spanContext().spanId);
        expect(call, span.name).toEqual(expectedCall(span, { projectId, userId: member.user_id }));
      }
      // The exporter retries: the same spans again store nothing new.
      await otel.export(sent);
      expect(await storedTrace(projectId, traceId)).toEqual(stored);
      await otel.shutdown();
    });
  }

  it('takes the project from the resource attribute loupe.project_id when there is no header (OTLP/JSON exporter)', async () => {
    const otel = tracing({ protocol: 'http/json', env: otelEnvironment(server, { key: member.api_key }), resource: { 'loupe.project_id': 'acme/from-resource' } });
    inSpan(otel.tracer, { name: 'lonely' });
    await otel.flush();
    const [span] = otel.finished();
    const [call] = await storedTrace('acme/from-resource', span!.spanContext().traceId);
    expect(call).toMatchObject({ id: span!.spanContext().spanId, op_name: 'lonely', parent_id: null, attributes: { resource: { loupe: { project_id: 'acme/from-resource' }, service: { name: 'agent-app' } } } });
    await otel.shutdown();
  });

  it('stores the same call from OTLP as from calls/batch/create, whichever comes first', async () => {
    const projectId = 'acme/same-content';
    const otel = tracing({ protocol: 'http/protobuf', env: otelEnvironment(server, { key: member.api_key, project: projectId }) });
    agentTrace(otel.tracer);
    const spans = otel.finished();
    const [first, ...others] = spans;
    const explain = async (some: ReadableSpan[]) => {
      const reply = await postOtlp(server, '/otel/v1/traces/explain', { body: exportBody(some, 'http/protobuf'), contentType: 'application/x-protobuf', key: member.api_key, headers: { 'X-Loupe-Project': projectId } });
      expect(reply.status).toBe(200);
      return reply.json.calls.map((explained: { call: unknown }) => explained.call);
    };
    // calls/batch/create first, with the calls /explain shows; then the same spans over OTLP store nothing new.
    const created = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: await explain(others) } });
    expect(created.status, created.text).toBe(200);
    expect(created.headers.get('loupe-new-records')).toBe('4');
    const before = await storedTrace(projectId, first!.spanContext().traceId);
    const exported = await postOtlp(server, '/otel/v1/traces', { body: exportBody(spans, 'http/protobuf'), contentType: 'application/x-protobuf', key: member.api_key, headers: { 'X-Loupe-Project': projectId }, gzip: true });
    expect(exported.status).toBe(200);
    expect(ProtobufTraceSerializer.deserializeResponse(exported.bytes)).toEqual({});
    expect(exported.headers.get('loupe-new-records')).toBe('1');
    const after = await storedTrace(projectId, first!.spanContext().traceId);
    expect(after).toHaveLength(5);
    for (const call of before) expect(after).toContainEqual(call);
    // OTLP first: the same content through calls/batch/create is a retry (no 409, nothing new).
    const again = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: await explain([first!]) } });
    expect(again.status, again.text).toBe(200);
    expect(again.headers.get('loupe-new-records')).toBe('0');
    expect(await storedTrace(projectId, first!.spanContext().traceId)).toEqual(after);
  });

  it('/explain shows each field\'s source and the spans it would refuse, and stores nothing', async () => {
    const projectId = 'acme/explained';
    const otel = tracing({ protocol: 'http/json', env: otelEnvironment(server, { key: member.api_key, project: projectId }) });
    agentTrace(otel.tracer);
    const spans = otel.finished();
    const llm = spans.find((span) => span.name.startsWith('chat'))!;
    const failing = spans.find((span) => span.name === 'send_report')!;
    const body = JSON.parse(Buffer.from(exportBody(spans, 'http/json')).toString('utf8'));
    // One span more, whose span id is too short: refused, and named.
    const bad = { ...body.resourceSpans[0].scopeSpans[0].spans[0], spanId: 'abcd', name: 'short id' };
    body.resourceSpans[0].scopeSpans[0].spans.push(bad);
    const reply = await postOtlp(server, '/otel/v1/traces/explain', { body: JSON.stringify(body), contentType: 'application/json', key: member.api_key, headers: { 'X-Loupe-Project': projectId } });
    expect(reply.status).toBe(200);
    expect(reply.json.calls).toHaveLength(5);
    expect(reply.json.rejected).toEqual([{ trace_id: bad.traceId, span_id: 'abcd', name: 'short id', reason: 'its span id is not 8 bytes (16 hex digits), not all zero' }]);
    const llmCall = reply.json.calls.find((explained: any) => explained.call.id === llm.spanContext().spanId);
    expect(llmCall.sources).toEqual({
      project_id: 'header X-Loupe-Project',
      id: 'span_id',
      trace_id: 'trace_id',
      parent_id: 'parent_span_id',
      op_name: 'name',
      started_at: 'start_time_unix_nano',
      ended_at: 'end_time_unix_nano',
      inputs: 'gen_ai.system_instructions, gen_ai.input.messages (GenAI semantic conventions ≥ 1.37)',
      output: 'gen_ai.output.messages (GenAI semantic conventions ≥ 1.37)',
      exception: null,
      attributes: '6 span attributes (3 taken for inputs and output), resource attributes, scope',
    });
    const failingCall = reply.json.calls.find((explained: any) => explained.call.id === failing.spanContext().spanId);
    expect(failingCall.sources).toMatchObject({ inputs: null, output: null, exception: 'event exception' });
    expect(failingCall.call.exception).toMatch(/^TypeError: report channel closed\n/);
    const stored = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: projectId } });
    expect(stored.body.calls).toEqual([]);
  });

  it('answers protobuf with protobuf and JSON with JSON; partialSuccess counts and names the spans refused, the rest is stored', async () => {
    const projectId = 'acme/partial';
    const otel = tracing({ protocol: 'http/protobuf', env: otelEnvironment(server, { key: member.api_key, project: projectId }) });
    inSpan(otel.tracer, { name: 'first' });
    inSpan(otel.tracer, { name: 'second' });
    const spans = otel.finished();
    const send = (body: Uint8Array | string, contentType: string) =>
      postOtlp(server, '/otel/v1/traces', { body, contentType, key: member.api_key, headers: { 'X-Loupe-Project': projectId } });
    const protobuf = await send(exportBody(spans, 'http/protobuf'), 'application/x-protobuf');
    expect(protobuf.status).toBe(200);
    expect(protobuf.headers.get('content-type')).toBe('application/x-protobuf');
    expect(ProtobufTraceSerializer.deserializeResponse(protobuf.bytes)).toEqual({});
    expect(protobuf.headers.get('loupe-new-records')).toBe('2');

    // `first` again with other content, a third span, and a fourth that repeats the third's id with other content.
    const json = JSON.parse(Buffer.from(exportBody(spans, 'http/json')).toString('utf8'));
    const list = json.resourceSpans[0].scopeSpans[0].spans;
    const [firstJson, secondJson] = list;
    const changed = { ...firstJson, name: 'first, renamed' };
    const third = { ...secondJson, spanId: 'aaaaaaaaaaaaaaaa', name: 'third' };
    const thirdAgain = { ...third, name: 'third, other content' };
    json.resourceSpans[0].scopeSpans[0].spans = [changed, secondJson, third, thirdAgain];
    const reply = await send(JSON.stringify(json), 'application/json');
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toBe('application/json');
    expect(reply.headers.get('loupe-new-records')).toBe('1');
    expect(reply.json).toEqual({
      partialSuccess: {
        rejectedSpans: '2',
        errorMessage:
          `2 of 4 spans refused: span ${firstJson.spanId} "first, renamed": a call with its id "${firstJson.spanId}" is stored in acme/partial with different content; ` +
          'span aaaaaaaaaaaaaaaa "third, other content": its id "aaaaaaaaaaaaaaaa" repeats an earlier one of the same request with different content.',
      },
    });
    const stored = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: projectId } });
    expect(stored.body.calls.map((call: { op_name: string }) => call.op_name).sort()).toEqual(['first', 'second', 'third']);

    // The same refusal over protobuf, read by the SDK's own response decoder.
    const renamed: ReadableSpan = Object.assign(Object.create(Object.getPrototypeOf(spans[0])), spans[0], { name: 'first, renamed' });
    const refused = await send(exportBody([renamed], 'http/protobuf'), 'application/x-protobuf');
    expect(refused.status).toBe(200);
    expect(refused.headers.get('content-type')).toBe('application/x-protobuf');
    expect(ProtobufTraceSerializer.deserializeResponse(refused.bytes)).toEqual({
      partialSuccess: { rejectedSpans: 1, errorMessage: `1 of 1 spans refused: span ${firstJson.spanId} "first, renamed": a call with its id "${firstJson.spanId}" is stored in acme/partial with different content.` },
    });
  });

  it('a rule adds the new calls of an export in its transaction; a span refused for other content under a stored id is not considered', async () => {
    const projectId = 'acme/otlp-rules';
    const send = (spans: object[]) =>
      postOtlp(server, '/otel/v1/traces', { body: jsonExport(spans), contentType: 'application/json', key: member.api_key, headers: { 'X-Loupe-Project': projectId } });
    const stored = { ...jsonSpan(), spanId: '1111111111111111', name: 'stored before' };
    expect((await send([stored])).status).toBe(200);
    const queueId = await createQueue(server, member.api_key, projectId);
    const rule = await createRule(server, member.api_key, projectId, queueId, { filter: {} });
    const fresh = { ...jsonSpan(), spanId: '2222222222222222', name: 'new' };
    const reply = await send([{ ...stored, name: 'stored before, other content' }, fresh]);
    expect(reply.status).toBe(200);
    expect(reply.json.partialSuccess.rejectedSpans).toBe('1');
    expect((await queryItems(server, member.api_key, projectId, queueId)).map((item) => item.call_id)).toEqual([fresh.spanId]);
    expect((await readRule(server, member.api_key, projectId, queueId, rule.id)).stats).toMatchObject({ considered: 1, matched: 1, added: 1 });
  });

  describe('refusals', () => {
    const post = (path: string, options: Partial<Parameters<typeof postOtlp>[2]> = {}) =>
      postOtlp(server, path, { body: jsonExport([jsonSpan()]), contentType: 'application/json', key: member.api_key, headers: { 'X-Loupe-Project': 'acme/refusals' }, ...options });

    it('before the body is read: the usual JSON error (401, 403, 405, 413, 415)', async () => {
      const anonymous = await post('/otel/v1/traces', { key: undefined });
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toBe('Basic realm="loupe"');
      expect(anonymous.json).toMatchObject({ code: 'UNAUTHORIZED', reason: expect.stringContaining('Credentials are required') });

      const otherEntity = await post('/otel/v1/traces', { headers: { 'X-Loupe-Project': 'other/stuff' } });
      expect(otherEntity.status).toBe(403);
      expect(otherEntity.json).toMatchObject({ code: 'FORBIDDEN', reason: 'You are not a member of entity "other".' });
      const strangerExplains = await post('/otel/v1/traces/explain', { key: stranger.api_key });
      expect(strangerExplains.status).toBe(403);

      const badHeader = await post('/otel/v1/traces', { headers: { 'X-Loupe-Project': 'no-slash' } });
      expect(badHeader.status).toBe(400);
      expect(badHeader.json.reason).toMatch(/^The header X-Loupe-Project must be/);

      const get = await fetch(`${server.url}/otel/v1/traces`, { headers: { authorization: `Bearer ${member.api_key}` } });
      expect(get.status).toBe(405);
      expect(get.headers.get('allow')).toBe('POST');

      const text = await post('/otel/v1/traces', { contentType: 'text/plain' });
      expect(text.status).toBe(415);
      expect(text.json.code).toBe('UNSUPPORTED_MEDIA_TYPE');
      const brotli = await post('/otel/v1/traces', { headers: { 'X-Loupe-Project': 'acme/refusals', 'content-encoding': 'br' } });
      expect(brotli.status).toBe(415);

      const tooLarge = await post('/otel/v1/traces', { body: Buffer.alloc(32 * 1024 * 1024 + 1), contentType: 'application/x-protobuf' });
      expect(tooLarge.status).toBe(413);
      expect(tooLarge.json).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', reason: 'The request body is larger than the server accepts (33554432 bytes).' });

    });

    it('a body that cannot be read: 400 with an OTLP Status in the request\'s content type', async () => {
      const malformed = await post('/otel/v1/traces', { body: Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01]), contentType: 'application/x-protobuf' });
      expect(malformed.status).toBe(400);
      expect(malformed.headers.get('content-type')).toBe('application/x-protobuf');
      expect(RpcStatus.toObject(RpcStatus.decode(malformed.bytes))).toEqual({ code: 3, message: expect.stringMatching(/^The protobuf body is not a valid ExportTraceServiceRequest/) });

      const notJson = await post('/otel/v1/traces', { body: '{"resourceSpans": [' });
      expect(notJson.status).toBe(400);
      expect(notJson.headers.get('content-type')).toBe('application/json');
      expect(notJson.json).toEqual({ code: 3, message: expect.stringMatching(/^Malformed JSON in the request body/) });

      const wrongShape = await post('/otel/v1/traces', { body: JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: {} }] }] }) });
      expect(wrongShape.json).toEqual({ code: 3, message: 'resourceSpans[0].scopeSpans[0].spans must be an array.' });

      const notGzip = await post('/otel/v1/traces', { headers: { 'X-Loupe-Project': 'acme/refusals', 'content-encoding': 'gzip' } });
      expect(notGzip.status).toBe(400);
      expect(notGzip.json).toEqual({ code: 3, message: 'The request body is not valid gzip (Content-Encoding: gzip).' });

      const noProject = await post('/otel/v1/traces', { headers: {} });
      expect(noProject.status).toBe(400);
      expect(noProject.json).toEqual({ code: 3, message: 'No project: send the header X-Loupe-Project: <entity>/<project>, or the resource attribute loupe.project_id.' });
      const noProjectProto = await post('/otel/v1/traces', { headers: {}, body: Buffer.from(exportBody(tracingSpans(), 'http/protobuf')), contentType: 'application/x-protobuf' });
      expect(RpcStatus.toObject(RpcStatus.decode(noProjectProto.bytes))).toMatchObject({ code: 3, message: expect.stringMatching(/^No project/) });

      const deep = { kvlistValue: { values: [] as object[] } };
      let at = deep;
      for (let i = 0; i < 17; i++) {
        const inner = { kvlistValue: { values: [] as object[] } };
        at.kvlistValue.values.push({ key: `k${i}`, value: inner });
        at = inner;
      }
      const tooDeep = await post('/otel/v1/traces', { body: jsonExport([jsonSpan({ attributes: [{ key: 'deep', value: deep }] })]) });
      expect(tooDeep.status).toBe(400);
      expect(tooDeep.json.message).toMatch(/^An attribute value nests arrays and key-value lists deeper than 16 levels/);
      expect((await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: 'acme/refusals' } })).body.calls).toEqual([]);
    });

    it('a project named by a resource attribute of another entity: 403; a viewer may explain but not write', async () => {
      const other = await post('/otel/v1/traces', { headers: {}, body: jsonExport([jsonSpan()], [{ key: 'loupe.project_id', value: { stringValue: 'other/stuff' } }]) });
      expect(other.status).toBe(403);
      expect(other.json).toMatchObject({ code: 'FORBIDDEN' });
      const viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
      expect((await post('/otel/v1/traces', { key: viewer.api_key })).status).toBe(403);
      const explained = await post('/otel/v1/traces/explain', { key: viewer.api_key });
      expect(explained.status).toBe(200);
      expect(explained.json.calls).toHaveLength(1);
    });

    it('spans with ids of the wrong length, times before 1970 or far in the future are refused in partialSuccess; the rest is stored', async () => {
      const hour = 3_600_000_000_000n;
      const now = BigInt(Date.now()) * 1_000_000n;
      const spans = [
        jsonSpan({ spanId: '00000000000000a1', name: 'kept' }),
        jsonSpan({ spanId: '00000000000000a2', traceId: 'abcd', name: 'short trace id' }),
        jsonSpan({ spanId: '00000000000000a3a3', name: 'long span id' }),
        jsonSpan({ spanId: '00000000000000a4', parentSpanId: 'xyz', name: 'bad parent' }),
        jsonSpan({ spanId: '0000000000000000', name: 'zero span id' }),
        jsonSpan({ spanId: '00000000000000a6', startTimeUnixNano: '-5', name: 'before 1970' }),
        jsonSpan({ spanId: '00000000000000a7', startTimeUnixNano: String(now + 48n * hour), endTimeUnixNano: String(now + 49n * hour), name: 'future' }),
        jsonSpan({ spanId: '00000000000000a8', startTimeUnixNano: '0', name: 'no start' }),
        jsonSpan({ spanId: '00000000000000a9', endTimeUnixNano: String(now - hour), name: 'ends first' }),
        jsonSpan({ spanId: '00000000000000aa', name: '' }),
      ];
      const reply = await post('/otel/v1/traces', { body: jsonExport(spans), headers: { 'X-Loupe-Project': 'acme/bad-spans' } });
      expect(reply.status).toBe(200);
      expect(reply.json.partialSuccess.rejectedSpans).toBe('9');
      const reasons = reply.json.partialSuccess.errorMessage as string;
      expect(reasons).toMatch(/^9 of 10 spans refused: span 00000000000000a2 "short trace id": its trace id is not 16 bytes/);
      for (const expected of [
        '"long span id": its span id is not 8 bytes',
        '"bad parent": its parent span id is not empty or 8 bytes',
        '"zero span id": its span id is not 8 bytes',
        '"before 1970": its start time is not a positive whole number of nanoseconds since 1970',
        '"future": its start time is more than a day past the server\'s clock',
        '"no start": its start time is not a positive whole number',
        '"ends first": it ends before it starts',
        '"": it has no name',
      ]) {
        expect(reasons).toContain(expected);
      }
      const stored = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: 'acme/bad-spans' } });
      expect(stored.body.calls.map((call: { id: string }) => call.id)).toEqual(['00000000000000a1']);
    });

    it('an attribute key __proto__ (in a span, a key-value list or a message) is a plain key', async () => {
      const attributes = [
        { key: '__proto__', value: { stringValue: 'top' } },
        { key: 'nested', value: { kvlistValue: { values: [{ key: '__proto__', value: { intValue: '1' } }] } } },
        { key: 'gen_ai.input.messages', value: { stringValue: '[{"role":"user","parts":[],"__proto__":{"polluted":true}}]' } },
      ];
      const reply = await post('/otel/v1/traces/explain', { body: jsonExport([jsonSpan({ attributes })]) });
      expect(reply.status).toBe(200);
      const [{ call }] = reply.json.calls;
      expect(Object.getOwnPropertyDescriptor(call.attributes, '__proto__')?.value).toBe('top');
      expect(Object.getOwnPropertyDescriptor(call.attributes.nested, '__proto__')?.value).toBe(1);
      expect(Object.getOwnPropertyDescriptor(call.inputs.messages[0], '__proto__')?.value).toEqual({ polluted: true });
      expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
    });

    it('text no database can store (U+0000, an unpaired surrogate) refuses its span, named, on both databases', async () => {
      const spans = [
        jsonSpan({ spanId: '00000000000000b1', name: 'nul\u0000name' }),
        jsonSpan({ spanId: '00000000000000b2', name: 'surrogate', attributes: [{ key: 'note', value: { stringValue: 'x\ud800y' } }] }),
        jsonSpan({ spanId: '00000000000000b3', name: 'fine' }),
      ];
      const reply = await post('/otel/v1/traces', { body: jsonExport(spans), headers: { 'X-Loupe-Project': 'acme/unstorable' } });
      expect(reply.status).toBe(200);
      expect(reply.json.partialSuccess).toEqual({
        rejectedSpans: '2',
        errorMessage:
          '2 of 3 spans refused: span 00000000000000b1 "nul\u0000name": its op_name must not contain U+0000; ' +
          'span 00000000000000b2 "surrogate": its attributes.note must not contain an unpaired surrogate.',
      });
      const stored = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: 'acme/unstorable' } });
      expect(stored.body.calls.map((call: { op_name: string }) => call.op_name)).toEqual(['fine']);
    });

    it('more spans in one request than a batch may hold: 413', async () => {
      const spans = Array.from({ length: 10_001 }, (_, i) => jsonSpan({ spanId: (i + 1).toString(16).padStart(16, '0') }));
      const reply = await post('/otel/v1/traces', { body: jsonExport(spans), gzip: true });
      expect(reply.status).toBe(413);
      expect(reply.json).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', reason: 'The request holds 10001 spans; at most 10000 are accepted in one export. Export fewer at once (OTEL_BSP_MAX_EXPORT_BATCH_SIZE).' });
    });
  });
});

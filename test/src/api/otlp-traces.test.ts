import { SpanKind, SpanStatusCode, context, trace, type Span, type Tracer } from '@opentelemetry/api';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { exportBody, otelEnvironment, postOtlp, spanTime, tracing, type Protocol } from '../harness/otel.ts';
import { TIMESTAMP } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

const SYSTEM = [{ type: 'text', content: 'You answer questions about the weather.' }];
const QUESTION = [{ role: 'user', parts: [{ type: 'text', content: 'Weather in Paris?' }] }];
const TOOL_CALL = [{ role: 'assistant', parts: [{ type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } }], finish_reason: 'tool_call' }];
const ANSWER = [{ role: 'assistant', parts: [{ type: 'text', content: 'Sunny, 21 °C.' }], finish_reason: 'stop' }];

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

  it('answers protobuf with protobuf and JSON with JSON; partialSuccess names spans refused', async () => {
    const projectId = 'acme/partial';
    const otel = tracing({ protocol: 'http/protobuf', env: otelEnvironment(server, { key: member.api_key, project: projectId }) });
    inSpan(otel.tracer, { name: 'first' });
    inSpan(otel.tracer, { name: 'second' });
    const spans = otel.finished();
    const protobuf = await postOtlp(server, '/otel/v1/traces', { body: exportBody(spans, 'http/protobuf'), contentType: 'application/x-protobuf', key: member.api_key, headers: { 'X-Loupe-Project': projectId } });
    expect(protobuf.status, JSON.stringify(server.logs.filter((l) => (l.level as number) >= 50))).toBe(200);
    expect(protobuf.headers.get('content-type')).toBe('application/x-protobuf');
    expect(ProtobufTraceSerializer.deserializeResponse(protobuf.bytes)).toEqual({});
    expect(protobuf.headers.get('loupe-new-records')).toBe('2');
  });
});

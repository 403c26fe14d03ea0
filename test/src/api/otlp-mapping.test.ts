import { SpanKind, type Span } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser, type CreatedKeyForTest } from '../harness/http.ts';
import { exportBody, postOtlp, tracing, type Protocol } from '../harness/otel.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// The mapping table of server/src/domain/otlp/mapping-table.ts, row by row: spans recorded through
// the OpenTelemetry API the way each convention's instrumentation records them (attribute names,
// value encodings, events), serialized by the SDK's own exporter code and explained by the server.
// The mapping does not touch the database: one backend is enough.

const PROJECT = 'acme/mapping';

describe('OTLP mapping table (one row per convention)', () => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  beforeAll(async () => {
    server = await startTestServer('sqlite');
    member = await createUser(server, { entity: 'acme', role: 'member' });
  });
  afterAll(() => server?.stop());

  /** The call /explain shows for one span recorded by `record`, over both encodings (which must agree). */
  async function explained(record: (span: Span) => void): Promise<{ call: any; sources: Record<string, string | null> }> {
    const otel = tracing({ protocol: 'http/protobuf', env: {} });
    const span = otel.tracer.startSpan('llm', { kind: SpanKind.CLIENT });
    record(span);
    span.end();
    const spans: ReadableSpan[] = otel.finished();
    const answers = [];
    for (const [protocol, contentType] of [['http/protobuf', 'application/x-protobuf'], ['http/json', 'application/json']] as [Protocol, string][]) {
      const reply = await postOtlp(server, '/otel/v1/traces/explain', { body: exportBody(spans, protocol), contentType, key: member.api_key, headers: { 'X-Loupe-Project': PROJECT } });
      expect(reply.status, reply.bytes.toString()).toBe(200);
      expect(reply.json.rejected).toEqual([]);
      answers.push(reply.json.calls[0]);
    }
    expect(answers[1]).toEqual(answers[0]);
    return answers[0];
  }

  it('GenAI semantic conventions ≥ 1.37: gen_ai.system_instructions and gen_ai.input.messages → inputs.messages (system first), gen_ai.output.messages → output.messages', async () => {
    const { call, sources } = await explained((span) =>
      span.setAttributes({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o',
        'gen_ai.system_instructions': JSON.stringify([{ type: 'text', content: 'Be brief.' }]),
        'gen_ai.input.messages': JSON.stringify([
          { role: 'user', parts: [{ type: 'text', content: 'What is in this picture?' }, { type: 'uri', modality: 'image', uri: 'https://example.com/cat.png' }] },
        ]),
        'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: 'A cat.' }], finish_reason: 'stop' }]),
        'gen_ai.usage.input_tokens': 812,
        'gen_ai.usage.output_tokens': 3,
      }),
    );
    expect(call.inputs).toEqual({
      messages: [
        { role: 'system', content: [{ type: 'text', content: 'Be brief.' }] },
        { role: 'user', content: [{ type: 'text', content: 'What is in this picture?' }, { type: 'uri', modality: 'image', uri: 'https://example.com/cat.png' }] },
      ],
    });
    expect(call.output).toEqual({ messages: [{ role: 'assistant', content: [{ type: 'text', content: 'A cat.' }], finish_reason: 'stop' }] });
    // The messages are taken out of the attributes; the model and the usage stay under their own names.
    expect(call.attributes.gen_ai).toEqual({ operation: { name: 'chat' }, provider: { name: 'openai' }, request: { model: 'gpt-4o' }, usage: { input_tokens: 812, output_tokens: 3 } });
    expect(sources.inputs).toBe('gen_ai.system_instructions, gen_ai.input.messages (GenAI semantic conventions ≥ 1.37)');
    expect(sources.output).toBe('gen_ai.output.messages (GenAI semantic conventions ≥ 1.37)');
  });

  it('GenAI ≤ 1.36 events: gen_ai.*.message events in order → inputs.messages, gen_ai.choice events by index → output.messages', async () => {
    const { call, sources } = await explained((span) => {
      span.setAttributes({ 'gen_ai.system': 'openai', 'gen_ai.request.model': 'gpt-4o-mini', 'gen_ai.usage.input_tokens': 20, 'gen_ai.usage.output_tokens': 7 });
      span.addEvent('gen_ai.system.message', { 'gen_ai.system': 'openai', content: 'You are a weather bot.' });
      span.addEvent('gen_ai.user.message', { 'gen_ai.system': 'openai', content: 'Weather in Oslo?' });
      span.addEvent('gen_ai.assistant.message', {
        'gen_ai.system': 'openai',
        tool_calls: JSON.stringify([{ id: 'call_9', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }]),
      });
      span.addEvent('gen_ai.tool.message', { 'gen_ai.system': 'openai', content: 'rain, 4 °C', id: 'call_9' });
      span.addEvent('gen_ai.choice', { 'gen_ai.system': 'openai', index: 1, finish_reason: 'stop', message: JSON.stringify({ role: 'assistant', content: 'Second choice.' }) });
      span.addEvent('gen_ai.choice', { 'gen_ai.system': 'openai', index: 0, finish_reason: 'stop', message: JSON.stringify({ content: 'Rainy, 4 °C.' }) });
    });
    expect(call.inputs).toEqual({
      messages: [
        { role: 'system', content: 'You are a weather bot.' },
        { role: 'user', content: 'Weather in Oslo?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
        { role: 'tool', content: 'rain, 4 °C', id: 'call_9' },
      ],
    });
    expect(call.output).toEqual({
      messages: [
        { role: 'assistant', content: 'Rainy, 4 °C.', finish_reason: 'stop' },
        { role: 'assistant', content: 'Second choice.', finish_reason: 'stop' },
      ],
    });
    expect(call.attributes.gen_ai).toEqual({ system: 'openai', request: { model: 'gpt-4o-mini' }, usage: { input_tokens: 20, output_tokens: 7 } });
    expect(sources.inputs).toBe('events gen_ai.system.message, gen_ai.user.message, gen_ai.assistant.message, gen_ai.tool.message (GenAI semantic conventions ≤ 1.36)');
    expect(sources.output).toBe('events gen_ai.choice (GenAI semantic conventions ≤ 1.36)');
  });

  it('GenAI ≤ 1.36 indexed attributes (OpenLLMetry): gen_ai.prompt.N.* → inputs.messages, gen_ai.completion.N.* → output.messages', async () => {
    const { call, sources } = await explained((span) =>
      span.setAttributes({
        'llm.request.type': 'chat',
        'gen_ai.system': 'OpenAI',
        'gen_ai.request.model': 'gpt-4o',
        'gen_ai.response.model': 'gpt-4o-2024-08-06',
        'gen_ai.prompt.0.role': 'system',
        'gen_ai.prompt.0.content': 'Answer in French.',
        'gen_ai.prompt.1.role': 'user',
        'gen_ai.prompt.1.content': JSON.stringify([{ type: 'text', text: 'Hello' }]),
        'gen_ai.completion.0.role': 'assistant',
        'gen_ai.completion.0.content': 'Bonjour',
        'gen_ai.completion.0.finish_reason': 'tool_calls',
        'gen_ai.completion.0.tool_calls.0.id': 'call_1',
        'gen_ai.completion.0.tool_calls.0.name': 'translate',
        'gen_ai.completion.0.tool_calls.0.arguments': '{"to":"fr"}',
        'gen_ai.usage.prompt_tokens': 15,
        'gen_ai.usage.completion_tokens': 2,
        'llm.usage.total_tokens': 17,
      }),
    );
    expect(call.inputs).toEqual({
      messages: [
        { role: 'system', content: 'Answer in French.' },
        { role: 'user', content: [{ type: 'text', text: 'Hello' }] },
      ],
    });
    expect(call.output).toEqual({
      messages: [{ role: 'assistant', content: 'Bonjour', finish_reason: 'tool_calls', tool_calls: [{ id: 'call_1', name: 'translate', arguments: '{"to":"fr"}' }] }],
    });
    expect(call.attributes.gen_ai).toEqual({
      system: 'OpenAI',
      request: { model: 'gpt-4o' },
      response: { model: 'gpt-4o-2024-08-06' },
      usage: { prompt_tokens: 15, completion_tokens: 2 },
    });
    expect(call.attributes.llm).toEqual({ request: { type: 'chat' }, usage: { total_tokens: 17 } });
    expect(sources.inputs).toBe('gen_ai.prompt.{0-1}.* (GenAI semantic conventions ≤ 1.36)');
    expect(sources.output).toBe('gen_ai.completion.{0}.* (GenAI semantic conventions ≤ 1.36)');
  });

  it('OpenInference: llm.input_messages.N.message.* → inputs.messages, llm.output_messages.N.message.* → output.messages; input.value stays', async () => {
    const { call, sources } = await explained((span) =>
      span.setAttributes({
        'openinference.span.kind': 'LLM',
        'llm.model_name': 'claude-sonnet-4',
        'llm.provider': 'anthropic',
        'llm.invocation_parameters': JSON.stringify({ temperature: 0 }),
        'llm.input_messages.0.message.role': 'system',
        'llm.input_messages.0.message.content': 'Be terse.',
        'llm.input_messages.1.message.role': 'user',
        'llm.input_messages.1.message.contents.0.message_content.type': 'text',
        'llm.input_messages.1.message.contents.0.message_content.text': 'Describe this image',
        'llm.input_messages.1.message.contents.1.message_content.type': 'image',
        'llm.input_messages.1.message.contents.1.message_content.image.image.url': 'https://example.com/dog.png',
        'llm.output_messages.0.message.role': 'assistant',
        'llm.output_messages.0.message.tool_calls.0.tool_call.function.name': 'lookup',
        'llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments': '{"q":"dog"}',
        'llm.token_count.prompt': 31,
        'llm.token_count.completion': 9,
        'llm.token_count.total': 40,
        'input.value': '{"messages":[]}',
        'input.mime_type': 'application/json',
      }),
    );
    expect(call.inputs).toEqual({
      messages: [
        { role: 'system', content: 'Be terse.' },
        {
          role: 'user',
          content: [
            { message_content: { type: 'text', text: 'Describe this image' } },
            { message_content: { type: 'image', image: { image: { url: 'https://example.com/dog.png' } } } },
          ],
        },
      ],
    });
    expect(call.output).toEqual({ messages: [{ role: 'assistant', content: null, tool_calls: [{ tool_call: { function: { name: 'lookup', arguments: '{"q":"dog"}' } } }] }] });
    expect(call.attributes.llm).toEqual({
      model_name: 'claude-sonnet-4',
      provider: 'anthropic',
      invocation_parameters: '{"temperature":0}',
      token_count: { prompt: 31, completion: 9, total: 40 },
    });
    // The first rule that finds inputs wins: input.value is not taken, and stays.
    expect(call.attributes.input).toEqual({ value: '{"messages":[]}', mime_type: 'application/json' });
    expect(sources.inputs).toBe('llm.input_messages.{0-1}.message.* (OpenInference)');
    expect(sources.output).toBe('llm.output_messages.{0}.message.* (OpenInference)');
  });

  it('OpenInference without messages: input.value / output.value, parsed when the mime type is application/json', async () => {
    const { call, sources } = await explained((span) =>
      span.setAttributes({
        'openinference.span.kind': 'CHAIN',
        'input.value': JSON.stringify({ question: 'Why is the sky blue?', k: 3 }),
        'input.mime_type': 'application/json',
        'output.value': 'Rayleigh scattering.',
        'output.mime_type': 'text/plain',
      }),
    );
    expect(call.inputs).toEqual({ question: 'Why is the sky blue?', k: 3 });
    expect(call.output).toBe('Rayleigh scattering.');
    expect(call.attributes.input).toBeUndefined();
    expect(call.attributes.output).toBeUndefined();
    expect(call.attributes.openinference).toEqual({ span: { kind: 'CHAIN' } });
    expect(sources.inputs).toBe('input.value (input.mime_type application/json) (OpenInference)');
    expect(sources.output).toBe('output.value (OpenInference)');

    // A text input is kept as {value}: inputs is an object.
    const text = await explained((span) => span.setAttributes({ 'input.value': 'plain question' }));
    expect(text.call.inputs).toEqual({ value: 'plain question' });
    expect(text.call.output).toBeNull();
  });

  it('otherwise inputs and output are null and every attribute stays', async () => {
    const { call, sources } = await explained((span) => span.setAttributes({ 'http.request.method': 'GET', 'http.response.status_code': 200, 'url.full': 'https://example.com/' }));
    expect(call.inputs).toBeNull();
    expect(call.output).toBeNull();
    expect(call.attributes).toMatchObject({ http: { request: { method: 'GET' }, response: { status_code: 200 } }, url: { full: 'https://example.com/' } });
    expect(sources).toMatchObject({ inputs: null, output: null, exception: null });
  });

  it('rows are tried in order: a span that carries GenAI ≥ 1.37 and OpenInference attributes takes GenAI ≥ 1.37, the rest stays', async () => {
    const { call, sources } = await explained((span) =>
      span.setAttributes({
        'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: 'hi' }] }]),
        'llm.input_messages.0.message.role': 'user',
        'llm.input_messages.0.message.content': 'hi',
        'output.value': 'hello',
      }),
    );
    expect(call.inputs).toEqual({ messages: [{ role: 'user', content: [{ type: 'text', content: 'hi' }] }] });
    expect(call.attributes.llm).toEqual({ input_messages: { 0: { message: { role: 'user', content: 'hi' } } } });
    // Each field takes the first row that finds it: here output comes from OpenInference.
    expect(call.output).toBe('hello');
    expect(sources.output).toBe('output.value (OpenInference)');
  });

  it('attribute keys nest by their dots; a key that is both a value and a prefix keeps the longer key whole; values keep their OTLP types', async () => {
    const { call } = await explained((span) =>
      span.setAttributes({
        'a.b': 1,
        'a.b.c': 2,
        'list.of.numbers': [1, 2, 3],
        'flag': true,
        'ratio': 0.5,
      }),
    );
    expect(call.attributes).toMatchObject({ a: { b: 1, 'b.c': 2 }, list: { of: { numbers: [1, 2, 3] } }, flag: true, ratio: 0.5 });
  });
});

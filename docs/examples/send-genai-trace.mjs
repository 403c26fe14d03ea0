// A small GenAI trace sent to Loupe with the OpenTelemetry SDK for Node.js, configured only by the
// standard variables OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_HEADERS (README "Send your
// traces"): an agent span, one LLM call recorded with the GenAI semantic conventions (≥ 1.37) and
// one tool call. In an application:
//   npm install @opentelemetry/api @opentelemetry/sdk-trace @opentelemetry/resources @opentelemetry/exporter-trace-otlp-proto
import { context, diag, DiagConsoleLogger, DiagLogLevel, SpanKind, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';

// Export failures and spans Loupe refused (OTLP's partial success) are reported as warnings.
diag.setLogger(new DiagConsoleLogger(), DiagLogLevel.WARN);

const provider = new TracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'weather-agent' }),
  spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })],
});
const tracer = provider.getTracer('weather-agent', '1.0.0');

const agent = tracer.startSpan('invoke_agent weather', { attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'weather' } });
const inAgent = trace.setSpan(context.active(), agent);

const chat = tracer.startSpan('chat gpt-4o', { kind: SpanKind.CLIENT }, inAgent);
chat.setAttributes({
  'gen_ai.operation.name': 'chat',
  'gen_ai.provider.name': 'openai',
  'gen_ai.request.model': 'gpt-4o',
  'gen_ai.system_instructions': JSON.stringify([{ type: 'text', content: 'You answer questions about the weather.' }]),
  'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: 'Weather in Paris?' }] }]),
  'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: 'Sunny, 21 °C.' }], finish_reason: 'stop' }]),
  'gen_ai.usage.input_tokens': 42,
  'gen_ai.usage.output_tokens': 7,
});
chat.end();

const tool = tracer.startSpan('execute_tool get_weather', { attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'get_weather' } }, inAgent);
tool.end();
agent.end();

await provider.shutdown(); // exports what the batch processor holds
console.log(`TRACE=${agent.spanContext().traceId}`);

import { gzipSync } from 'node:zlib';
import type { Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace';
import { basic } from './http.ts';

// The OpenTelemetry JS SDK with its real OTLP/HTTP exporters, set up the way an application is:
// through the OTEL_EXPORTER_OTLP_* environment variables, read when the exporter is made.

export type Protocol = 'http/protobuf' | 'http/json';

export type Tracing = {
  tracer: Tracer;
  exporter: SpanExporter;
  /** Every span ended so far, as the SDK handed it to the exporter. */
  finished(): ReadableSpan[];
  /** Exports what the batch processor holds (as an application's shutdown does). */
  flush(): Promise<void>;
  /** Exports these spans again through the same exporter (as an exporter's retry does). */
  export(spans: ReadableSpan[]): Promise<void>;
  shutdown(): Promise<void>;
};

/** The environment an application sets to send its traces to Loupe (README "Send your traces"). */
export function otelEnvironment(server: { url: string }, { key, project, compression = 'gzip' }: { key: string; project?: string; compression?: 'gzip' | 'none' }) {
  const headers = [`Authorization=${encodeURIComponent(basic(key))}`];
  if (project !== undefined) headers.push(`X-Loupe-Project=${encodeURIComponent(project)}`);
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: `${server.url}/otel`,
    OTEL_EXPORTER_OTLP_HEADERS: headers.join(','),
    OTEL_EXPORTER_OTLP_COMPRESSION: compression,
  };
}

/**
 * A tracer whose spans go to the server through the real exporter of `protocol`, configured by the
 * environment `env` (set while the exporter is made, then restored).
 */
export function tracing({ protocol, env, resource = {} }: { protocol: Protocol; env: Record<string, string>; resource?: Record<string, string> }): Tracing {
  const saved = Object.fromEntries(Object.keys(env).map((name) => [name, process.env[name]]));
  Object.assign(process.env, env);
  let exporter: SpanExporter;
  try {
    exporter = protocol === 'http/protobuf' ? new ProtoExporter() : new JsonExporter();
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
  const memory = new InMemorySpanExporter();
  const batch = new BatchSpanProcessor({ exporter, scheduledDelayMillis: 60_000 });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'agent-app', ...resource }),
    spanProcessors: [new SimpleSpanProcessor({ exporter: memory }), batch],
  });
  return {
    tracer: provider.getTracer('loupe-tests', '1.2.3'),
    exporter,
    finished: () => memory.getFinishedSpans(),
    flush: () => batch.forceFlush(),
    export: (spans) =>
      new Promise((resolve, reject) =>
        exporter.export(spans, (result) => (result.code === 0 ? resolve() : reject(result.error ?? new Error('export failed')))),
      ),
    shutdown: () => provider.shutdown(),
  };
}

/** An export request's body as the SDK's own serializers write it. */
export function exportBody(spans: ReadableSpan[], protocol: Protocol): Uint8Array {
  const body = (protocol === 'http/protobuf' ? ProtobufTraceSerializer : JsonTraceSerializer).serializeRequest(spans);
  if (!body) throw new Error('the serializer wrote nothing');
  return body;
}

export type OtlpReply = { status: number; headers: Headers; bytes: Buffer; json: any };

/** A raw POST to an OTLP route; the body is gzipped when `gzip`. */
export async function postOtlp(
  server: { url: string },
  path: string,
  { body, contentType, key, headers = {}, gzip = false }: { body: Uint8Array | string; contentType: string; key?: string; headers?: Record<string, string>; gzip?: boolean },
): Promise<OtlpReply> {
  const sent = typeof body === 'string' ? Buffer.from(body) : Buffer.from(body);
  const all: Record<string, string> = { 'content-type': contentType, ...headers };
  if (key) all.authorization ??= basic(key);
  if (gzip) all['content-encoding'] = 'gzip';
  const response = await fetch(server.url + path, { method: 'POST', headers: all, body: gzip ? gzipSync(sent) : sent });
  const bytes = Buffer.from(await response.arrayBuffer());
  const type = response.headers.get('content-type') ?? '';
  return { status: response.status, headers: response.headers, bytes, json: type.includes('json') && bytes.length > 0 ? JSON.parse(bytes.toString('utf8')) : undefined };
}

/** A span's time in the call's form (RFC 3339, milliseconds). */
export function spanTime([seconds, nanos]: [number, number]): string {
  return new Date(seconds * 1000 + Math.floor(nanos / 1_000_000)).toISOString();
}

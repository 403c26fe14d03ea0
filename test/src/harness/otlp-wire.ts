import protobuf from 'protobufjs';

// OTLP protobuf written by field number with protobufjs's writer, from the numbers of the OTLP
// definitions (opentelemetry-proto): bodies no SDK would write (hostile tests, fuzz), made
// independently of the server's decoder.

export function field(number: number, bytes: Uint8Array): Buffer {
  return Buffer.from(protobuf.Writer.create().uint32((number << 3) | 2).bytes(bytes).finish());
}

export function fixed64(number: number, value: bigint): Buffer {
  return Buffer.from(protobuf.Writer.create().uint32((number << 3) | 1).fixed64(value.toString()).finish());
}

export function text(value: string): Buffer {
  return Buffer.from(value, 'utf8');
}

export const nowNs = (): bigint => BigInt(Date.now()) * 1_000_000n;

export type WireSpan = { traceId: Buffer; spanId: Buffer; parentSpanId?: Buffer; name: string; start: bigint; end: bigint; attributes?: Buffer[] };

/** A Span: trace_id 1, span_id 2, parent_span_id 4, name 5, start 7, end 8, attributes 9. */
export function span({ traceId, spanId, parentSpanId, name, start, end, attributes = [] }: WireSpan): Buffer {
  return Buffer.concat([
    field(1, traceId),
    field(2, spanId),
    ...(parentSpanId ? [field(4, parentSpanId)] : []),
    field(5, text(name)),
    fixed64(7, start),
    fixed64(8, end),
    ...attributes.map((kv) => field(9, kv)),
  ]);
}

/** A KeyValue: key 1, value 2 (an AnyValue's bytes). */
export function keyValue(key: string, anyValue: Buffer): Buffer {
  return Buffer.concat([field(1, text(key)), field(2, anyValue)]);
}

/** AnyValue string_value (1). */
export function stringValue(value: string): Buffer {
  return field(1, text(value));
}

/** AnyValue kvlist_value (6) of one KeyValue. */
export function kvlistValue(key: string, inner: Buffer): Buffer {
  return field(6, field(1, keyValue(key, inner)));
}

/** ExportTraceServiceRequest { resource_spans 1 { scope_spans 2 { spans 2 } } }. */
export function exportRequest(spans: Buffer[]): Buffer {
  return field(1, field(2, Buffer.concat(spans.map((s) => field(2, s)))));
}

/** google.rpc.Status, as an OTLP client reads a 400's body. */
export const RpcStatus = protobuf.parse('syntax = "proto3"; package google.rpc; message Status { int32 code = 1; string message = 2; }').root.lookupType('google.rpc.Status');

/** ExportTraceServiceResponse, field names as in the definitions. */
export const ExportResponse = protobuf
  .parse('syntax = "proto3"; message R { P partial_success = 1; } message P { int64 rejected_spans = 1; string error_message = 2; }', { keepCase: true })
  .root.lookupType('R');

import type { Json } from '@loupe/shared';
import { ExportTraceServiceRequest, int64Json, unsignedOf, type LongLike } from './protobuf.ts';
import { OtlpUnreadable, type KeyValues, type ResourceSpans, type SpanEvent } from './spans.ts';

// The messages as protobufjs decodes them (field names in lowerCamelCase; an unset field reads as
// its default from the prototype).
type PbAnyValue = {
  value?: 'stringValue' | 'boolValue' | 'intValue' | 'doubleValue' | 'arrayValue' | 'kvlistValue' | 'bytesValue';
  stringValue: string;
  boolValue: boolean;
  intValue: LongLike;
  doubleValue: number;
  arrayValue: { values: PbAnyValue[] } | null;
  kvlistValue: { values: PbKeyValue[] } | null;
  bytesValue: Uint8Array;
};
type PbKeyValue = { key: string; value: PbAnyValue | null };
type PbEvent = { timeUnixNano: LongLike; name: string; attributes: PbKeyValue[] };
type PbSpan = {
  traceId: Uint8Array;
  spanId: Uint8Array;
  parentSpanId: Uint8Array;
  name: string;
  startTimeUnixNano: LongLike;
  endTimeUnixNano: LongLike;
  attributes: PbKeyValue[];
  events: PbEvent[];
  status: { code: number; message: string } | null;
};
type PbRequest = {
  resourceSpans: Array<{
    resource: { attributes: PbKeyValue[] } | null;
    scopeSpans: Array<{ scope: { name: string; version: string } | null; spans: PbSpan[] }>;
  }>;
};

/**
 * An `ExportTraceServiceRequest` in protobuf, decoded. The bytes were scanned first (wire-scan.ts):
 * their framing is sound and their values nest within bounds.
 */
export function decodeProtobufRequest(bytes: Uint8Array): ResourceSpans[] {
  let message: PbRequest;
  try {
    message = ExportTraceServiceRequest.decode(bytes) as unknown as PbRequest;
  } catch (error) {
    throw new OtlpUnreadable(`The protobuf body is not a valid ExportTraceServiceRequest (${(error as Error).message}).`);
  }
  return message.resourceSpans.map((resourceSpans) => ({
    resource: keyValues(resourceSpans.resource?.attributes ?? []),
    scopes: resourceSpans.scopeSpans.map((scopeSpans) => ({
      scope: { name: scopeSpans.scope?.name ?? '', version: scopeSpans.scope?.version ?? '' },
      spans: scopeSpans.spans.map((span) => ({
        traceId: hex(span.traceId),
        spanId: hex(span.spanId),
        parentSpanId: hex(span.parentSpanId),
        name: span.name,
        startNs: unsignedOf(span.startTimeUnixNano),
        endNs: unsignedOf(span.endTimeUnixNano),
        attributes: keyValues(span.attributes),
        events: span.events.map(
          (event): SpanEvent => ({ name: event.name, timeNs: unsignedOf(event.timeUnixNano), attributes: keyValues(event.attributes) }),
        ),
        status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
      })),
    })),
  }));
}

/** A bytes field as hex ('' when unset: protobufjs's default for bytes is an empty array, not a buffer). */
function hex(bytes: Uint8Array | readonly number[]): string {
  if (bytes.length === 0) return '';
  return ArrayBuffer.isView(bytes) ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex') : Buffer.from(bytes).toString('hex');
}

function keyValues(list: readonly PbKeyValue[]): KeyValues {
  return list.map((kv) => [kv.key, anyValue(kv.value)] as const);
}

/** OTLP's AnyValue as JSON: int64 past 2^53 as decimal text, bytes as base64, non-finite doubles as text. */
function anyValue(value: PbAnyValue | null): Json {
  switch (value?.value) {
    case 'stringValue':
      return value.stringValue;
    case 'boolValue':
      return value.boolValue;
    case 'intValue':
      return int64Json(value.intValue);
    case 'doubleValue':
      return Number.isFinite(value.doubleValue) ? value.doubleValue : String(value.doubleValue);
    case 'arrayValue':
      return (value.arrayValue?.values ?? []).map(anyValue);
    case 'kvlistValue': {
      const object: Record<string, Json> = Object.create(null);
      for (const kv of value.kvlistValue?.values ?? []) if (!(kv.key in object)) object[kv.key] = anyValue(kv.value);
      return object;
    }
    case 'bytesValue':
      return Buffer.from(value.bytesValue).toString('base64');
    default:
      return null;
  }
}

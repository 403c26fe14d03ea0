import type { Json } from '@loupe/shared';

// The spans of an OTLP export request as both encodings decode to (decode-protobuf.ts,
// decode-json.ts): ids as lowercase hex, times as nanoseconds, attribute values as JSON. Nothing is
// checked here beyond the shape of the request; span-calls.ts judges each span.

/**
 * The deepest an attribute value may nest arrays and key-value lists. Its attributes then nest at
 * most this plus the dotted segments of a key (attributes.ts) inside a call, well within the JSON
 * depth a call sent to calls/batch/create may have.
 */
export const MAX_VALUE_DEPTH = 16;

/** Attributes in the order they came; a repeated key keeps its first value when read. */
export type KeyValues = Array<readonly [key: string, value: Json]>;

export type SpanEvent = { name: string; timeNs: bigint | null; attributes: KeyValues };

export type SpanData = {
  /** Lowercase hex as sent (any length; protobuf bytes as hex, a JSON string lowercased). */
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** Nanoseconds since 1970; null when a JSON time is not an integer. 0 is unset. */
  startNs: bigint | null;
  endNs: bigint | null;
  attributes: KeyValues;
  events: SpanEvent[];
  /** OTLP's status: code 2 is ERROR. */
  status: { code: number; message: string };
};

export type ScopeSpans = { scope: { name: string; version: string }; spans: SpanData[] };
export type ResourceSpans = { resource: KeyValues; scopes: ScopeSpans[] };

/** A request that cannot be read at all: 400 with an OTLP Status whose message is this reason. */
export class OtlpUnreadable extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'OtlpUnreadable';
  }
}

/** The number of spans of an OTLP/JSON request as parsed, before it is decoded (a part of the wrong type counts none: decoding refuses it). */
export function jsonSpanCount(body: unknown): number {
  let count = 0;
  const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
  const field = (value: unknown, key: string): unknown => (value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined);
  for (const resource of list(field(body, 'resourceSpans'))) for (const scope of list(field(resource, 'scopeSpans'))) count += list(field(scope, 'spans')).length;
  return count;
}

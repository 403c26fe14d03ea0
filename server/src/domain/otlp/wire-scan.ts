import { Reader } from './protobuf.ts';
import { MAX_VALUE_DEPTH, OtlpUnreadable } from './spans.ts';

/** What a protobuf request holds, counted before it is decoded. */
export type WireCounts = { spans: number; messages: number };

/** Where the scan stops counting (the request is refused then: its size need not be known exactly). */
export type WireBounds = { maxSpans: number; maxMessages: number };

/** The scan stopped at a bound: `counts` are as far as it went. */
export class PastBound extends Error {
  readonly bound: keyof WireBounds;
  readonly counts: WireCounts;
  constructor(bound: keyof WireBounds, counts: WireCounts) {
    super(`past ${bound}`);
    this.bound = bound;
    this.counts = counts;
  }
}

// The nested messages of an export request, by field number: the scan descends into these and skips
// everything else. Together with the message definitions of ./proto (OTLP 1.5.0).
type Kind = 'request' | 'resourceSpans' | 'resource' | 'scopeSpans' | 'scope' | 'span' | 'event' | 'link' | 'keyValue' | 'anyValue' | 'array' | 'kvList';
const NESTED: Record<Kind, Partial<Record<number, Kind>>> = {
  request: { 1: 'resourceSpans' },
  resourceSpans: { 1: 'resource', 2: 'scopeSpans' },
  resource: { 1: 'keyValue' },
  scopeSpans: { 1: 'scope', 2: 'span' },
  scope: { 3: 'keyValue' },
  span: { 9: 'keyValue', 11: 'event', 13: 'link' },
  event: { 3: 'keyValue' },
  link: { 4: 'keyValue' },
  keyValue: { 2: 'anyValue' },
  anyValue: { 5: 'array', 6: 'kvList' },
  array: { 1: 'anyValue' },
  kvList: { 1: 'keyValue' },
};
const LENGTH_DELIMITED = 2;

/**
 * One pass over an `ExportTraceServiceRequest`'s bytes that allocates nothing: it counts the spans
 * (a request past the span cap is refused before anything is decoded) and the nested messages (each
 * one an object once decoded: the heap a decode takes is held before it starts), stopping at the
 * first count past its bound (PastBound) so that a refused request costs little, and refuses
 * malformed framing and attribute values nested deeper than MAX_VALUE_DEPTH — so that the decoder,
 * which recurses once per nested message, always runs on a bounded input.
 */
export function scanExportRequest(bytes: Uint8Array, bounds: WireBounds): WireCounts {
  const reader = Reader.create(bytes);
  const counts: WireCounts = { spans: 0, messages: 0 };
  try {
    scan(reader, { kind: 'request', end: bytes.length, valueDepth: 0, counts, bounds });
  } catch (error) {
    if (error instanceof OtlpUnreadable || error instanceof PastBound) throw error;
    throw new OtlpUnreadable(`The protobuf body is not a valid ExportTraceServiceRequest (${(error as Error).message}).`);
  }
  return counts;
}

type ScanState = { kind: Kind; end: number; valueDepth: number; counts: WireCounts; bounds: WireBounds };

function scan(reader: Reader, { kind, end, valueDepth, counts, bounds }: ScanState): void {
  const nested = NESTED[kind];
  while (reader.pos < end) {
    const tag = reader.uint32();
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 0) throw new Error('field number 0');
    const inner = nested[field];
    if (inner === undefined || wireType !== LENGTH_DELIMITED) {
      reader.skipType(wireType);
      if (reader.pos > end) throw new Error('a field runs past its message');
      continue;
    }
    const length = reader.uint32();
    const innerEnd = reader.pos + length;
    if (innerEnd > end) throw new Error('a message runs past its parent');
    if (++counts.messages > bounds.maxMessages) throw new PastBound('maxMessages', counts);
    if (inner === 'span' && ++counts.spans > bounds.maxSpans) throw new PastBound('maxSpans', counts);
    let depth = valueDepth;
    if (inner === 'array' || inner === 'kvList') {
      depth++;
      if (depth > MAX_VALUE_DEPTH) throw new OtlpUnreadable(`An attribute value nests arrays and key-value lists deeper than ${MAX_VALUE_DEPTH} levels.`);
    }
    scan(reader, { kind: inner, end: innerEnd, valueDepth: depth, counts, bounds });
    reader.pos = innerEnd;
  }
  if (reader.pos !== end) throw new Error('a message ends inside a field');
}

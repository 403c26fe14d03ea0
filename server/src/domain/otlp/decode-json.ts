import type { Json } from '@loupe/shared';
import { MAX_VALUE_DEPTH, OtlpUnreadable, type KeyValues, type ResourceSpans, type SpanData, type SpanEvent } from './spans.ts';

// OTLP/JSON (the OTLP specification's JSON encoding of ExportTraceServiceRequest): protobuf's JSON
// mapping with lowerCamelCase keys, except that trace and span ids are hex strings; 64-bit integers
// are decimal strings or numbers; enums are integers (their names are accepted too). Unknown keys
// are ignored, as the specification asks of receivers.

type Obj = Record<string, unknown>;

const STATUS_CODES: Record<string, number> = { STATUS_CODE_UNSET: 0, STATUS_CODE_OK: 1, STATUS_CODE_ERROR: 2 };

/** An OTLP/JSON export request, parsed from its text, decoded. */
export function decodeJsonRequest(body: unknown): ResourceSpans[] {
  const request = object(body, 'the body');
  return list(request.resourceSpans, 'resourceSpans').map((item, r) => {
    const at = `resourceSpans[${r}]`;
    const resourceSpans = object(item, at);
    const resource = optionalObject(resourceSpans.resource, `${at}.resource`);
    return {
      resource: keyValues(resource?.attributes, `${at}.resource.attributes`),
      scopes: list(resourceSpans.scopeSpans, `${at}.scopeSpans`).map((scopeItem, s) => {
        const scopeAt = `${at}.scopeSpans[${s}]`;
        const scopeSpans = object(scopeItem, scopeAt);
        const scope = optionalObject(scopeSpans.scope, `${scopeAt}.scope`);
        return {
          scope: { name: string(scope?.name, `${scopeAt}.scope.name`), version: string(scope?.version, `${scopeAt}.scope.version`) },
          spans: list(scopeSpans.spans, `${scopeAt}.spans`).map((spanItem, n) => span(spanItem, `${scopeAt}.spans[${n}]`)),
        };
      }),
    };
  });
}

function span(item: unknown, at: string): SpanData {
  const value = object(item, at);
  const status = optionalObject(value.status, `${at}.status`);
  return {
    traceId: string(value.traceId, `${at}.traceId`).toLowerCase(),
    spanId: string(value.spanId, `${at}.spanId`).toLowerCase(),
    parentSpanId: string(value.parentSpanId, `${at}.parentSpanId`).toLowerCase(),
    name: string(value.name, `${at}.name`),
    startNs: nanoseconds(value.startTimeUnixNano),
    endNs: nanoseconds(value.endTimeUnixNano),
    attributes: keyValues(value.attributes, `${at}.attributes`),
    events: list(value.events, `${at}.events`).map((eventItem, e): SpanEvent => {
      const eventAt = `${at}.events[${e}]`;
      const event = object(eventItem, eventAt);
      return { name: string(event.name, `${eventAt}.name`), timeNs: nanoseconds(event.timeUnixNano), attributes: keyValues(event.attributes, `${eventAt}.attributes`) };
    }),
    status: { code: statusCode(status?.code, `${at}.status.code`), message: string(status?.message, `${at}.status.message`) },
  };
}

function keyValues(value: unknown, at: string): KeyValues {
  return list(value, at).map((item, i) => {
    const kv = object(item, `${at}[${i}]`);
    return [string(kv.key, `${at}[${i}].key`), anyValue(kv.value, { at: `${at}[${i}].value`, depth: 0 })] as const;
  });
}

function anyValue(value: unknown, { at, depth }: { at: string; depth: number }): Json {
  if (value === undefined || value === null) return null;
  const av = object(value, at);
  if (av.stringValue !== undefined) return string(av.stringValue, `${at}.stringValue`);
  if (av.boolValue !== undefined) {
    if (typeof av.boolValue !== 'boolean') throw unreadable(`${at}.boolValue`, 'a boolean');
    return av.boolValue;
  }
  if (av.intValue !== undefined) return intValue(av.intValue, `${at}.intValue`);
  if (av.doubleValue !== undefined) return doubleValue(av.doubleValue, `${at}.doubleValue`);
  if (av.bytesValue !== undefined) return string(av.bytesValue, `${at}.bytesValue`);
  if (av.arrayValue !== undefined || av.kvlistValue !== undefined) {
    if (depth + 1 > MAX_VALUE_DEPTH) throw new OtlpUnreadable(`An attribute value nests arrays and key-value lists deeper than ${MAX_VALUE_DEPTH} levels (${at}).`);
    if (av.arrayValue !== undefined) {
      const array = optionalObject(av.arrayValue, `${at}.arrayValue`);
      return list(array?.values, `${at}.arrayValue.values`).map((item, i) => anyValue(item, { at: `${at}.arrayValue.values[${i}]`, depth: depth + 1 }));
    }
    const kvlist = optionalObject(av.kvlistValue, `${at}.kvlistValue`);
    const result: Record<string, Json> = Object.create(null);
    list(kvlist?.values, `${at}.kvlistValue.values`).forEach((item, i) => {
      const kv = object(item, `${at}.kvlistValue.values[${i}]`);
      const key = string(kv.key, `${at}.kvlistValue.values[${i}].key`);
      const inner = anyValue(kv.value, { at: `${at}.kvlistValue.values[${i}].value`, depth: depth + 1 });
      if (!(key in result)) result[key] = inner;
    });
    return result;
  }
  return null;
}

/** int64: a decimal string or an integer; past 2^53 kept as its decimal text (as the protobuf decoder does). */
function intValue(value: unknown, at: string): number | string {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && /^-?\d{1,20}$/.test(value)) {
    const big = BigInt(value);
    if (big < -(2n ** 63n) || big >= 2n ** 63n) throw unreadable(at, 'a 64-bit integer');
    return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big.toString();
  }
  throw unreadable(at, 'an integer (a number or a decimal string)');
}

function doubleValue(value: unknown, at: string): number | string {
  if (typeof value === 'number') return value;
  // protobuf's JSON mapping spells the non-finite doubles as strings; kept as text (JSON has no such number).
  if (value === 'NaN' || value === 'Infinity' || value === '-Infinity') return value;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  throw unreadable(at, 'a number');
}

/** A fixed64 time: a decimal string or a non-negative integer; null (the span is refused) for anything else. */
function nanoseconds(value: unknown): bigint | null {
  if (value === undefined || value === null) return 0n;
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? BigInt(value) : null;
  if (typeof value === 'string' && /^\d{1,20}$/.test(value)) return BigInt(value);
  return null;
}

function statusCode(value: unknown, at: string): number {
  if (value === undefined || value === null) return 0;
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && value in STATUS_CODES) return STATUS_CODES[value]!;
  throw unreadable(at, 'a status code (0, 1, 2 or its name)');
}

function object(value: unknown, at: string): Obj {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw unreadable(at, 'an object');
  return value as Obj;
}

function optionalObject(value: unknown, at: string): Obj | undefined {
  return value === undefined || value === null ? undefined : object(value, at);
}

function list(value: unknown, at: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw unreadable(at, 'an array');
  return value;
}

function string(value: unknown, at: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw unreadable(at, 'a string');
  return value;
}

function unreadable(at: string, wanted: string): OtlpUnreadable {
  return new OtlpUnreadable(`${at} must be ${wanted}.`);
}

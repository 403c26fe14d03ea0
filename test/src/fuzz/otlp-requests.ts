import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { exportRequest, field, keyValue, kvlistValue, span as wireSpan, stringValue } from '../harness/otlp-wire.ts';
import { hostileValue, MARK, mutation, rawBody } from './hostile.ts';

// Requests to the OTLP/HTTP routes (contract 5.9), which are not in the API document: OTLP/JSON
// bodies, valid or mutated; protobuf bodies written by field number, valid or hostile; gzip, and
// gzip bombs; the project from the header, the resource, or nowhere.

export const OTLP_PATHS = ['/otel/v1/traces', '/otel/v1/traces/explain'];

/** What an OTLP request adds to the fuzz's request: its path, headers and body. */
export type OtlpTarget = { operation: string; method: string; path: string; headers: Record<string, string>; body: { shape: string; bytes: Buffer | undefined } };

const hex = (bytes: number) => fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => Buffer.from(b).toString('hex'));

/** An AnyValue in OTLP/JSON: mostly well formed, nested up to 4 levels (the limit is 16). */
const anyValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.string({ maxLength: 40 }).map((s) => ({ stringValue: s })),
    fc.integer().map((i) => ({ intValue: String(i) })),
    fc.constantFrom({ intValue: '9223372036854775807' }, { intValue: 12 }, { doubleValue: 'NaN' }, { doubleValue: 1.5 }, { boolValue: true }, { bytesValue: 'AAEC' }, {}),
    fc.array(tie('value'), { maxLength: 3 }).map((values) => ({ arrayValue: { values } })),
    fc.array(fc.record({ key: fc.string({ maxLength: 12 }), value: tie('value') }), { maxLength: 3 }).map((values) => ({ kvlistValue: { values } })),
  ),
})).value;

const attributeKey = fc.oneof(
  fc.constantFrom('gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.system_instructions', 'gen_ai.request.model', 'gen_ai.prompt.0.content', 'gen_ai.prompt.0.role', 'llm.input_messages.0.message.content', 'input.value', 'input.mime_type', 'a.b', 'a.b.c', '__proto__', '', '.', 'x..y'),
  fc.string({ maxLength: 20 }),
);
const attributeValue = fc.oneof(
  { arbitrary: anyValue, weight: 3 },
  { arbitrary: fc.constantFrom('[{"role":"user","parts":[{"type":"text","content":"hi"}]}]', '[', '{"a":', '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]', 'application/json').map((s) => ({ stringValue: s })), weight: 1 },
);

function jsonSpan(nowNs: bigint) {
  const time = fc.oneof(
    { arbitrary: fc.integer({ min: -3_600, max: 0 }).map((s) => String(nowNs + BigInt(s) * 1_000_000_000n)), weight: 8 },
    { arbitrary: fc.constantFrom('0', '-5', '1', '18446744073709551615', '99999999999999999999999', 'soon', 1.5, -1, null, String(nowNs + 10n ** 15n)), weight: 1 },
  );
  return fc.record(
    {
      traceId: fc.oneof({ arbitrary: hex(16), weight: 8 }, { arbitrary: fc.constantFrom('', 'abcd', '0'.repeat(32), 'G'.repeat(32), 'AB'.repeat(16)), weight: 1 }),
      spanId: fc.oneof({ arbitrary: hex(8), weight: 8 }, { arbitrary: fc.constantFrom('', 'abc', '0'.repeat(16), 'f'.repeat(40)), weight: 1 }),
      parentSpanId: fc.oneof(hex(8), fc.constantFrom('', 'xyz')),
      name: fc.oneof({ arbitrary: fc.constant(MARK), weight: 6 }, { arbitrary: fc.constantFrom('', 'n'.repeat(1025), `${MARK} \u0000`), weight: 1 }),
      kind: fc.constantFrom(0, 1, 3, 9),
      startTimeUnixNano: time,
      endTimeUnixNano: time,
      attributes: fc.array(fc.record({ key: attributeKey, value: attributeValue }), { maxLength: 6 }),
      events: fc.array(
        fc.record({
          name: fc.constantFrom('exception', 'gen_ai.user.message', 'gen_ai.choice', 'other'),
          timeUnixNano: time,
          attributes: fc.array(fc.record({ key: fc.constantFrom('content', 'message', 'index', 'exception.message', 'exception.stacktrace', 'role'), value: attributeValue }), { maxLength: 3 }),
        }),
        { maxLength: 3 },
      ),
      status: fc.record({ code: fc.constantFrom(0, 1, 2, 'STATUS_CODE_ERROR', 7), message: fc.string({ maxLength: 20 }) }),
    },
    { requiredKeys: ['traceId', 'spanId', 'name', 'startTimeUnixNano'] },
  );
}

/** An OTLP/JSON request: one to three resources, their spans, sometimes the project as a resource attribute. */
function jsonRequest(project: fc.Arbitrary<string>) {
  const nowNs = BigInt(Date.now()) * 1_000_000n;
  const resource = fc.record({
    resource: fc.option(
      project.map((p) => ({ attributes: [{ key: 'loupe.project_id', value: { stringValue: p } }, { key: 'service.name', value: { stringValue: 'fuzz' } }] })),
      { nil: undefined },
    ),
    scopeSpans: fc.array(fc.record({ scope: fc.record({ name: fc.string({ maxLength: 10 }), version: fc.constantFrom('1', '') }), spans: fc.array(jsonSpan(nowNs), { minLength: 1, maxLength: 4 }) }), {
      minLength: 1,
      maxLength: 2,
    }),
  });
  return fc.array(resource, { minLength: 1, maxLength: 3 }).map((resourceSpans) => ({ resourceSpans }));
}

/** Protobuf bodies: valid ones written by field number, and the hostile ones of issue 26 point 6, kept small enough for a quick run. */
const protobufBody: fc.Arbitrary<{ shape: string; bytes: Buffer }> = fc.oneof(
  { arbitrary: fc.integer({ min: 1, max: 20 }).map((n) => ({ shape: `protobuf ${n} spans`, bytes: exportRequest(Array.from({ length: n }, () => validWireSpan())) })), weight: 4 },
  fc.constantFrom(
    { shape: 'protobuf random bytes', bytes: () => randomBytes(2048) },
    { shape: 'protobuf truncated', bytes: () => exportRequest([validWireSpan()]).subarray(0, 40) },
    { shape: 'protobuf length past the end', bytes: () => Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x07]) },
    { shape: 'protobuf field 0', bytes: () => Buffer.from([0x02, 0x00]) },
    { shape: 'protobuf group tags', bytes: () => Buffer.from([0x0b, 0x0b, 0x0b, 0x0c]) },
    { shape: 'protobuf nested 200 deep', bytes: () => exportRequest([wireSpanWith({ attributes: [keyValue('deep', nested(200))] })]) },
    { shape: 'protobuf nested 16 deep', bytes: () => exportRequest([wireSpanWith({ attributes: [keyValue('deep', nested(16))] })]) },
    { shape: 'protobuf 10,001 tiny spans', bytes: () => exportRequest(Array.from({ length: 10_001 }, () => Buffer.from([0x2a, 0x01, 0x78]))) },
    { shape: 'protobuf wrong id lengths', bytes: () => exportRequest([wireSpanWith({ traceId: randomBytes(1000), spanId: randomBytes(3) })]) },
    { shape: 'protobuf far future', bytes: () => exportRequest([wireSpanWith({ start: 2n ** 64n - 1n })]) },
    { shape: 'protobuf empty', bytes: () => Buffer.alloc(0) },
  ).map(({ shape, bytes }) => ({ shape, bytes: bytes() })),
);

function validWireSpan(): Buffer {
  return wireSpanWith({});
}

function wireSpanWith(overrides: Partial<Parameters<typeof wireSpan>[0]>): Buffer {
  const now = BigInt(Date.now()) * 1_000_000n;
  return wireSpan({
    traceId: randomBytes(16),
    spanId: randomBytes(8),
    name: 'fuzz-protobuf',
    start: now,
    end: now,
    attributes: [keyValue('gen_ai.input.messages', stringValue('[{"role":"user","parts":[{"type":"text","content":"hi"}]}]')), keyValue('n', field(3, Buffer.alloc(0)))],
    ...overrides,
  });
}

/** An AnyValue of key-value lists `depth` deep. */
function nested(depth: number): Buffer {
  let value = stringValue('leaf');
  for (let i = 0; i < depth; i++) value = kvlistValue('k', value);
  return value;
}

/** A few KB of gzip that inflate past the body limit; made once. */
let bomb: Buffer | undefined;
const gzipBomb = () => (bomb ??= gzipSync(Buffer.alloc(40 * 1024 * 1024)));

/** An OTLP request: path, content type, encoding, project header and body. */
export function otlpRequestArbitrary({ project, otherProject }: { project: string; otherProject: string }): fc.Arbitrary<OtlpTarget> {
  const projectValue = fc.oneof(
    { arbitrary: fc.constant(project), weight: 10 },
    { arbitrary: fc.constantFrom(otherProject, 'no-slash', `${project}/x`, '', 'nobody/x'), weight: 1 },
  );
  const jsonBody = fc.oneof(
    { arbitrary: jsonRequest(projectValue).map((v) => ({ shape: 'otlp/json', bytes: Buffer.from(JSON.stringify(v)) })), weight: 5 },
    {
      arbitrary: fc.tuple(jsonRequest(projectValue), fc.array(mutation, { minLength: 1, maxLength: 2 })).map(([v, ms]) => ({
        shape: `otlp/json ${ms.map((m) => m.name).join('+')}`,
        bytes: Buffer.from(JSON.stringify(ms.reduce<unknown>((value, m) => m.apply(value), v)) ?? 'null'),
      })),
      weight: 3,
    },
    { arbitrary: fc.tuple(jsonRequest(projectValue), rawBody).map(([v, raw]) => ({ shape: `otlp/json ${raw.name}`, bytes: raw.bytes(JSON.stringify(v)) })), weight: 1 },
  );
  return fc
    .record({
      path: fc.oneof({ arbitrary: fc.constantFrom(...OTLP_PATHS), weight: 8 }, { arbitrary: fc.constantFrom('/otel/v1/traces/', '/OTEL/V1/TRACES', '/otel/v1/traces/explain/x', '/otel/v1/logs'), weight: 1 }),
      method: fc.oneof({ arbitrary: fc.constant('POST'), weight: 12 }, { arbitrary: fc.constantFrom('GET', 'PUT', 'OPTIONS'), weight: 1 }),
      format: fc.constantFrom('json', 'protobuf'),
      typeSpelling: fc.oneof({ arbitrary: fc.constant(0), weight: 6 }, { arbitrary: fc.constantFrom(1, 2, 3), weight: 1 }),
      encoding: fc.oneof({ arbitrary: fc.constant('none'), weight: 3 }, { arbitrary: fc.constantFrom('gzip', 'gzip header only', 'gzip bomb', 'br'), weight: 1 }),
      header: fc.oneof({ arbitrary: projectValue, weight: 5 }, { arbitrary: fc.constant(undefined), weight: 1 }),
      oddHeaderValue: fc.oneof({ arbitrary: fc.constant(undefined), weight: 15 }, { arbitrary: hostileValue.map((v) => String(JSON.stringify(v)).slice(0, 200)), weight: 1 }),
    })
    .chain((r) => (r.format === 'json' ? jsonBody : protobufBody).map((body) => ({ ...r, body })))
    .map(({ path, method, format, typeSpelling, encoding, header, oddHeaderValue, body }) => {
      const types = format === 'json' ? ['application/json', 'application/json; charset=utf-8', 'text/plain', 'application/JSON'] : ['application/x-protobuf', 'application/protobuf', 'application/octet-stream', 'APPLICATION/X-PROTOBUF'];
      const headers: Record<string, string> = { 'content-type': types[typeSpelling]! };
      if (header !== undefined) headers['x-loupe-project'] = header;
      if (oddHeaderValue !== undefined) headers['x-loupe-project'] = oddHeaderValue.replace(/[^\u0020-\u007e]/g, '?');
      let bytes = body.bytes;
      let shape = body.shape;
      if (encoding !== 'none') {
        headers['content-encoding'] = encoding === 'br' ? 'br' : 'gzip';
        if (encoding === 'gzip') bytes = gzipSync(bytes);
        if (encoding === 'gzip bomb') bytes = gzipBomb();
        shape += ` (${encoding})`;
      }
      return { operation: `otlp ${path}`, method, path, headers, body: { shape, bytes } };
    });
}

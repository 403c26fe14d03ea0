import fc from 'fast-check';

// Hostile shapes: values, mutations of otherwise valid bodies, raw bodies no JSON serializer
// would write, path segments, and headers.

/** Stands for the request's unique marker until the request is sent (see markers.ts). */
export const MARK = 'FUZZMARK';

const deep = (depth: number, open: string, close: string) => open.repeat(depth) + close.repeat(depth);

/** A JSON value of the wrong kind, or an awkward one of the right kind. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1.5, -0, 1e308, 2 ** 53 + 1, '', ' ', 'null', '0', '1e3', 'true', '[]', '{}', 'fza/x', '../..', '%00'),
  fc.constantFrom('\u0000', 'a\u0000b', '\ud800', 'x\udfffy', '\ufeff', '\u202e', '\uffff', '😀'.repeat(100)),
  fc.constantFrom([], {}, [null], [[[]]], { '': null }),
  fc.integer({ min: 1, max: 300 }).map((n) => 'x'.repeat(n * 1024)),
  fc.integer({ min: 60, max: 70 }).map((d) => JSON.parse(deep(d, '[', ']')) as unknown),
  fc.integer({ min: 60, max: 70 }).map((d) => JSON.parse(deep(d, '{"a":', '}').replace(/\}+$/, (m) => 'null' + m)) as unknown),
  fc.jsonValue({ maxDepth: 3 }),
);

type Json = unknown;
type Path = (string | number)[];

/** Every path to a node of a JSON value, the root first. */
function paths(value: Json, at: Path = [], out: Path[] = []): Path[] {
  out.push(at);
  if (Array.isArray(value)) value.forEach((v, i) => paths(v, [...at, i], out));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) paths(v, [...at, k], out);
  return out;
}

function replaceAt(root: Json, path: Path, replace: (node: Json) => Json | typeof DELETE): Json {
  if (path.length === 0) {
    const next = replace(root);
    return next === DELETE ? {} : next;
  }
  const parent = path.slice(0, -1).reduce<any>((node, key) => node[key], root);
  const key = path[path.length - 1]!;
  const next = replace(parent[key]);
  if (next === DELETE) {
    if (Array.isArray(parent)) parent.splice(key as number, 1);
    else delete parent[key];
  } else parent[key] = next;
  return root;
}
const DELETE = Symbol('delete');

export type Mutation = { name: string; apply(value: Json): Json };

/** One change to a valid body at a node picked by index: what a careless or hostile client sends. */
export const mutation: fc.Arbitrary<Mutation> = fc
  .tuple(
    fc.nat(),
    fc.oneof(
      fc.constant<[string, (node: Json) => Json | typeof DELETE]>(['drop', () => DELETE]),
      hostileValue.map<[string, (node: Json) => Json]>((v) => ['wrong-type', () => v]),
      fc.constant<[string, (node: Json) => Json]>(['null', () => null]),
      fc.constant<[string, (node: Json) => Json]>(['number-as-string', (n) => (typeof n === 'number' ? String(n) : typeof n === 'string' && n.trim() !== '' && !Number.isNaN(Number(n)) ? Number(n) : `${JSON.stringify(n) ?? ''}`)]),
      fc.constant<[string, (node: Json) => Json]>(['wrap-in-array', (n) => [n]]),
      fc.constantFrom('\u0000', '\ud800', '\udc00x', '\u2028').map<[string, (node: Json) => Json]>((c) => ['odd-char', (n) => (typeof n === 'string' ? n + c + n : c)]),
      fc
        .tuple(fc.constantFrom('unknown_field', '__proto__', 'constructor', 'prototype', '', 'project_id ', 'ID'), hostileValue)
        .map<[string, (node: Json) => Json]>(([key, v]) => [
          'extra-key',
          (n) => (n && typeof n === 'object' && !Array.isArray(n) ? withOwnKey(n as object, key, v) : withOwnKey({}, key, v)),
        ]),
    ),
  )
  .map(([index, [name, replace]]) => ({
    name,
    apply(value: Json) {
      const copy = structuredClone(value);
      const all = paths(copy);
      return replaceAt(copy, all[index % all.length]!, replace);
    },
  }));

/** Sets a key as an own property, `__proto__` included (as JSON.parse would). */
function withOwnKey(target: object, key: string, value: unknown): object {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  return target;
}

/** Bytes of a body that is not what it claims to be, made from a valid body's JSON text. */
export const rawBody: fc.Arbitrary<{ name: string; bytes: (validText: string) => Buffer }> = fc.oneof(
  fc.constantFrom('null', '0', '-1', '"text"', 'true', '[]', '[{}]', '""', ' ', '\n', 'NaN', 'Infinity', '{,}', "{'a':1}", '{"a":1,}', '{"a":1}/*c*/', '{"a":1}{"b":2}').map((t) => ({
    name: `top-level ${JSON.stringify(t)}`,
    bytes: () => Buffer.from(t),
  })),
  fc.double({ min: 0, max: 1, noNaN: true }).map((at) => ({
    name: 'truncated',
    bytes: (valid: string) => Buffer.from(valid.slice(0, Math.floor(valid.length * at))),
  })),
  fc
    .tuple(fc.constantFrom([0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xc0, 0xaf], [0xe2, 0x82], [0x80]), fc.double({ min: 0, max: 1, noNaN: true }))
    .map(([bad, at]) => ({
      name: `invalid UTF-8 ${Buffer.from(bad).toString('hex')}`,
      bytes: (valid: string) => {
        // Inside a string literal where there is one, else anywhere.
        const quotes = [...valid.matchAll(/"/g)].map((m) => m.index! + 1);
        const cut = quotes.length ? quotes[Math.floor(at * quotes.length)]! : Math.floor(at * valid.length);
        const text = Buffer.from(valid);
        const offset = Buffer.byteLength(valid.slice(0, cut));
        return Buffer.concat([text.subarray(0, offset), Buffer.from(bad), text.subarray(offset)]);
      },
    })),
  fc.constant({ name: 'byte-order mark', bytes: (valid: string) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(valid)]) }),
  fc.constant({ name: 'UTF-16', bytes: (valid: string) => Buffer.from(valid, 'utf16le') }),
  fc.constantFrom(63, 64, 65, 128, 10_000, 100_000).chain((depth) =>
    fc.constantFrom(
      { name: `arrays ${depth} deep`, bytes: () => Buffer.from(deep(depth, '[', ']')) },
      { name: `objects ${depth} deep in project_id`, bytes: () => Buffer.from(`{"project_id":${deep(depth - 1, '{"a":', '}').replace(/\}+$/, (m) => '1' + m)}}`) },
      { name: `unclosed ${depth} deep`, bytes: () => Buffer.from('['.repeat(depth)) },
    ),
  ),
  fc.constantFrom(1_000, 20_000).map((n) => ({
    name: `${n} keys`,
    bytes: () => Buffer.from(`{${Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(',')}}`),
  })),
  fc.constant({ name: 'duplicate project_id', bytes: (valid: string) => Buffer.from(valid.replace(/^\{/, '{"project_id":{"$ne":null},')) }),
);

/** A path segment a router, a decoder or a database may choke on, percent-encoded or not. */
export const hostileSegment: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('%', '%zz', '%00', '%2F', '%2f..%2f', '..', '.', '%2e%2e', '%ED%A0%80', '%C0%AF', '%FF', '%F0%9F%98%80', '%0A', '%20', '+', ';a=b', '%3F', '%23', 'null', 'undefined', '-1', '0', '1e400'),
  fc.integer({ min: 129, max: 4000 }).map((n) => 'q'.repeat(n)),
  fc.string({ maxLength: 40, unit: 'binary' }).map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, ''))),
  fc.string({ maxLength: 20, unit: 'grapheme-ascii' }).map((s) => s.replace(/[/?#\s]/g, '_')).filter((s) => s.length > 0),
);

/** Content-Type values: mostly JSON, spelled every way; sometimes something else. */
export const contentType: fc.Arbitrary<string | undefined> = fc.oneof(
  { arbitrary: fc.constant('application/json'), weight: 12 },
  {
    arbitrary: fc.constantFrom(
      undefined,
      'application/json; charset=utf-8',
      'APPLICATION/JSON;CHARSET="UTF-8"',
      'application/json; charset=latin1',
      'application/json; charset=utf-16',
      'application/json;;;',
      'application/jsonx',
      'application/json-patch+json',
      'text/plain',
      'text/json',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      '',
      '*/*',
    ),
    weight: 3,
  },
);

/** Extra headers: compressed bodies, garbage request ids, long values under Node's 16 KiB header limit. */
export const oddHeaders: fc.Arbitrary<Record<string, string>> = fc.record(
  {
    'content-encoding': fc.constantFrom('gzip', 'br', 'deflate, gzip', 'identity', 'IDENTITY ', 'x-unknown'),
    'x-request-id': fc.oneof(
      fc.string({ maxLength: 300, unit: 'grapheme-ascii' }),
      fc.integer({ min: 1, max: 4 }).map((n) => 'r'.repeat(n * 1000)),
      fc.constantFrom('', ' ', '\t', 'é', '\u00ff\u00fe', '../../etc/passwd', '<script>', '"; drop table calls; --'),
    ),
    'x-forwarded-for': fc.constantFrom('203.0.113.9', 'garbage', '::1, 10.0.0.1', ''),
    accept: fc.constantFrom('text/html', 'application/xml', '*/*', '', 'application/json;q=0'),
    'x-long': fc.integer({ min: 1, max: 8 }).map((n) => 'v'.repeat(n * 1000)),
    'if-none-match': fc.constantFrom('*', 'W/"x"'),
    range: fc.constantFrom('bytes=0-0', 'bytes=-1'),
  },
  { requiredKeys: [] },
);

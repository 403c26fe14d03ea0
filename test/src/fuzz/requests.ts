import fc from 'fast-check';
import { contentType, hostileSegment, MARK, mutation, oddHeaders, rawBody } from './hostile.ts';
import { otlpRequestArbitrary } from './otlp-requests.ts';
import { schemaArbitrary, type JsonSchema, type Overrides } from './schema-arbitrary.ts';

export type CallerName = 'anonymous' | 'bad-key' | 'member' | 'viewer' | 'other-entity';
export type Key = { username: string; api_key: string };

/** What the generators know of the server: its users, the project they target, ids that exist. */
export type World = {
  /** The project every caller targets: `member` and `viewer` belong to its entity, `other-entity` does not. */
  project: string;
  /** A project of the other entity (where `other-entity` is a member). */
  otherProject: string;
  keys: Record<'member' | 'viewer' | 'other-entity', Key>;
  ids: { queue_id: string[]; item_id: string[]; call_id: string[]; feedback_id: string[]; spec_ref: string[] };
};

/** One request as sent; `[fc.toStringMethod]` prints it as a reproduction when a property fails. */
export type FuzzRequest = {
  caller: CallerName;
  /** The operationId, `trpc <procedure>`, or `random`. */
  operation: string;
  /** How the body was made: valid, which mutations, or which raw shape. */
  shape: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
  /** Sent without Content-Length (Transfer-Encoding: chunked). */
  chunked: boolean;
};

type OpenApi = {
  paths: Record<string, Record<string, { operationId?: string; parameters?: { name: string; in: string }[]; requestBody?: { content: Record<string, { schema: JsonSchema }> } }>>;
  components: { schemas: Record<string, JsonSchema> };
};

type Operation = { id: string; method: string; template: string; pathParams: string[]; queryParams: string[]; body: JsonSchema | undefined };

export function operationsOf(doc: OpenApi): Operation[] {
  const operations: Operation[] = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const params = op.parameters ?? [];
      operations.push({
        id: op.operationId ?? `${method} ${template}`,
        method: method.toUpperCase(),
        template,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: params.filter((p) => p.in === 'query').map((p) => p.name),
        body: op.requestBody?.content['application/json']?.schema,
      });
    }
  }
  return operations;
}

/**
 * Where a writing operation's body carries the request's marker, in a field that is stored as
 * sent when the request succeeds: after the run, no failed request's marker may be in the database.
 */
const MARKED_FIELDS: Record<string, (body: Record<string, any>) => void> = {
  'calls-batchCreate': (b) => b.batch?.forEach((call: Record<string, unknown>) => (call.op_name = MARK)),
  'feedback-create': (b) => (b.feedback_type = MARK),
  'feedback-replace': (b) => (b.feedback_type = MARK),
  'feedback-batchCreate': (b) => b.batch?.forEach((f: Record<string, unknown>) => (f.feedback_type = MARK)),
  'annotationQueues-create': (b) => (b.name = MARK),
  'annotationQueues-update': (b) => (b.description = MARK),
  'annotationSpecs-create': (b) => (b.name = MARK),
  'annotationQueues-items-add': (b) => (b.display_fields = [MARK]),
};

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND'];
const PUBLIC_PATHS = ['/', '/health', '/ready', '/metrics', '/openapi.json', '/inference/router/partner/models', '/trpc', '/trpc/', '/favicon.ico', '/calls', '/annotation_queues/'];
const MODEL_QUERIES = ['', '?feature=tools', '?input_modality=text&output_modality=image', '?quantization=fp8&quantization=int4', '?feature[]=x', '?input_modality[a]=b', '?feature=%ZZ', '?quantization=' + 'q'.repeat(3000)];

function basic(key: Key, username = key.username): string {
  return `Basic ${Buffer.from(`${username}:${key.api_key}`).toString('base64')}`;
}

function authorization(world: World, caller: CallerName): fc.Arbitrary<string | undefined> {
  if (caller === 'anonymous') return fc.constant(undefined);
  if (caller === 'bad-key') {
    const k = world.keys.member;
    return fc.oneof(
      fc.constantFrom('Basic', 'Bearer', 'Bearer ', 'Basic !!!', 'Digest abc', `Basic ${Buffer.from(`${k.username}:`).toString('base64')}`, `Bearer ${k.api_key}x`, basic({ ...k, username: 'someone-else' })),
      fc.string({ maxLength: 200, unit: 'grapheme-ascii' }).map((s) => `Bearer ${s}`),
      fc.string({ maxLength: 200, unit: 'binary-ascii' }).map((s) => `Basic ${Buffer.from(s, 'latin1').toString('base64')}`),
    );
  }
  const key = world.keys[caller];
  return fc.constantFrom(basic(key), `Bearer ${key.api_key}`, `bearer  ${key.api_key}`);
}

const caller: fc.Arbitrary<CallerName> = fc.oneof(
  { arbitrary: fc.constant<CallerName>('anonymous'), weight: 1 },
  { arbitrary: fc.constant<CallerName>('bad-key'), weight: 1 },
  { arbitrary: fc.constant<CallerName>('member'), weight: 5 },
  { arbitrary: fc.constant<CallerName>('viewer'), weight: 2 },
  { arbitrary: fc.constant<CallerName>('other-entity'), weight: 2 },
);

/** A known id most of the time, else anything. */
function idFrom(pool: string[], pattern = /^[A-Za-z0-9._:-]{1,128}$/): fc.Arbitrary<string> {
  const known = pool.length ? [{ arbitrary: fc.constantFrom(...pool), weight: 6 }] : [];
  return fc.oneof(...known, { arbitrary: fc.stringMatching(pattern), weight: 1 }, { arbitrary: fc.uuid(), weight: 1 });
}

function overrides(world: World): Overrides {
  const project = fc.oneof(
    { arbitrary: fc.constant(world.project), weight: 12 },
    { arbitrary: fc.constant(world.otherProject), weight: 1 },
    {
      arbitrary: fc.constantFrom(world.project.toUpperCase(), world.project.split('/')[0]!, `${world.project}/y`, `/${world.project}`, `${world.project.split('/')[0]}/`, '', `${world.project.split('/')[0]}/${'p'.repeat(300)}`, `${world.project}\u0000`, 'nobody/x'),
      weight: 1,
    },
  );
  const some = (arb: fc.Arbitrary<string>) => fc.array(arb, { minLength: 1, maxLength: 4 });
  return {
    project_id: project,
    queue_id: idFrom(world.ids.queue_id),
    call_ids: some(idFrom(world.ids.call_id)),
    queue_ids: some(idFrom(world.ids.queue_id)),
    ids: some(idFrom(world.ids.feedback_id)),
    feedback_id: idFrom(world.ids.feedback_id),
    refs: some(idFrom(world.ids.spec_ref)),
  };
}

type Body = { shape: string; bytes: Buffer | undefined };

/** Bodies for an operation: valid, valid then mutated (one to three times), or raw bytes that are not what they claim. */
function bodies(valid: fc.Arbitrary<unknown>): fc.Arbitrary<Body> {
  return fc.oneof(
    { arbitrary: valid.map((v) => ({ shape: 'valid', bytes: Buffer.from(JSON.stringify(v)) })), weight: 5 },
    {
      arbitrary: fc.tuple(valid, fc.array(mutation, { minLength: 1, maxLength: 3 })).map(([v, ms]) => ({
        shape: ms.map((m) => m.name).join('+'),
        bytes: Buffer.from(JSON.stringify(ms.reduce((value, m) => m.apply(value), v)) ?? 'null'),
      })),
      weight: 4,
    },
    { arbitrary: fc.tuple(valid, rawBody).map(([v, raw]) => ({ shape: raw.name, bytes: raw.bytes(JSON.stringify(v)) })), weight: 2 },
  );
}

/** The arbitrary of every request the fuzz sends: operations of the OpenAPI document, the typed door, and random paths. */
export function requestArbitrary(doc: OpenApi, world: World): fc.Arbitrary<FuzzRequest> {
  const operations = operationsOf(doc);
  const components = doc.components.schemas;
  const over = overrides(world);
  const paramValue = (name: string): fc.Arbitrary<string> => {
    const pool = name === 'queue_id' ? world.ids.queue_id : name === 'item_id' ? world.ids.item_id : name === 'call_id' ? world.ids.call_id : [];
    return fc.oneof({ arbitrary: idFrom(pool).map(encodeURIComponent), weight: 6 }, { arbitrary: hostileSegment, weight: 1 });
  };
  const validBody = (op: Operation): fc.Arbitrary<unknown> =>
    schemaArbitrary(op.body ?? { type: 'object', properties: {} }, components, over).map((v) => {
      if (v && typeof v === 'object' && !Array.isArray(v)) MARKED_FIELDS[op.id]?.(v as Record<string, unknown>);
      return v;
    });
  const query = (op: Operation): fc.Arbitrary<string> => {
    if (op.queryParams.length === 0) return fc.constant('');
    if (!op.queryParams.includes('project_id')) return fc.constantFrom(...MODEL_QUERIES);
    const p = encodeURIComponent(world.project);
    return fc.oneof(
      { arbitrary: fc.constant(`?project_id=${p}`), weight: 8 },
      { arbitrary: fc.constantFrom('', `?project_id=${p}&project_id=${p}`, `?project_id[a]=${p}`, `?project_id=${encodeURIComponent(world.otherProject)}`, '?project_id=%ZZ', '?project_id=', `?project_id=${p}&extra=1`), weight: 2 },
      { arbitrary: hostileSegment.map((s) => `?project_id=${s}`), weight: 1 },
    );
  };
  const pathVariant = fc.oneof(
    { arbitrary: fc.constant((p: string) => p), weight: 12 },
    fc.constantFrom(
      (p: string) => p.replace(/^[^?]*/, (m) => `${m}/`),
      (p: string) => p.replace(/^[^?]*/, (m) => m.toUpperCase()),
      (p: string) => `/${p}`,
      (p: string) => p.replace(/^[^?]*/, (m) => `${m}/extra`),
      (p: string) => p.replace(/^[^?]*/, (m) => m.replaceAll('_', '%5F')),
    ),
  );

  const restRequest = fc
    .constantFrom(...operations)
    .chain((op) =>
      fc.record({
        op: fc.constant(op),
        method: fc.oneof({ arbitrary: fc.constant(op.method), weight: 12 }, { arbitrary: fc.constantFrom(...METHODS), weight: 1 }),
        params: fc.tuple(...op.pathParams.map(paramValue)),
        query: op.body ? fc.constant('') : query(op),
        variant: pathVariant,
        body: op.body ? bodies(validBody(op)) : fc.oneof({ arbitrary: fc.constant<Body>({ shape: 'none', bytes: undefined }), weight: 8 }, { arbitrary: bodies(validBody(op)), weight: 1 }),
      }),
    )
    .map(({ op, method, params, query, variant, body }) => {
      let i = 0;
      const path = variant(op.template.replace(/\{[^}]+\}/g, () => params[i++]!) + query);
      return { operation: op.id, method, path, body };
    });

  // The typed door: the same inputs, one procedure or a batch (at most 10 are admitted).
  const trpcRequest = fc
    .tuple(fc.array(fc.constantFrom(...operations.filter((op) => op.id.includes('-'))), { minLength: 1, maxLength: 12 }), fc.constantFrom('POST', 'GET'), fc.boolean())
    .chain(([ops, method, batched]) => {
      const inputs = ops.map((op) =>
        fc.tuple(validBody(op), fc.tuple(...[...op.pathParams, ...op.queryParams].map((name) => (name === 'project_id' ? over.project_id! : paramValue(name).map(decodeSafe))))).map(([body, params]) => {
          const names = [...op.pathParams, ...op.queryParams];
          const input = body && typeof body === 'object' && !Array.isArray(body) ? { ...body } : {};
          names.forEach((name, j) => ((input as Record<string, unknown>)[name] = params[j]));
          return input;
        }),
      );
      const procedures = ops.map((op) => op.id.replaceAll('-', '.')).join(',');
      const batch = batched || ops.length > 1;
      return fc.tuple(fc.tuple(...inputs), fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: mutation, weight: 2 })).map(([values, mutate]) => {
        let input: unknown = batch ? Object.fromEntries(values.map((v, j) => [String(j), v])) : values[0];
        if (mutate) input = mutate.apply(input);
        const json = JSON.stringify(input) ?? 'null';
        const query = (batch ? '?batch=1' : '') + (method === 'GET' ? `${batch ? '&' : '?'}input=${encodeURIComponent(json)}` : '');
        return {
          operation: `trpc ${procedures}`,
          method,
          path: `/trpc/${procedures}${query}`,
          body: { shape: mutate ? mutate.name : 'valid', bytes: method === 'GET' ? undefined : Buffer.from(json) } satisfies Body,
        };
      });
    });

  const randomRequest = fc
    .record({
      method: fc.constantFrom(...METHODS),
      path: fc.oneof(
        fc.constantFrom(...PUBLIC_PATHS),
        fc.constantFrom(...MODEL_QUERIES).map((q) => `/inference/router/partner/models${q}`),
        fc.array(hostileSegment, { minLength: 1, maxLength: 4 }).map((segments) => `/${segments.join('/')}`),
        fc.array(fc.constantFrom('calls.query', 'me.read', 'nope', '', 'calls', '__proto__', 'calls.query.x'), { minLength: 1, maxLength: 14 }).map((names) => `/trpc/${names.join(',')}`),
      ),
      body: fc.oneof({ arbitrary: fc.constant<Body>({ shape: 'none', bytes: undefined }), weight: 2 }, { arbitrary: bodies(fc.jsonValue({ maxDepth: 3 })), weight: 1 }),
    })
    .map((r) => ({ ...r, operation: 'random' }));

  // OTLP/HTTP ingest, outside the API document (otlp-requests.ts).
  type Target = { operation: string; method: string; path: string; body: Body; headers?: Record<string, string> };
  const otlpRequest: fc.Arbitrary<Target> = otlpRequestArbitrary(world);

  return fc
    .record({
      target: fc.oneof(
        { arbitrary: restRequest as fc.Arbitrary<Target>, weight: 7 },
        { arbitrary: trpcRequest as fc.Arbitrary<Target>, weight: 2 },
        { arbitrary: randomRequest as fc.Arbitrary<Target>, weight: 1 },
        { arbitrary: otlpRequest, weight: 1 },
      ),
      caller,
      chunked: fc.oneof({ arbitrary: fc.constant(false), weight: 5 }, { arbitrary: fc.constant(true), weight: 1 }),
      type: contentType,
      odd: fc.oneof({ arbitrary: fc.constant({}), weight: 3 }, { arbitrary: oddHeaders, weight: 1 }),
    })
    .chain((r) => authorization(world, r.caller).map((auth) => ({ ...r, auth })))
    .map(({ target, caller, chunked, type, odd, auth }) => {
      const headers: Record<string, string> = { ...odd };
      if (auth !== undefined) headers.authorization = auth;
      if (type !== undefined && (target.body.bytes !== undefined || type !== 'application/json')) headers['content-type'] = type;
      // An OTLP request names its own media type, encoding and project.
      if (target.headers) Object.assign(headers, target.headers);
      const request: FuzzRequest = {
        caller,
        operation: target.operation,
        shape: target.body.shape,
        method: target.method,
        path: target.path,
        headers,
        body: target.body.bytes,
        chunked: chunked && target.body.bytes !== undefined,
      };
      return Object.assign(request, { [fc.toStringMethod]: () => describeRequest(request) });
    })
    // Node refuses a request line and headers over 16 KiB itself (431, before the application).
    .filter((r) => r.path.length + Object.entries(r.headers).reduce((n, [k, v]) => n + k.length + v.length + 4, 0) < 15_000);
}

function decodeSafe(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** A request as text a person can replay: method, path, headers, and the body (JSON-escaped, cut at 2 KB). */
export function describeRequest(r: FuzzRequest): string {
  const body = r.body === undefined ? '' : ` body(${r.body.length} B${r.chunked ? ', chunked' : ''}): ${JSON.stringify(r.body.toString('latin1').slice(0, 2048))}`;
  const headers = Object.entries(r.headers)
    .map(([k, v]) => `${k}: ${v.length > 120 ? `${v.slice(0, 120)}…(${v.length})` : v}`)
    .join(' | ');
  return `[${r.caller}] ${r.operation} (${r.shape}) ${r.method} ${r.path.length > 300 ? `${r.path.slice(0, 300)}…(${r.path.length})` : r.path} {${headers}}${body}`;
}


import type { Json } from '@loupe/shared';
import { JsonMeter } from '../json-shape.ts';
import type { SpanEvent } from './spans.ts';

/** The deepest JSON text inside an attribute that is parsed: deeper text stays a string. */
const MAX_PARSED_DEPTH = 32;

// Where a span's `inputs` and `output` come from (contract 5.9): one row per source convention,
// tried in order; for each of the two fields the first row that finds something wins. What a row
// takes from the span's attributes is left out of the call's `attributes` (`consumed`); everything
// else, the model and the token usage included, stays there under its own name.

/** What the table reads of a span: its attributes by key (a repeated key keeps its first value) and its events. */
export type SpanView = { attributes: ReadonlyMap<string, Json>; events: readonly SpanEvent[] };

/** A field's value, the attribute keys it took, and where it came from (shown by /otel/v1/traces/explain). */
export type Found = { value: Json; consumed: readonly string[]; source: string };

type Extract = (span: SpanView) => Found | undefined;

export type MappingRow = {
  /** The convention's name, as /explain shows it. */
  convention: string;
  inputs: Extract;
  output: Extract;
};

/** A message as a call keeps it: `{role, content}`, content a string or the parts list as given, other fields as given. */
type Message = { [key: string]: Json };

/**
 * The table. Changing a row changes what a span stores: each row has a test built from spans as
 * that convention's instrumentation emits them (test/src/unit/otlp-mapping.test.ts).
 */
export const MAPPING_TABLE: readonly MappingRow[] = [
  {
    convention: 'GenAI semantic conventions ≥ 1.37',
    inputs: genAiMessages({ system: 'gen_ai.system_instructions', messages: 'gen_ai.input.messages' }),
    output: genAiMessages({ messages: 'gen_ai.output.messages' }),
  },
  {
    convention: 'GenAI semantic conventions ≤ 1.36',
    inputs: firstOf(
      messageEvents({ 'gen_ai.system.message': 'system', 'gen_ai.user.message': 'user', 'gen_ai.assistant.message': 'assistant', 'gen_ai.tool.message': 'tool' }),
      indexedMessages({ prefix: 'gen_ai.prompt' }),
    ),
    output: firstOf(choiceEvents('gen_ai.choice'), indexedMessages({ prefix: 'gen_ai.completion' })),
  },
  {
    convention: 'OpenInference',
    inputs: firstOf(indexedMessages({ prefix: 'llm.input_messages', inner: 'message' }), mimeValue('input', { object: true })),
    output: firstOf(indexedMessages({ prefix: 'llm.output_messages', inner: 'message' }), mimeValue('output', { object: false })),
  },
];

/** The rows' answer for one span: each field's value and source (null when no row found one), and the attribute keys taken. */
export function mapSpanContent(span: SpanView): {
  inputs: (Found & { convention: string }) | null;
  output: (Found & { convention: string }) | null;
  consumed: Set<string>;
} {
  const inputs = firstRow(span, 'inputs');
  const output = firstRow(span, 'output');
  return { inputs, output, consumed: new Set([...(inputs?.consumed ?? []), ...(output?.consumed ?? [])]) };
}

function firstRow(span: SpanView, field: 'inputs' | 'output'): (Found & { convention: string }) | null {
  for (const row of MAPPING_TABLE) {
    const found = row[field](span);
    if (found) return { ...found, convention: row.convention };
  }
  return null;
}

function firstOf(...extracts: Extract[]): Extract {
  return (span) => {
    for (const extract of extracts) {
      const found = extract(span);
      if (found) return found;
    }
    return undefined;
  };
}

/**
 * GenAI ≥ 1.37: JSON strings (or structured values) of `[{role, parts: [{type, content}]}]`, and
 * system instructions as a parts list. A message's `parts` becomes its `content`; system
 * instructions become a first message of role `system`. The field is `{messages}`.
 */
function genAiMessages({ system, messages }: { system?: string; messages: string }): Extract {
  return (span) => {
    const instructions = system === undefined ? undefined : span.attributes.get(system);
    const list = span.attributes.get(messages);
    if (instructions === undefined && list === undefined) return undefined;
    const result: Json[] = [];
    const consumed: string[] = [];
    if (instructions !== undefined) {
      result.push({ role: 'system', content: parsedJson(instructions) });
      consumed.push(system!);
    }
    if (list !== undefined) {
      const parsed = parsedJson(list);
      if (Array.isArray(parsed)) result.push(...parsed.map(partsMessage));
      else result.push(parsed);
      consumed.push(messages);
    }
    return { value: { messages: result }, consumed, source: consumed.join(', ') };
  };
}

function partsMessage(message: Json): Json {
  if (!isObject(message) || !('parts' in message) || 'content' in message) return message;
  const { role, parts, ...rest } = message;
  return { role: role ?? null, content: parts ?? null, ...rest };
}

/**
 * GenAI ≤ 1.36 events, one per message, in the order the span holds them: the role from the event's
 * name (or its `role` attribute), `content`, and `tool_calls`, `id` and `name` when given. An
 * instrumentation that puts the whole event body in one JSON attribute (`gen_ai.event.content`) is
 * read too.
 */
function messageEvents(roles: Record<string, string>): Extract {
  return (span) => {
    const messages: Json[] = [];
    const names: string[] = [];
    for (const event of span.events) {
      const role = roles[event.name];
      if (role === undefined) continue;
      const body = eventBody(event);
      const message: Message = { role: typeof body.role === 'string' ? body.role : role, content: contentOf(body.content ?? null) };
      for (const key of ['tool_calls', 'id', 'name']) if (body[key] !== undefined) message[key] = parsedJson(body[key]);
      messages.push(message);
      if (!names.includes(event.name)) names.push(event.name);
    }
    if (messages.length === 0) return undefined;
    return { value: { messages }, consumed: [], source: `events ${names.join(', ')}` };
  };
}

/** GenAI ≤ 1.36 `gen_ai.choice` events: `message` (`{role, content, tool_calls}`), `index`, `finish_reason`; ordered by index. */
function choiceEvents(name: string): Extract {
  return (span) => {
    const choices: Array<{ index: number; message: Message }> = [];
    for (const event of span.events) {
      if (event.name !== name) continue;
      const body = eventBody(event);
      const inner = parsedJson(body.message ?? null);
      const { role, content, ...rest }: Message = isObject(inner) ? inner : {};
      const message: Message = { role: typeof role === 'string' ? role : 'assistant', content: contentOf(content ?? null), ...rest };
      if (body.finish_reason !== undefined) message.finish_reason = body.finish_reason;
      choices.push({ index: typeof body.index === 'number' ? body.index : choices.length, message });
    }
    if (choices.length === 0) return undefined;
    choices.sort((a, b) => a.index - b.index);
    return { value: { messages: choices.map(({ message }) => message) }, consumed: [], source: `events ${name}` };
  };
}

/** An event's fields: its attributes, or the JSON object of its `gen_ai.event.content` attribute. */
function eventBody(event: SpanEvent): Message {
  const body: Message = Object.create(null);
  for (const [key, value] of event.attributes) if (!(key in body)) body[key] = value;
  const whole = body['gen_ai.event.content'];
  if (typeof whole === 'string') {
    const parsed = parsedJson(whole);
    if (isObject(parsed)) return parsed;
  }
  return body;
}

/**
 * Messages flattened into indexed attributes: `<prefix>.<N>.role`, `<prefix>.<N>.content` and
 * deeper keys (`<prefix>.<N>.tool_calls.<M>.name`), rebuilt into objects (numbered keys into lists).
 * OpenInference puts each message under `.message` (`llm.input_messages.0.message.role`) and its
 * parts under `contents`, which become the content when there is no `content`.
 */
function indexedMessages({ prefix, inner }: { prefix: string; inner?: string }): Extract {
  const start = `${prefix}.`;
  return (span) => {
    const byIndex = new Map<number, Array<[string[], Json]>>();
    const consumed: string[] = [];
    for (const [key, value] of span.attributes) {
      if (!key.startsWith(start)) continue;
      const [index, ...path] = key.slice(start.length).split('.');
      if (!/^\d{1,6}$/.test(index!) || path.length === 0) continue;
      if (inner !== undefined && path.shift() !== inner) continue;
      if (path.length === 0) continue;
      consumed.push(key);
      const entries = byIndex.get(Number(index)) ?? [];
      entries.push([path, value]);
      byIndex.set(Number(index), entries);
    }
    if (byIndex.size === 0) return undefined;
    const messages = [...byIndex.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, entries]) => {
        const fields = unflatten(entries);
        const { role, content, contents, ...rest } = fields;
        const message: Message = { role: role ?? null, content: content === undefined ? (contents ?? null) : contentOf(content) };
        if (content !== undefined && contents !== undefined) message.contents = contents;
        return { ...message, ...rest };
      });
    const indexes = [...byIndex.keys()].sort((a, b) => a - b);
    const source = `${start}{${indexes.length === 1 ? indexes[0] : `${indexes[0]}-${indexes.at(-1)}`}}.${inner === undefined ? '' : `${inner}.`}*`;
    return { value: { messages }, consumed, source };
  };
}

/**
 * OpenInference's `<name>.value` with `<name>.mime_type`: parsed when the type is
 * `application/json`. `inputs` is an object: a value that is not one is kept as `{value}`.
 */
function mimeValue(name: string, { object }: { object: boolean }): Extract {
  const valueKey = `${name}.value`;
  const typeKey = `${name}.mime_type`;
  return (span) => {
    const raw = span.attributes.get(valueKey);
    if (raw === undefined) return undefined;
    const type = span.attributes.get(typeKey);
    const json = typeof type === 'string' && /^application\/json\s*(;|$)/i.test(type);
    const value = json && typeof raw === 'string' ? parsedJson(raw) : raw;
    const consumed = type === undefined ? [valueKey] : [valueKey, typeKey];
    return { value: object && !isObject(value) ? { value } : value, consumed, source: json ? `${valueKey} (${typeKey} application/json)` : valueKey };
  };
}

/** Builds objects from path → value entries; an object whose keys are all 0..n-1 becomes a list. */
function unflatten(entries: ReadonlyArray<[string[], Json]>): Message {
  const root: Message = Object.create(null);
  // Only the objects made here become lists: a value given as an object stays as it is.
  const made = new Set<Message>([root]);
  for (const [path, value] of entries) {
    let at = root;
    for (const [i, segment] of path.entries()) {
      if (i === path.length - 1) {
        if (!(segment in at)) at[segment] = value;
        break;
      }
      const next = at[segment];
      if (isObject(next) && made.has(next)) {
        at = next;
      } else if (next === undefined) {
        const object: Message = Object.create(null);
        made.add(object);
        at = at[segment] = object;
      } else {
        break; // a value where a deeper key wanted an object: the value stays
      }
    }
  }
  return listsOf(root, made) as Message;
}

function listsOf(value: Json, made: ReadonlySet<Message>): Json {
  if (!isObject(value) || !made.has(value)) return value;
  const keys = Object.keys(value);
  for (const key of keys) value[key] = listsOf(value[key]!, made);
  if (keys.length > 0 && keys.every((key) => /^\d{1,6}$/.test(key))) {
    const indexes = keys.map(Number).sort((a, b) => a - b);
    if (indexes.every((index, i) => index === i)) return indexes.map((index) => value[String(index)]!);
  }
  return value;
}

/** A message's content: a string stays a string, unless it is the JSON text of a parts list (some instrumentations send parts so). */
function contentOf(content: Json): Json {
  if (typeof content !== 'string' || !content.startsWith('[')) return content;
  const parsed = parsedJson(content);
  return Array.isArray(parsed) && parsed.every(isObject) ? parsed : content;
}

/** An attribute that holds JSON text, parsed; a value that is not JSON text stays as it is. */
function parsedJson(value: Json): Json {
  if (typeof value !== 'string') return value;
  const text = value.trim();
  if (!text.startsWith('[') && !text.startsWith('{') && !text.startsWith('"')) return value;
  if (!new JsonMeter(MAX_PARSED_DEPTH).write(Buffer.from(text))) return value;
  try {
    return JSON.parse(text) as Json;
  } catch {
    return value;
  }
}

function isObject(value: Json | undefined): value is { [key: string]: Json } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

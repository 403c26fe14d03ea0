import type { JsonValue } from './rubric-fields.ts';

// How a recorded call's values are read for people: chat messages, text, or anything else.

export type ChatMessage = { role: string; content: JsonValue; [field: string]: JsonValue };

function isObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `{role, content}` with a string role: content a string, an array of parts, or null (tool calls). */
export function isChatMessage(value: JsonValue | undefined): value is ChatMessage {
  return isObject(value) && typeof value.role === 'string' && 'content' in value && (value.content === null || typeof value.content === 'string' || Array.isArray(value.content));
}

export function isConversation(value: JsonValue | undefined): value is ChatMessage[] {
  return Array.isArray(value) && value.length > 0 && value.every(isChatMessage);
}

/** The text of a content part (`{type: "text", text}`), or null for other parts (images, audio…). */
export function partText(part: JsonValue): string | null {
  if (typeof part === 'string') return part;
  return isObject(part) && typeof part.text === 'string' && (part.type === undefined || part.type === 'text') ? part.text : null;
}

/** A display field's value: a dot path into the call (`inputs.question`, `output`); undefined when absent. */
export function valueAt(root: { [key: string]: JsonValue }, path: string): JsonValue | undefined {
  let value: JsonValue | undefined = root;
  for (const step of path.split('.')) {
    if (Array.isArray(value) && /^\d+$/.test(step)) value = value[Number(step)];
    else if (isObject(value) && Object.hasOwn(value, step)) value = value[step];
    else return undefined;
  }
  return value;
}

/** The fields of an object value shown one by one; other values are shown whole. */
export function fieldsOf(value: JsonValue): [string, JsonValue][] | null {
  return isObject(value) && !isChatMessage(value) ? Object.entries(value) : null;
}

const SECOND = 1000;
/** A duration for people: "850 ms", "2.4 s", "3 min 5 s". */
export function formatDuration(ms: number): string {
  if (ms < SECOND) return `${Math.round(ms)} ms`;
  if (ms < 60 * SECOND) return `${(ms / SECOND).toFixed(1)} s`;
  const minutes = Math.floor(ms / (60 * SECOND));
  return `${minutes} min ${Math.round((ms % (60 * SECOND)) / SECOND)} s`;
}

// The model a call used, read from its attributes where instrumentations put it.

type Attributes = { [key: string]: unknown } | null;

/**
 * Where the model is, first found wins: the GenAI conventions' request model, then the response
 * model, then OpenInference's `llm.model_name`, then a plain `model` (what hand-written calls and
 * the demo project record). Contract 5.9 keeps them under their own names.
 */
export const MODEL_PATHS = ['gen_ai.request.model', 'gen_ai.response.model', 'llm.model_name', 'model'] as const;

/** The attribute path the call browser's model filter compares (CallFilter attributes, `eq`). */
export const MODEL_FILTER_PATH = 'gen_ai.request.model';

/** A string at a dotted path: as one flat key (`{"gen_ai.request.model": …}`) or nested objects. */
function stringAt(attributes: { [key: string]: unknown }, path: string): string | null {
  const flat = attributes[path];
  if (typeof flat === 'string') return flat;
  let value: unknown = attributes;
  for (const step of path.split('.')) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, step)) return null;
    value = (value as { [key: string]: unknown })[step];
  }
  return typeof value === 'string' ? value : null;
}

/** The model the call asked for (what the call browser's model filter compares), or null. */
export function requestModelOf(attributes: Attributes): string | null {
  return attributes ? stringAt(attributes, MODEL_FILTER_PATH) : null;
}

/** The call's model, or null when its attributes name none. */
export function modelOf(attributes: Attributes): string | null {
  if (!attributes) return null;
  for (const path of MODEL_PATHS) {
    const model = stringAt(attributes, path);
    if (model) return model;
  }
  return null;
}

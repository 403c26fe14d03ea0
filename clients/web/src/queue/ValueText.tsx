import { JsonTree } from '../annotate/JsonTree.tsx';
import type { JsonValue } from '../annotate/rubric-fields.ts';

/** An annotator's value: scalars as text (strings unquoted, booleans as yes/no), anything else as a JSON tree. */
export function ValueText({ value }: { value: JsonValue }) {
  if (value !== null && typeof value === 'object') return <JsonTree value={value} />;
  return <span className="value">{scalarText(value)}</span>;
}

export function scalarText(value: string | number | boolean | null): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  return String(value);
}

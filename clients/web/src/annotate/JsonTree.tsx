import type { JsonValue } from './rubric-fields.ts';

// A JSON value as a tree of native <details>: keyboard-operable and announced by screen readers
// without any script of its own. Text is rendered by React, so it is never parsed as HTML.

/** Objects and arrays deeper than this start closed. */
const OPEN_DEPTH = 2;

export function JsonTree({ value, label }: { value: JsonValue; label?: string }) {
  return (
    <div className="json-tree">
      <JsonNode value={value} name={label} depth={0} />
    </div>
  );
}

function JsonNode({ value, name, depth }: { value: JsonValue; name: string | undefined; depth: number }) {
  const key = name === undefined ? null : <span className="json-key">{name}: </span>;
  if (value === null || typeof value !== 'object') {
    return (
      <div className="json-leaf">
        {key}
        <span className={`json-${value === null ? 'null' : typeof value}`}>{JSON.stringify(value)}</span>
      </div>
    );
  }
  const entries: [string, JsonValue][] = Array.isArray(value) ? value.map((item, index) => [String(index), item]) : Object.entries(value);
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  if (!entries.length) {
    return (
      <div className="json-leaf">
        {key}
        {open + close}
      </div>
    );
  }
  return (
    <details className="json-branch" open={depth < OPEN_DEPTH}>
      <summary>
        {key}
        {open}
        <span className="json-count">{entries.length === 1 ? '1 item' : `${entries.length} items`}</span>
        {close}
      </summary>
      <div className="json-children">
        {entries.map(([childName, child]) => (
          <JsonNode key={childName} value={child} name={childName} depth={depth + 1} />
        ))}
      </div>
    </details>
  );
}

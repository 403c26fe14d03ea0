import type { AttributeCondition, AttributeOp } from '@loupe/shared';

/** One condition on a path (a call's attributes, a feedback record's payload) as typed. */
export type ConditionDraft = { path: string; op: AttributeOp; value: string };

export const emptyCondition = (): ConditionDraft => ({ path: '', op: 'eq', value: '' });

/** The ops in words, in the order a person picks them. */
export const CONDITION_OPS: readonly { op: AttributeOp; words: string }[] = [
  { op: 'eq', words: 'equals' },
  { op: 'neq', words: 'does not equal' },
  { op: 'contains', words: 'contains' },
  { op: 'gt', words: 'is greater than' },
  { op: 'gte', words: 'is at least' },
  { op: 'lt', words: 'is less than' },
  { op: 'lte', words: 'is at most' },
  { op: 'exists', words: 'is present' },
  { op: 'not_exists', words: 'is absent' },
];

const NUMBER_OPS: ReadonlySet<AttributeOp> = new Set(['gt', 'gte', 'lt', 'lte']);
/** Whether the op compares with a value (exists and not_exists take none). */
export const takesValue = (op: AttributeOp) => op !== 'exists' && op !== 'not_exists';

/** Which part of which condition a problem concerns. */
export type ConditionProblem = { index: number; part: 'path' | 'value'; message: string };

/**
 * The value of `eq`/`neq` as typed: a number or true/false compares as such (attributes keep
 * their JSON types), anything else, or text in double quotes, as text.
 */
function comparedValue(typed: string): string | number | boolean {
  const text = typed.trim();
  if (/^".*"$/.test(text)) return text.slice(1, -1);
  if (text === 'true' || text === 'false') return text === 'true';
  if (text !== '' && Number.isFinite(Number(text))) return Number(text);
  return typed;
}

/**
 * The conditions the rows make (a row left blank is skipped), or the first problem: no path, a
 * number op without a number. The server checks the rest (a path's syntax) and names it.
 */
export function conditionsOfDrafts(drafts: readonly ConditionDraft[]): { conditions: AttributeCondition[] } | { problem: ConditionProblem } {
  const conditions: AttributeCondition[] = [];
  for (const [index, draft] of drafts.entries()) {
    const path = draft.path.trim();
    if (!path && !draft.value.trim()) continue;
    if (!path) return { problem: { index, part: 'path', message: 'Enter a path, such as gen_ai.request.model.' } };
    if (!takesValue(draft.op)) {
      conditions.push({ path, op: draft.op });
    } else if (NUMBER_OPS.has(draft.op)) {
      const number = Number(draft.value.trim());
      if (draft.value.trim() === '' || !Number.isFinite(number)) return { problem: { index, part: 'value', message: 'Enter a number.' } };
      conditions.push({ path, op: draft.op, value: number });
    } else if (draft.op === 'contains') {
      if (!draft.value) return { problem: { index, part: 'value', message: 'Enter the text to look for.' } };
      conditions.push({ path, op: draft.op, value: draft.value });
    } else {
      conditions.push({ path, op: draft.op, value: comparedValue(draft.value) });
    }
  }
  return { conditions };
}

/** A condition in words: `gen_ai.request.model equals "gpt-4o"`. */
export function conditionWords(condition: AttributeCondition): string {
  const op = CONDITION_OPS.find((known) => known.op === condition.op)?.words ?? condition.op;
  return condition.value === undefined ? `${condition.path} ${op}` : `${condition.path} ${op} ${JSON.stringify(condition.value)}`;
}

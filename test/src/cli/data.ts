/** Generated calls and feedback for the CLI tests: every record distinguishable by its `n`. */

export function callLine(projectId: string | undefined, n: number, withId: boolean): Record<string, unknown> {
  const started = new Date(Date.UTC(2026, 10, 1) + n * 1000);
  return {
    ...(projectId ? { project_id: projectId } : {}),
    ...(withId ? { id: `call-${n}` } : {}),
    op_name: n % 3 === 0 ? 'answer' : 'search',
    started_at: started.toISOString(),
    ended_at: new Date(started.getTime() + 1500).toISOString(),
    inputs: { n, q: `question ${n}, with "quotes", commas and\nnewlines` },
    output: { a: `answer ${n}` },
    attributes: { model: 'm-1', tokens: n % 100 },
  };
}

export function feedbackLine(projectId: string | undefined, refProject: string, n: number, withId: boolean): Record<string, unknown> {
  const svc_ref = `svc:///${refProject}/call/call-${n % 1000}`;
  const base = { ...(projectId ? { project_id: projectId } : {}), ...(withId ? { id: uuidOf(n) } : {}), svc_ref };
  switch (n % 3) {
    case 0:
      return { ...base, feedback_type: 'svc.note.1', payload: { note: `note ${n}` }, creator: `user-${n % 7}` };
    case 1:
      return { ...base, feedback_type: 'svc.reaction.1', payload: { emoji: '👍', n } };
    default:
      return { ...base, feedback_type: 'score', payload: { n, value: n % 5, tags: ['a', 'b'] }, creator: null };
  }
}

/** A fixed UUID per n (version 4 layout), for lines that bring their own id. */
export function uuidOf(n: number): string {
  const hex = n.toString(16).padStart(12, '0');
  return `00000000-0000-4000-8000-${hex}`;
}

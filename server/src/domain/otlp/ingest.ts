import type { SqlScope } from '../../db/sql.ts';
import { writeCalls } from '../calls.ts';
import type { QueueEventPublisher } from '../queue-events.ts';
import type { RefusedSpan, SpanCall } from './span-calls.ts';

/** How many refused spans the answer's `errorMessage` names one by one. */
const NAMED_REFUSALS = 10;

/** What an export stored, as OTLP's partial success reports it. */
export type SpansStored = { newRecords: number; rejectedSpans: number; errorMessage: string };

/**
 * Stores the calls of an export's accepted spans through the same write as calls/batch/create (so
 * the same content gives the same stored call, and a span sent again stores nothing new), all or
 * nothing. A span whose id is stored, or repeated in the request, with other content is refused
 * and the rest stored; queue rules add the calls they match in the same transaction (5.10). `refused` are the spans refused before (span-calls.ts).
 */
export async function storeSpanCalls(
  db: SqlScope,
  { userId, calls, refused, events }: { userId: string; calls: readonly SpanCall[]; refused: readonly RefusedSpan[]; events: QueueEventPublisher },
): Promise<SpansStored> {
  const written = calls.length === 0 ? { newRecords: 0, refused: [] } : await writeCalls(db, { userId, batch: calls.map(({ call }) => call), conflicts: 'report', events });
  const all = [
    ...refused,
    ...written.refused.map(({ index, reason }) => {
      const { call } = calls[index]!;
      return { trace_id: call.trace_id!, span_id: call.id!, name: call.op_name, reason };
    }),
  ];
  return { newRecords: written.newRecords, rejectedSpans: all.length, errorMessage: refusalMessage(all, calls.length + refused.length) };
}

/** OTLP's `errorMessage`: how many spans were refused, and why, for the first few. */
export function refusalMessage(refused: readonly RefusedSpan[], total: number): string {
  if (refused.length === 0) return '';
  const named = refused.slice(0, NAMED_REFUSALS).map((span) => `span ${span.span_id || '(no id)'} "${span.name}": ${span.reason}`);
  const more = refused.length > NAMED_REFUSALS ? `; and ${refused.length - NAMED_REFUSALS} more` : '';
  return `${refused.length} of ${total} spans refused: ${named.join('; ')}${more}.`;
}

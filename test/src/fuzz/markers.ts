import { DatabaseSync } from 'node:sqlite';
import { withClient } from '../harness/databases.ts';
import { MARK } from './hostile.ts';

// Each writing request's body carries a marker of its own (`fuzz-<n>-m`) in a field that is stored
// as sent. After the run the tables are read directly: the markers found there must all be of
// requests that succeeded.

/** The tables requests write to. */
export const WRITTEN_TABLES = ['calls', 'feedback', 'annotation_queues', 'annotation_specs', 'annotation_queue_items', 'annotation_item_progress'];

const MARKER = /fuzz-(\d+)-m/g;

export function markerOf(n: number): string {
  return `fuzz-${n}-m`;
}

/** The body with every placeholder replaced by the marker, and whether there was one. */
export function withMarker(body: Buffer | undefined, marker: string): { body: Buffer | undefined; marked: boolean } {
  if (body === undefined || body.indexOf(MARK) < 0) return { body, marked: false };
  const parts: Buffer[] = [];
  let from = 0;
  for (let at = body.indexOf(MARK); at >= 0; at = body.indexOf(MARK, from)) {
    parts.push(body.subarray(from, at), Buffer.from(marker));
    from = at + MARK.length;
  }
  parts.push(body.subarray(from));
  return { body: Buffer.concat(parts), marked: true };
}

/** The numbers of every marker stored in the written tables, read with the database's own client. */
export async function storedMarkers(databaseUrl: string): Promise<Set<number>> {
  const texts: string[] = [];
  if (databaseUrl.startsWith('sqlite:')) {
    const db = new DatabaseSync(databaseUrl.slice('sqlite:'.length), { readOnly: true });
    try {
      for (const table of WRITTEN_TABLES) {
        for (const row of db.prepare(`select * from ${table}`).all()) {
          texts.push(JSON.stringify(row, (_key, value: unknown) => (value instanceof Uint8Array ? Buffer.from(value).toString('latin1') : typeof value === 'bigint' ? String(value) : value)));
        }
      }
    } finally {
      db.close();
    }
  } else {
    await withClient(databaseUrl, async (client) => {
      for (const table of WRITTEN_TABLES) {
        const { rows } = await client.query<{ row: string }>(`select t::text as row from ${table} t`);
        texts.push(...rows.map((r) => r.row));
      }
    });
  }
  const found = new Set<number>();
  for (const text of texts) for (const match of text.matchAll(MARKER)) found.add(Number(match[1]));
  return found;
}

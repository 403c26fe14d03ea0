import type { LoupeClient } from '@loupe/client';
import { exportQueue, planQueueExport, type ExportFormat } from '@loupe/client/export';

// The queue page's export, from the same code as the CLI's `loupe export queue` (loaded only when
// a person exports). Each page of items is folded into a Blob as it arrives: the browser keeps a
// Blob's bytes outside the page's heap (Chromium moves large ones to disk), so the page holds one
// page of items at a time, whatever the queue's size. Then the Blob is handed to the browser as a
// download. (The File System Access API would write to disk as it goes, but asks for a file first
// with a picker of the browser's own; the Blob works in every browser.)

const TYPES: Record<ExportFormat, string> = { csv: 'text/csv;charset=utf-8', jsonl: 'application/x-ndjson' };
const EXTENSIONS: Record<ExportFormat, string> = { csv: 'csv', jsonl: 'jsonl' };
/** A Blob URL lives until revoked; the browser has read it long before this. */
const REVOKE_AFTER_MS = 60_000;

export type ExportProgress = { items: number; total: number };

/** A file name from the queue's name and the day, in characters every file system takes. */
export function exportFileName(queueName: string, format: ExportFormat, now = new Date()): string {
  const base = queueName.normalize('NFKC').replace(/[^\p{L}\p{N}._-]+/gu, '-').replace(/^-+|-+$/g, '').slice(0, 80) || 'queue';
  return `${base}-${now.toISOString().slice(0, 10)}.${EXTENSIONS[format]}`;
}

/** Exports the queue and starts its download; resolves with the number of items written. */
export async function downloadQueue(
  client: LoupeClient,
  projectId: string,
  queueId: string,
  format: ExportFormat,
  onProgress: (progress: ExportProgress) => void,
): Promise<number> {
  const plan = await planQueueExport(client, projectId, queueId);
  const type = TYPES[format];
  let file = new Blob([], { type });
  let items = 0;
  onProgress({ items, total: plan.totalItems });
  for await (const chunk of exportQueue(client, plan, format)) {
    file = new Blob([file, chunk.bytes], { type });
    items += chunk.items;
    onProgress({ items, total: plan.totalItems });
  }
  const url = URL.createObjectURL(file);
  const link = document.createElement('a');
  link.href = url;
  link.download = exportFileName(plan.queueName, format);
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), REVOKE_AFTER_MS);
  return items;
}

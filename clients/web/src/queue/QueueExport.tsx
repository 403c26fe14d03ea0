import type { LoupeClient } from '@loupe/client';
import type { ExportFormat } from '@loupe/client/export';
import { useId, useState } from 'react';
import { messageOf } from '../api.ts';
import type { ExportProgress } from './queue-download.ts';

const FORMATS: Record<ExportFormat, string> = { csv: 'CSV', jsonl: 'JSON Lines' };

type Props = { client: LoupeClient; projectId: string; queueId: string };

type Run = { kind: 'idle' } | { kind: 'running'; progress: ExportProgress | null } | { kind: 'done'; items: number; format: ExportFormat } | { kind: 'failed'; message: string };

/**
 * "Export": every item of the queue with its call, each annotator's values (by username), notes
 * and reactions, as CSV or JSON Lines — the rows of the CLI's `loupe export queue`.
 */
export function QueueExport({ client, projectId, queueId }: Props) {
  const [format, setFormat] = useState<ExportFormat>('csv');
  const [run, setRun] = useState<Run>({ kind: 'idle' });
  const formatId = useId();
  const running = run.kind === 'running';

  const start = async () => {
    setRun({ kind: 'running', progress: null });
    try {
      // Loaded on first use: the export is no part of the page's first load.
      const { downloadQueue } = await import('./queue-download.ts');
      const items = await downloadQueue(client, projectId, queueId, format, (progress) => setRun({ kind: 'running', progress }));
      setRun({ kind: 'done', items, format });
    } catch (error) {
      setRun({ kind: 'failed', message: messageOf(error) });
    }
  };

  return (
    <div className="queue-export">
      <label htmlFor={formatId}>Export as</label>
      <select id={formatId} value={format} onChange={(event) => setFormat(event.target.value as ExportFormat)} disabled={running}>
        {Object.entries(FORMATS).map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
      <button type="button" className="secondary" onClick={() => void start()} disabled={running} aria-label={`Export all items as ${FORMATS[format]}`}>
        Export
      </button>
      <p className="export-status" role="status">
        {run.kind === 'running'
          ? run.progress
            ? `Exporting… ${run.progress.items.toLocaleString('en')} of ${run.progress.total.toLocaleString('en')} items`
            : 'Exporting…'
          : run.kind === 'done'
            ? `Exported ${run.items.toLocaleString('en')} ${run.items === 1 ? 'item' : 'items'} as ${FORMATS[run.format]}.`
            : ''}
      </p>
      {run.kind === 'failed' ? (
        <p className="error" role="alert">
          {run.message}
        </p>
      ) : null}
    </div>
  );
}

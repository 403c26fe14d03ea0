import type { QueueStats } from '../annotate/annotate-queries.ts';
import type { LiveState } from '../live/useQueueEvents.ts';
import { STATE_LABELS } from '../queue/states.ts';

/** The bar fills from the left with what is done, then what is held, then what is left. */
const BAR_ORDER = ['completed', 'skipped', 'in_progress', 'unstarted'] as const;

/**
 * A queue's progress: done of total as a bar split by the items' shown states, and the counts
 * by state beside it. `done_items` counts items finished by as many annotators as the queue asks.
 */
export function QueueProgressBar({ queueName, stats, live }: { queueName: string; stats: QueueStats | undefined; live: LiveState }) {
  if (!stats) return <p className="progress-summary muted">Reading progress…</p>;
  const { total_items: total, done_items: done, by_state: byState } = stats;
  const share = (count: number) => (total ? `${(100 * count) / total}%` : '0%');
  return (
    <div className="progress-summary" data-live={live}>
      <p className="progress-line">
        <strong>{done}</strong> of <strong>{total}</strong> {total === 1 ? 'item' : 'items'} done
        <span className="live-state">{live === 'live' ? ' · updates live' : live === 'offline' ? ' · not live: reload for the latest counts' : ''}</span>
      </p>
      <div
        className="progress-bar"
        role="progressbar"
        aria-label={`Progress of ${queueName}`}
        aria-valuemin={0}
        aria-valuemax={total}
        aria-valuenow={done}
        aria-valuetext={`${done} of ${total} done`}
      >
        {BAR_ORDER.map((key) => (byState[key] ? <span key={key} className={`segment segment-${key}`} style={{ width: share(byState[key]) }} /> : null))}
      </div>
      <ul className="state-counts" aria-label={`Items of ${queueName} by state`}>
        {BAR_ORDER.map((key) => (
          <li key={key}>
            <span className={`swatch segment-${key}`} aria-hidden="true" />
            {STATE_LABELS[key]} <strong>{byState[key]}</strong>
          </li>
        ))}
      </ul>
    </div>
  );
}

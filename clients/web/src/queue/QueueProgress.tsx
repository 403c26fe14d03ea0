import type { QueueStats } from '../annotate/annotate-queries.ts';
import type { LiveState } from '../live/useQueueEvents.ts';
import { Annotator } from './Annotator.tsx';
import { STATE_LABELS, STATES } from './states.ts';
import { ScrollTable } from './ScrollTable.tsx';

const LIVE_WORDS: Record<LiveState, string> = {
  connecting: 'Connecting for live updates…',
  live: 'Updates live',
  offline: 'Not updating live: reload for the latest counts',
};

/**
 * Done / total (an item is done when as many annotators finished it as the queue asks), the items
 * by their shown state, each annotator's progress, and each assignee's (contract 5.11).
 */
export function QueueProgress({ stats, live, meId }: { stats: QueueStats; live: LiveState; meId: string | undefined }) {
  return (
    <section className="panel queue-progress" aria-labelledby="progress-title">
      <div className="queue-progress-head">
        <h2 id="progress-title">Progress</h2>
        <span className="live" data-live={live}>
          {LIVE_WORDS[live]}
        </span>
      </div>
      <p className="progress" data-live={live}>
        <strong>{stats.done_items}</strong> of <strong>{stats.total_items}</strong> items done
      </p>
      <progress max={Math.max(stats.total_items, 1)} value={stats.done_items} aria-label="Items done" />
      {stats.completed_items > stats.done_items ? (
        <p className="muted">
          {stats.completed_items - stats.done_items} more {stats.completed_items - stats.done_items === 1 ? 'has' : 'have'} some of the annotations
          each item needs.
        </p>
      ) : null}
      <dl className="totals" aria-label="Items by state">
        {STATES.map((state) => (
          <div key={state} data-state={state}>
            <dt>{STATE_LABELS[state]}</dt>
            <dd>{stats.by_state[state]}</dd>
          </div>
        ))}
      </dl>
      {stats.by_annotator.length ? (
        <ScrollTable label="Counts by annotator">
          <table>
            <caption>Progress by annotator</caption>
            <thead>
              <tr>
                <th scope="col">Annotator</th>
                <th scope="col" className="number">In progress</th>
                <th scope="col" className="number">Completed</th>
                <th scope="col" className="number">Skipped</th>
              </tr>
            </thead>
            <tbody>
              {stats.by_annotator.map((row) => (
                <tr key={row.annotator_user_id}>
                  <th scope="row">
                    <Annotator userId={row.annotator_user_id} meId={meId} />
                  </th>
                  <td className="number">{row.in_progress}</td>
                  <td className="number">{row.completed}</td>
                  <td className="number">{row.skipped}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollTable>
      ) : (
        <p className="muted">No one has started on this queue yet.</p>
      )}
      {stats.by_assignee.length ? (
        <ScrollTable label="Progress by assignee">
          <table className="by-assignee">
            <caption>Progress by assignee</caption>
            <thead>
              <tr>
                <th scope="col">Assignee</th>
                <th scope="col" className="number">Items assigned</th>
                <th scope="col" className="number">Done</th>
                <th scope="col" className="number">In progress</th>
                <th scope="col" className="number">Left for them</th>
              </tr>
            </thead>
            <tbody>
              {stats.by_assignee.map((row) => (
                <tr key={row.user_id}>
                  <th scope="row">
                    <Annotator userId={row.user_id} meId={meId} />
                  </th>
                  <td className="number">{row.assigned_items}</td>
                  <td className="number">{row.done}</td>
                  <td className="number">{row.in_progress}</td>
                  <td className="number">{row.remaining}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollTable>
      ) : null}
    </section>
  );
}

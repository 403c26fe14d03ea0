import { Command } from 'commander';
import { connect, type GlobalOptions } from '../connection.ts';
import { refused } from '../errors.ts';
import { printResult } from '../output.ts';

const PAGE = 1000;

export function queuesCommands(globals: () => GlobalOptions): Command {
  const queues = new Command('queues').description('annotation queues');

  queues
    .command('list')
    .description('the queues of a project, newest first')
    .requiredOption('--project <project_id>', 'the project, <entity>/<project>')
    .option('--name <text>', 'only queues whose name contains this (case-insensitive)')
    .action(async (flags: { project: string; name?: string }) => {
      const options = globals();
      const client = connect(options);
      const all: Awaited<ReturnType<typeof client.annotationQueues.query.query>>['queues'] = [];
      try {
        // Queues are few; offset paging is what their query offers.
        for (let offset = 0; ; offset += PAGE) {
          const { queues: page } = await client.annotationQueues.query.query({ project_id: flags.project, limit: PAGE, offset, ...(flags.name ? { name: flags.name } : {}) });
          all.push(...page);
          if (page.length < PAGE) break;
        }
      } catch (error) {
        throw refused(error);
      }
      printResult(options.json ?? false, { queues: all }, () =>
        all.map((q) => `${q.id}\t${q.name}\t${q.annotations_per_item} per item\tcreated ${q.created_at}`).join('\n') || '(no queues)',
      );
    });

  queues
    .command('stats')
    .description('progress counts of a queue')
    .argument('<queue_id>')
    .requiredOption('--project <project_id>', 'the project, <entity>/<project>')
    .action(async (queueId: string, flags: { project: string }) => {
      const options = globals();
      const { stats } = await connect(options)
        .annotationQueues.stats.query({ project_id: flags.project, queue_ids: [queueId] })
        .catch((error: unknown) => Promise.reject(refused(error)));
      const s = stats[0]!;
      printResult(options.json ?? false, s, () =>
        [
          `${s.queue_id}: ${s.done_items} of ${s.total_items} items done`,
          `  unstarted ${s.by_state.unstarted}, in progress ${s.by_state.in_progress}, completed ${s.by_state.completed}, skipped ${s.by_state.skipped}`,
          ...s.by_annotator.map((a) => `  ${a.annotator_user_id}: completed ${a.completed}, skipped ${a.skipped}, in progress ${a.in_progress}`),
        ].join('\n'),
      );
    });
  return queues;
}

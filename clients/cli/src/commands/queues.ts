import { Command } from 'commander';
import type { LoupeClient } from '@loupe/client';
import { connect, type GlobalOptions } from '../connection.ts';
import { CliError, EXIT, refused } from '../errors.ts';
import { callIdsOf } from '../import/call-ids.ts';
import { printResult } from '../output.ts';
import { positiveInteger } from './import.ts';

const PAGE = 1000;
/** Call ids per add-items request: the server's default LOUPE_MAX_CALL_IDS. */
const ADD_CHUNK = 10_000;
/** The server's default body limit: the longest line a calls file may have. */
const MAX_LINE_BYTES = 32 * 1024 * 1024;

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** What adding gave, summed over the requests: the first 1,000 missing ids are named. */
type AddCounts = { added_count: number; duplicates: number; missing: number; missing_call_ids: string[] };

/** Adds call ids to a queue in requests of ADD_CHUNK; the counts of all of them. */
async function addInChunks(client: LoupeClient, projectId: string, queueId: string, ids: AsyncIterable<string>): Promise<AddCounts> {
  const counts: AddCounts = { added_count: 0, duplicates: 0, missing: 0, missing_call_ids: [] };
  let chunk: string[] = [];
  const send = async () => {
    if (!chunk.length) return;
    const answer = await client.annotationQueues.items.add.mutate({ project_id: projectId, queue_id: queueId, call_ids: chunk }).catch((error: unknown) => Promise.reject(refused(error)));
    counts.added_count += answer.added_count;
    counts.duplicates += answer.duplicates.length;
    counts.missing += answer.missing_call_ids.length;
    counts.missing_call_ids.push(...answer.missing_call_ids.slice(0, 1000 - counts.missing_call_ids.length));
    chunk = [];
  };
  for await (const id of ids) {
    chunk.push(id);
    if (chunk.length >= ADD_CHUNK) await send();
  }
  await send();
  return counts;
}

/** The ids of a calls file, stopping at its first unreadable line (a usage error: the file is not one of calls). */
async function* idsOfFile(path: string): AsyncGenerator<string> {
  for await (const line of callIdsOf(path, MAX_LINE_BYTES)) {
    if ('bad' in line) throw new CliError(`${path} line ${line.line}: ${line.bad}`, EXIT.usage);
    yield line.id;
  }
}

/** The ids of the project's calls with these op names, page by page. */
async function* idsOfOpNames(client: LoupeClient, projectId: string, opNames: string[]): AsyncGenerator<string> {
  let cursor: string | undefined;
  do {
    const page = await client.calls.query
      .query({ project_id: projectId, filter: { op_names: opNames }, limit: PAGE, ...(cursor ? { cursor } : {}) })
      .catch((error: unknown) => Promise.reject(refused(error)));
    for (const call of page.calls) yield call.id;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
}

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
  queues
    .command('create')
    .description('create an annotation queue; prints its id')
    .requiredOption('--project <project_id>', 'the project, <entity>/<project>')
    .requiredOption('--name <name>', 'the queue name')
    .option('--spec <ref>', 'a rubric field, by the ref `specs create` printed (repeat for several)', collect, [])
    .option('--description <text>', 'what the queue is for')
    .option('--annotations-per-item <n>', 'annotators each item needs', positiveInteger)
    .option('--lease-seconds <n>', 'how long a claimed item is held for its annotator', positiveInteger)
    .action(async (flags: { project: string; name: string; spec: string[]; description?: string; annotationsPerItem?: number; leaseSeconds?: number }) => {
      const options = globals();
      const created = await connect(options)
        .annotationQueues.create.mutate({
          project_id: flags.project,
          name: flags.name,
          scorer_refs: flags.spec,
          ...(flags.description ? { description: flags.description } : {}),
          ...(flags.annotationsPerItem ? { annotations_per_item: flags.annotationsPerItem } : {}),
          ...(flags.leaseSeconds ? { lease_seconds: flags.leaseSeconds } : {}),
        })
        .catch((error: unknown) => Promise.reject(refused(error)));
      printResult(options.json ?? false, created, () => created.id);
    });

  queues
    .command('add')
    .description('put calls in a queue: those of a calls file (as `import calls` stored them), or those with an op name')
    .argument('<queue_id>')
    .requiredOption('--project <project_id>', 'the project, <entity>/<project>')
    .option('--from-file <file>', 'a JSON Lines file of calls (each line\'s id, or the one `import calls` derived for it)')
    .option('--op-name <name>', 'every stored call with this op name (repeat for several)', collect, [])
    .action(async (queueId: string, flags: { project: string; fromFile?: string; opName: string[] }) => {
      const options = globals();
      if ((flags.fromFile === undefined) === (flags.opName.length === 0)) throw new CliError('say which calls: --from-file FILE or --op-name NAME (one of them)', EXIT.usage);
      const client = connect(options);
      const ids = flags.fromFile !== undefined ? idsOfFile(flags.fromFile) : idsOfOpNames(client, flags.project, flags.opName);
      const counts = await addInChunks(client, flags.project, queueId, ids);
      printResult(options.json ?? false, counts, () =>
        `${counts.added_count.toLocaleString('en')} added; ${counts.duplicates.toLocaleString('en')} already in the queue; ${counts.missing.toLocaleString('en')} not stored calls` +
          (counts.missing ? ` (${counts.missing_call_ids.slice(0, 5).join(', ')}${counts.missing > 5 ? ', …' : ''})` : ''),
      );
    });
  return queues;
}

import { exportQueue, planQueueExport, type ExportFormat } from '@loupe/client/export';
import { Command, Option } from 'commander';
import { connect, type GlobalOptions } from '../connection.ts';
import { CursorHints } from '../cursor-hints.ts';
import { CliError, EXIT, refused } from '../errors.ts';
import type { Count } from '../export/feedback.ts';
import { exportFeedback, type FeedbackFilter } from '../export/feedback.ts';
import { openSink } from '../export/writer.ts';
import { printSummary, startProgress } from '../output.ts';
import { DEFAULT_RETRY, withRetry } from '../retry.ts';
import { positiveInteger } from './import.ts';

const collect = (value: string, previous: string[] = []) => [...previous, value];
/** Pages are asked again on 429, 503 or no answer: a query changes nothing, and a cursor can be used twice. */
const retry = <T>(call: () => Promise<T>) => withRetry(call, DEFAULT_RETRY);
const formatOption = () => new Option('--format <format>', 'jsonl or csv').choices(['jsonl', 'csv']).default('jsonl');

type FeedbackFlags = {
  project: string;
  format: ExportFormat;
  out?: string;
  pageSize: number;
  type?: string[];
  svcRef?: string[];
  id?: string[];
  queue?: string;
  callRef?: string;
  creator?: string;
  user?: string;
  since?: string;
  until?: string;
};

function feedbackFilter(flags: FeedbackFlags): FeedbackFilter | undefined {
  const filter: FeedbackFilter = {
    ...(flags.type ? { feedback_types: flags.type } : {}),
    ...(flags.svcRef ? { svc_refs: flags.svcRef } : {}),
    ...(flags.id ? { ids: flags.id } : {}),
    ...(flags.queue ? { queue_id: flags.queue } : {}),
    ...(flags.callRef ? { call_ref: flags.callRef } : {}),
    ...(flags.creator ? { creator: flags.creator } : {}),
    ...(flags.user ? { svc_user_id: flags.user } : {}),
    ...(flags.since ? { created_after: flags.since } : {}),
    ...(flags.until ? { created_before: flags.until } : {}),
  };
  return Object.keys(filter).length ? filter : undefined;
}

/**
 * Runs an export and prints its one-line summary. A refusal before any row ends the command with
 * exit 2; after some rows were written, with exit 3 (partial) and the count in the message.
 */
async function run(json: boolean, out: string | undefined, what: string, body: (count: Count) => Promise<void>): Promise<void> {
  const started = performance.now();
  const count: Count = { written: 0 };
  try {
    await body(count);
  } catch (error) {
    const cause = refused(error);
    if (count.written === 0) throw cause;
    throw new CliError(`${cause.message} (after ${count.written} records were written)`, EXIT.partial);
  }
  const written = count.written;
  const seconds = (performance.now() - started) / 1000;
  const rate = seconds > 0 ? Math.round(written / seconds) : 0;
  const summary = { exported: what, records: written, out: out ?? null, seconds: +seconds.toFixed(3), records_per_s: rate };
  printSummary(json, summary, `${what}: ${written.toLocaleString('en')} records exported${out ? ` to ${out}` : ''}; ${summary.seconds}s, ${rate.toLocaleString('en')} records/s`, Boolean(out));
}

export function exportCommands(globals: () => GlobalOptions): Command {
  const exporter = new Command('export').description('export data as JSON Lines or CSV, page by page');

  exporter
    .command('feedback')
    .description('feedback records of a project, in created_at order')
    .requiredOption('--project <project_id>', 'the project, <entity>/<project>')
    .addOption(formatOption())
    .option('--out <file>', 'write to this file instead of stdout')
    .option('--type <feedback_type>', 'only this feedback type (repeatable)', collect)
    .option('--svc-ref <ref>', 'only feedback about this ref (repeatable)', collect)
    .option('--id <id>', 'only this feedback id (repeatable)', collect)
    .option('--queue <queue_id>', 'only feedback given in this queue')
    .option('--call-ref <ref>', 'only feedback with this call_ref')
    .option('--creator <creator>', 'only feedback with this creator')
    .option('--user <user_id>', 'only feedback given by this user (svc_user_id)')
    .option('--since <time>', 'created at or after this RFC 3339 time')
    .option('--until <time>', 'created before this RFC 3339 time')
    .option('--page-size <n>', 'records per request', positiveInteger, 2000)
    .action(async (flags: FeedbackFlags) => {
      const options = globals();
      const json = options.json ?? false;
      const hints = new CursorHints();
      const client = connect(options, { fetch: hints.fetch });
      const sink = openSink(flags.out);
      const progress = startProgress('export feedback', !json, false);
      await run(json, flags.out, 'feedback', async (count) => {
        try {
          await exportFeedback(client, hints, flags.project, feedbackFilter(flags), flags.pageSize, flags.format, sink, retry, progress, count);
        } finally {
          progress.stop();
          await sink.close();
        }
      });
    });

  exporter
    .command('queue')
    .description("one row per item of a queue: the call, its shown state, each annotator's values and their majority or mean")
    .argument('<queue_id>')
    .requiredOption('--project <project_id>', 'the project, <entity>/<project>')
    .addOption(formatOption())
    .option('--out <file>', 'write to this file instead of stdout')
    .action(async (queueId: string, flags: { project: string; format: ExportFormat; out?: string }) => {
      const options = globals();
      const json = options.json ?? false;
      const client = connect(options);
      const plan = await planQueueExport(client, flags.project, queueId).catch((error: unknown) => Promise.reject(refused(error)));
      const sink = openSink(flags.out);
      const progress = startProgress('export queue', !json, true);
      await run(json, flags.out, 'queue', async (count) => {
        try {
          for await (const chunk of exportQueue(client, plan, flags.format, { retry })) {
            await sink.write(chunk.bytes);
            count.written += chunk.items;
            progress.update(count.written, plan.totalItems ? count.written / plan.totalItems : undefined);
          }
        } finally {
          progress.stop();
          await sink.close();
        }
      });
    });
  return exporter;
}

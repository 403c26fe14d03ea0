import { Command, InvalidArgumentError, Option } from 'commander';
import { connect, type GlobalOptions } from '../connection.ts';
import { EXIT, type ExitCode } from '../errors.ts';
import { runImport, type ImportKind, type ImportSummary } from '../import/importer.ts';
import { DEFAULT_RETRY } from '../retry.ts';
import { formatRanges, printSummary, startProgress } from '../output.ts';

export function positiveInteger(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

type ImportFlags = { project?: string; batchSize: number; concurrency: number; onError: 'skip' | 'stop'; retries: number; maxLineBytes: number; maxDepth: number };

/**
 * 0 when everything was stored; 2 when the server refused a whole request (no line's fault) before
 * anything was stored; else 3: lines were bad (the summary names them), or a refusal came midway.
 */
function exitCodeOf(summary: ImportSummary): ExitCode {
  if (summary.bad_lines === 0 && summary.fatal === null) return EXIT.ok;
  return summary.fatal !== null && summary.stored === 0 ? EXIT.refused : EXIT.partial;
}

/** The server's defaults (LOUPE_MAX_BODY_BYTES, LOUPE_MAX_JSON_DEPTH): a client cannot ask for them. */
const SERVER_BODY_BYTES = 32 * 1024 * 1024;
const SERVER_JSON_DEPTH = 64;

/** An import's summary with how many of its stored records are new (null: the server did not say). */
type Outcome = ImportSummary & { new_records: number | null };

function describe(summary: Outcome): string {
  const parts = [`${summary.kind}: ${summary.stored.toLocaleString('en')} of ${summary.records.toLocaleString('en')} records stored`];
  parts.push(`lines ${formatRanges(summary.stored_lines)}`);
  if (summary.bad_lines) parts.push(`${summary.bad_lines} bad line${summary.bad_lines === 1 ? '' : 's'}`);
  if (summary.stopped_at_line !== null) parts.push(`stopped at line ${summary.stopped_at_line}: nothing after it was sent`);
  if (summary.fatal) parts.push(`stopped: ${summary.fatal.status ?? 'no answer'} ${summary.fatal.reason}`);
  if (summary.retries) parts.push(`${summary.retries} retries`);
  if (summary.new_records !== null) {
    const allOld = summary.new_records === 0 && summary.stored > 0;
    parts.push(`${summary.new_records.toLocaleString('en')} new${allOld ? ' (all already stored)' : ''}`);
  }
  parts.push(`${summary.seconds}s, ${summary.records_per_s.toLocaleString('en')} records/s`);
  return parts.join('; ');
}

function importCommand(kind: ImportKind, globals: () => GlobalOptions): Command {
  const shape = kind === 'calls' ? 'calls/batch/create' : 'feedback/batch/create';
  return new Command(kind)
    .description(`import JSON Lines of ${kind} (each line an element of ${shape}) from FILE, or stdin with -`)
    .argument('<file>', 'a JSON Lines file, or - for stdin')
    .option('--project <project_id>', 'the project_id of lines that have none')
    .option('--batch-size <n>', 'records per request (a 413 splits it)', positiveInteger, 1000)
    .option('--concurrency <n>', 'requests in flight', positiveInteger, 4)
    .addOption(new Option('--on-error <mode>', 'on a bad line: skip it, or stop sending').choices(['skip', 'stop']).default('stop'))
    .option('--max-line-bytes <n>', "longest line read, the server's LOUPE_MAX_BODY_BYTES (a longer line is a bad line, never parsed)", positiveInteger, SERVER_BODY_BYTES)
    .option('--max-depth <n>', "the server's LOUPE_MAX_JSON_DEPTH (a line nested deeper than it allows is a bad line)", positiveInteger, SERVER_JSON_DEPTH)
    .option('--retries <n>', 'retries of a request on 429, 503 or no answer', (v) => (v === '0' ? 0 : positiveInteger(v)), DEFAULT_RETRY.retries)
    .action(async (file: string, flags: ImportFlags) => {
      const options = globals();
      const json = options.json ?? false;
      const newRecords = newRecordsCounter();
      const client = connect(options, { fetch: newRecords.fetch });
      const send = kind === 'calls'
        ? (batch: Record<string, unknown>[]) => client.calls.batchCreate.mutate({ batch: batch as never })
        : (batch: Record<string, unknown>[]) => client.feedback.batchCreate.mutate({ batch: batch as never });
      const progress = startProgress(`import ${kind}`, !json, file !== '-');
      const summary = await runImport({
        kind,
        path: file,
        ...(flags.project ? { project: flags.project } : {}),
        batchSize: flags.batchSize,
        concurrency: flags.concurrency,
        onError: flags.onError,
        maxLineBytes: flags.maxLineBytes,
        maxDepth: flags.maxDepth,
        retry: { ...DEFAULT_RETRY, retries: flags.retries },
        send,
        progress,
        onBadLine: (bad) => progress.log(`line ${bad.line}: ${bad.reason}`),
      });
      const outcome: Outcome = { ...summary, new_records: newRecords.total() };
      printSummary(json, outcome, describe(outcome));
      process.exitCode = exitCodeOf(summary);
    });
}

/**
 * Sums the server's count of records each answer stored anew (its Loupe-New-Records header; a
 * record sent again with the same id and content is stored already). Null when no answer said.
 */
function newRecordsCounter(): { fetch: typeof globalThis.fetch; total: () => number | null } {
  let total: number | null = null;
  return {
    fetch: async (input, init) => {
      const response = await globalThis.fetch(input, init);
      const header = response.ok ? response.headers.get('loupe-new-records') : null;
      if (header !== null && /^\d+$/.test(header)) total = (total ?? 0) + Number(header);
      return response;
    },
    total: () => total,
  };
}

export function importCommands(globals: () => GlobalOptions): Command {
  return new Command('import')
    .description('import JSON Lines into the server, in batches, resumably')
    .addCommand(importCommand('calls', globals))
    .addCommand(importCommand('feedback', globals));
}

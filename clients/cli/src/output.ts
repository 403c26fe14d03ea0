import { MultiBar } from 'cli-progress';

/** Writes a command's result: one JSON line with `--json`, else the human text. */
export function printResult(json: boolean, value: unknown, human: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${human()}\n`);
}

/**
 * The final one-line summary. Human text goes to stderr; with `--json` it is a JSON line on stdout,
 * unless stdout carries the command's data (export without --out), then on stderr.
 */
export function printSummary(json: boolean, value: unknown, human: string, stdoutFree = true): void {
  if (json) (stdoutFree ? process.stdout : process.stderr).write(`${JSON.stringify(value)}\n`);
  else process.stderr.write(`${human}\n`);
}

/** Progress of a long command: a bar with count, rate and ETA on a terminal, nothing otherwise. */
export type Progress = {
  /** `done` records so far; `fraction` of the work when known (e.g. bytes read of a file). */
  update(done: number, fraction?: number): void;
  /** A message line on stderr: above the bar, which is drawn again under it. */
  log(line: string): void;
  /** Ends the bar and clears it, after writing the messages still waiting: the summary and the prompt come on a clean line. */
  stop(): void;
};

const SCALE = 10_000;

/** `sized`: the share of the work done is known (a file's size, a queue's item count). */
export function startProgress(label: string, enabled: boolean, sized: boolean): Progress {
  if (!enabled || !process.stderr.isTTY) return { update() {}, log: (line) => process.stderr.write(`${line}\n`), stop() {} };
  const started = performance.now();
  // cli-progress's MultiBar (with one bar) is the one that writes log lines above its bars.
  const bars = new MultiBar({
    stream: process.stderr,
    format: sized ? `${label} {bar} {percentage}% | {records} records | {rate}/s | ETA {remaining}` : `${label} | {records} records | {rate}/s`,
    hideCursor: true,
    clearOnComplete: true,
    fps: 5,
  });
  const bar = bars.create(SCALE, 0, { records: 0, rate: 0, remaining: '?' });
  return {
    update(done, fraction) {
      const seconds = (performance.now() - started) / 1000;
      const rate = seconds > 0 ? Math.round(done / seconds) : 0;
      const remaining = fraction && fraction > 0 ? `${Math.max(0, Math.round((seconds / fraction) * (1 - fraction)))}s` : '?';
      bar.update(fraction === undefined ? 0 : Math.round(fraction * SCALE), { records: done.toLocaleString('en'), rate: rate.toLocaleString('en'), remaining });
    },
    log(line) {
      bars.log(`${line}\n`);
    },
    stop() {
      // Its stop clears the bar but does not write what waits to be logged: a last redraw does.
      bars.update();
      bars.stop();
    },
  };
}

/** Line numbers as compact ranges: [[1, 1000], [1201, 1500]] → "1-1000, 1201-1500". */
export function formatRanges(ranges: readonly (readonly [number, number])[]): string {
  if (!ranges.length) return 'none';
  return ranges.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(', ');
}

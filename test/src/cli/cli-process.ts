import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { REPO_ROOT, runProcess, type ProcessRun } from '../harness/child-server.ts';

// The CLI as users run it: its own process, as the root `npm run loupe` script starts it (its Node
// flags read from package.json so that they cannot drift), from the repository root.
export const CLI_ENTRY = 'clients/cli/bin/loupe.js';
export const CLI_NODE_FLAGS = (() => {
  const script = (JSON.parse(readFileSync(`${REPO_ROOT}package.json`, 'utf8')) as { scripts: { loupe: string } }).scripts.loupe;
  return (/node ((?:--\S+ )*)clients\/cli\/bin\/loupe\.js/.exec(script)?.[1] ?? '').split(' ').filter(Boolean);
})();

export type CliTarget = { url: string; apiKey: string };

function cliEnv(target: CliTarget): Record<string, string> {
  return { LOUPE_URL: target.url, LOUPE_API_KEY: target.apiKey };
}

/** Runs `loupe <args>` to its end. */
export function runCli(target: CliTarget, args: string[]): Promise<ProcessRun> {
  return runProcess(process.execPath, [...CLI_NODE_FLAGS, CLI_ENTRY, ...args], cliEnv(target));
}

/** Runs `loupe <args> --json`, expecting exit code `code`, and parses the last stdout line. */
export async function runCliJson<T = Record<string, unknown>>(target: CliTarget, args: string[], code = 0): Promise<T & { run: ProcessRun }> {
  const run = await runCli(target, ['--json', ...args]);
  if (run.code !== code) throw new Error(`loupe ${args.join(' ')} exited ${run.code}, expected ${code}\n${run.stdout.slice(-2000)}\n${run.stderr.slice(-2000)}`);
  const last = run.stdout.trim().split('\n').pop() ?? '';
  return { ...(JSON.parse(last) as T), run };
}

/** Starts `loupe <args>` and returns the child (for tests that kill it midway, or write its stdin). */
export function spawnCli(target: CliTarget, args: string[], { stdin = false } = {}): ChildProcess {
  return spawn(process.execPath, [...CLI_NODE_FLAGS, CLI_ENTRY, ...args], { cwd: REPO_ROOT, env: { ...process.env, ...cliEnv(target) }, stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
}

/** Writes records as a JSON Lines file. */
export function writeJsonl(path: string, records: readonly unknown[]): void {
  writeFileSync(path, records.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n') + '\n');
}

/** Parses JSON Lines text. */
export function parseJsonl<T = Record<string, unknown>>(text: string): T[] {
  return text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as T);
}

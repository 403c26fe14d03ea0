import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { freePort } from './ports.ts';

/** The repository root, so children run exactly as `npm start` would run them. */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SERVER_ENTRY = 'server/bin/loupe-server.js';
const ADMIN_ENTRY = 'server/src/admin/cli.ts';
const START_TIMEOUT_MS = 30_000;
/** The Node flags `npm start` gives the server (heap bounds), read from package.json so they cannot drift. */
const SERVER_NODE_FLAGS = (() => {
  const start = (JSON.parse(readFileSync(`${REPO_ROOT}package.json`, 'utf8')) as { scripts: { start: string } }).scripts.start;
  const flags = /node ((?:--\S+ )*)server\/bin\/loupe-server\.js/.exec(start)?.[1] ?? '';
  return flags.split(' ').filter(Boolean);
})();

export type LogLine = Record<string, unknown>;
export type Exit = { code: number | null; signal: NodeJS.Signals | null };

export type ChildServer = {
  url: string;
  child: ChildProcess;
  /** Every stdout line, parsed when it is JSON, in the order written. */
  logs: LogLine[];
  /** Raw stderr text (start-up failures, crashes). */
  stderr(): string;
  exited: Promise<Exit>;
  /** Sends the signal (SIGTERM by default) and waits for the exit; a no-op once exited. */
  stop(signal?: NodeJS.Signals): Promise<Exit>;
};

export type ChildServerOptions = {
  databaseUrl: string;
  env?: Record<string, string>;
  /**
   * Where stdout goes. By default it is piped and parsed into `logs`. A path hands the file to the
   * child as its stdout instead (benchmarks: the server logs as in production, and the parent
   * neither parses nor throttles its writes); `logs` then holds only what was read to find the url.
   */
  logFile?: string;
  /** The open-file limit (`ulimit -n`) the server runs under, set by a shell that then execs it. */
  fileLimit?: number;
};

/** Log levels at which the server does not write its "loupe listening" line. */
const QUIET_LEVELS = new Set(['warn', 'error', 'fatal', 'silent']);

/**
 * The real server as its own process (`node server/bin/loupe-server.js`, as `npm start` runs it)
 * on a free port. It is ready when it logs "loupe listening" (PORT=0, the url comes from that
 * line); at a log level that hides the line, it gets a port picked here and is ready when GET
 * /health answers.
 */
export async function startChildServer(options: ChildServerOptions): Promise<ChildServer> {
  const env: Record<string, string | undefined> = { ...process.env, PORT: '0', LOUPE_CATALOG_WATCH: 'false', ...options.env, DATABASE_URL: options.databaseUrl };
  const quiet = QUIET_LEVELS.has(env.LOUPE_LOG_LEVEL ?? 'info');
  if (quiet) env.PORT = String(await freePort());
  const fd = options.logFile ? openSync(options.logFile, 'w') : undefined;
  const command = [process.execPath, ...SERVER_NODE_FLAGS, SERVER_ENTRY];
  const [file, ...args] = options.fileLimit === undefined ? command : ['bash', '-c', `ulimit -n ${options.fileLimit} && exec "$@"`, 'bash', ...command];
  const child = spawn(file!, args, { cwd: REPO_ROOT, env, stdio: ['ignore', fd ?? 'pipe', 'pipe'] });
  if (fd !== undefined) closeSync(fd); // the child holds its own copy
  const logs: LogLine[] = [];
  let errText = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (errText += chunk));
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));

  let poll: NodeJS.Timeout | undefined;
  if (options.logFile) {
    // Read back only while starting, for the url and for the error message if start-up fails.
    const file = options.logFile;
    poll = setInterval(() => {
      logs.splice(0, logs.length, ...readFileSync(file, 'utf8').split('\n').filter(Boolean).map(parseLine));
    }, 50);
  } else {
    createInterface({ input: child.stdout!, crlfDelay: Infinity }).on('line', (line) => logs.push(parseLine(line)));
  }
  const urlPromise = quiet ? healthy(`http://${env.HOST ?? '127.0.0.1'}:${env.PORT}`, exited) : listeningLine(logs, exited);

  let timer: NodeJS.Timeout | undefined;
  const failure = new Promise<never>((_, reject) => {
    const describe = (why: string) =>
      new Error(`${why}\n--- stdout ---\n${logs.map((l) => JSON.stringify(l)).join('\n')}\n--- stderr ---\n${errText}`);
    const signal = quiet ? 'answer GET /health' : 'log "loupe listening"';
    timer = setTimeout(() => reject(describe(`server did not ${signal} within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
    void exited.then((exit) => reject(describe(`server exited before listening (code ${exit.code}, signal ${exit.signal})`)));
  });
  failure.catch(() => undefined); // a rejection after start-up succeeded is expected and ignored

  try {
    const url = await Promise.race([urlPromise, failure]);
    return {
      url,
      child,
      logs,
      stderr: () => errText,
      exited,
      async stop(signal: NodeJS.Signals = 'SIGTERM') {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        return exited;
      },
    };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  } finally {
    clearTimeout(timer);
    clearInterval(poll);
  }
}

async function listeningLine(logs: LogLine[], exited: Promise<Exit>): Promise<string> {
  let gone = false;
  void exited.then(() => (gone = true));
  while (!gone) {
    const line = logs.find((l) => l.msg === 'loupe listening' && typeof l.url === 'string');
    if (line) return line.url as string;
    await sleep(20);
  }
  return new Promise<never>(() => undefined); // the exit is reported by the caller
}

async function healthy(url: string, exited: Promise<Exit>): Promise<string> {
  let gone = false;
  void exited.then(() => (gone = true));
  while (!gone) {
    const ok = await fetch(`${url}/health`).then((r) => r.ok, () => false);
    if (ok) return url;
    await sleep(50);
  }
  return new Promise<never>(() => undefined);
}

function parseLine(line: string): LogLine {
  try {
    return JSON.parse(line) as LogLine;
  } catch {
    return { unparsed: line };
  }
}

export type CliUser = { user_id: string; username: string; api_key: string };

let counter = 0;

/** A user with one key, made by the admin tool in its own process, as an operator would. */
export async function createUserViaCli(
  databaseUrl: string,
  options: { entity?: string; role?: 'admin' | 'member' | 'annotator' | 'viewer'; username?: string } = {},
): Promise<CliUser> {
  const username = options.username ?? `cli${process.pid}x${++counter}`;
  const args = [ADMIN_ENTRY, 'users', 'create', username, '--json'];
  if (options.entity) args.push('--entity', options.entity);
  if (options.role) args.push('--role', options.role);
  const { code, stdout, stderr } = await runProcess(process.execPath, args, { DATABASE_URL: databaseUrl });
  if (code !== 0) throw new Error(`admin "users create" exited ${code}\n${stdout}\n${stderr}`);
  const line = stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(line) as CliUser;
}

export type ProcessRun = { code: number | null; stdout: string; stderr: string };

/**
 * Runs a command from the repository root to its end and collects what it printed. `env` is the
 * whole environment when `replaceEnv` is set, else it is added to this process's; `stdin` is
 * written to its standard input (else it is empty).
 */
export function runProcess(command: string, args: string[], env: Record<string, string | undefined>, { replaceEnv = false, stdin }: { replaceEnv?: boolean; stdin?: string } = {}): Promise<ProcessRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: REPO_ROOT, env: replaceEnv ? env : { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.on('error', () => {}); // a child that exits without reading it (EPIPE) is no failure
    child.stdin.end(stdin ?? ''); // without stdin, an empty one: read at once to its end
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

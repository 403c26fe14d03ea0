import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.ts';

// A PostgreSQL instance of its own, for tests that stop and start the database: stopping the
// shared one would break every other test running at the same time.

const run = promisify(execFile);
const BIN = process.env.LOUPE_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const OS_USER = 'postgres';

export type PrivatePostgres = {
  /** Connection URL of the `postgres` database, user `postgres`, trust auth. */
  url: string;
  port: number;
  dataDir: string;
  start(): Promise<void>;
  /** `pg_ctl stop -m fast`: open connections are terminated, as in a real outage. */
  stop(): Promise<void>;
  /**
   * SIGSTOP to the postmaster and every process it started: the server keeps its sockets and
   * stops answering, as a hung or partitioned database does (connections neither work nor fail).
   */
  pause(): void;
  /** SIGCONT to the same processes. */
  resume(): void;
  /** Stops the instance (if running) and deletes its files. */
  destroy(): Promise<void>;
};

/** Why a private instance cannot be made here, or undefined when it can. */
export function privatePostgresUnavailable(): string | undefined {
  // initdb refuses to run as root, and only root can switch to the postgres user without a password.
  if (process.getuid?.() !== 0) return 'not running as root (initdb must run as user postgres via runuser)';
  for (const tool of ['initdb', 'pg_ctl', 'postgres']) {
    if (!existsSync(join(BIN, tool))) return `${join(BIN, tool)} is missing`;
  }
  if (!existsSync('/usr/sbin/runuser') && !existsSync('/usr/bin/runuser')) return 'runuser is missing';
  if (!account(OS_USER)) return `there is no OS user ${OS_USER}`;
  return undefined;
}

async function asPostgres(tool: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await run('runuser', ['-u', OS_USER, '--', join(BIN, tool), ...args], { timeout: 60_000 });
    return stdout;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${tool} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

/** initdb into a new temp folder, then start it on a free port; sockets stay in that folder too. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const root = mkdtempSync(join(tmpdir(), 'loupe-pg-'));
  const { uid, gid } = account(OS_USER)!;
  chownSync(root, uid, gid);
  const dataDir = join(root, 'data');
  const logFile = join(root, 'postgres.log');
  await asPostgres('initdb', ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  const options = `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=off`;
  let running = false;
  let paused: number[] = [];
  const instance: PrivatePostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    async start() {
      await asPostgres('pg_ctl', ['start', '-D', dataDir, '-l', logFile, '-w', '-t', '60', '-o', options]);
      running = true;
    },
    async stop() {
      await asPostgres('pg_ctl', ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '60']);
      running = false;
    },
    pause() {
      const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      // The postmaster first, so that it starts no new process while its children are listed.
      process.kill(postmaster, 'SIGSTOP');
      paused = [postmaster, ...childrenOf(postmaster)];
      for (const pid of paused.slice(1)) process.kill(pid, 'SIGSTOP');
    },
    resume() {
      for (const pid of paused) process.kill(pid, 'SIGCONT');
      paused = [];
    },
    async destroy() {
      if (paused.length) instance.resume();
      if (running || existsSync(join(dataDir, 'postmaster.pid'))) {
        await asPostgres('pg_ctl', ['stop', '-D', dataDir, '-m', 'immediate', '-w', '-t', '60']).catch(() => undefined);
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
  try {
    await instance.start();
  } catch (error) {
    await instance.destroy();
    throw error;
  }
  return instance;
}

/** The processes whose parent is `pid`, from /proc. */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The command name, in parentheses, may hold spaces: the fields after it are fixed.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) children.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return children;
}

/** uid and gid of an OS account, from the account database (they differ between machines). */
function account(name: string): { uid: number; gid: number } | undefined {
  const line = readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith(`${name}:`));
  if (!line) return undefined;
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { REPO_ROOT, startChildServer, type ChildServer } from '../harness/child-server.ts';

// The processes a benchmark drives. Each target runs in its own process so that the load
// generator (this process) never shares an event loop with what it measures.

export type Target = { name: string; url: string; stop(): Promise<unknown> };

/**
 * The real Loupe server over a new SQLite file, logging at LOUPE_LOG_LEVEL (default info) into
 * `logFile` exactly as in production: the benchmark must pay for what production pays for. `env`
 * adds settings.
 */
export async function startLoupe(databaseUrl: string, logFile: string, env: Record<string, string> = {}): Promise<Target & { server: ChildServer }> {
  const server = await startChildServer({
    databaseUrl,
    logFile,
    env: { LOUPE_LOG_LEVEL: process.env.LOUPE_LOG_LEVEL ?? 'info', ...env },
  });
  return { name: 'loupe', url: server.url, server, stop: () => server.stop() };
}

/** A Node script that prints one JSON line `{url}` once it listens. */
export async function startScript(name: string, script: URL, env: Record<string, string>): Promise<Target & { child: ChildProcess }> {
  const child = spawn(process.execPath, [fileURLToPath(script)], {
    cwd: REPO_ROOT,
    env: { ...process.env, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within 30 s`)), 30_000);
    child.once('exit', (code) => reject(new Error(`${name} exited with code ${code} before listening`)));
    createInterface({ input: child.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      resolve((JSON.parse(line) as { url: string }).url);
    });
  });
  return {
    name,
    url,
    child,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

import { Writable } from 'node:stream';
import { loadConfig, startServer, type RunningServer, type ServerParts } from '@loupe/server';
import { pino } from 'pino';
import { freshDatabase, type Backend, type TestDatabase } from './databases.ts';

export type TestServer = {
  url: string;
  backend: Backend;
  database: TestDatabase;
  server: RunningServer;
  /** Every log line the server wrote, parsed. */
  logs: Record<string, unknown>[];
  stop(): Promise<void>;
};

/**
 * The real server, in this process, on port 0, over a fresh database of the given backend, or over
 * `shared`, a database the caller made (and drops: stop leaves it), e.g. for a restart. `parts`
 * replaces parts of the server (the resolver of webhook hosts).
 */
export async function startTestServer(backend: Backend, env: Record<string, string> = {}, shared?: TestDatabase, parts: ServerParts = {}): Promise<TestServer> {
  const database = shared ?? (await freshDatabase(backend));
  const config = loadConfig({ ...env, DATABASE_URL: database.url, PORT: '0', LOUPE_CATALOG_WATCH: env.LOUPE_CATALOG_WATCH ?? 'false' });
  const logs: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) logs.push(JSON.parse(line));
      done();
    },
  });
  const log = pino({ level: 'info', base: { service: 'loupe' } }, sink);
  const server = await startServer(config, log, parts);
  return {
    url: server.url,
    backend,
    database,
    server,
    logs,
    async stop() {
      await server.close();
      if (!shared) await database.drop();
    },
  };
}

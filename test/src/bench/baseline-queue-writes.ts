import type { AddressInfo } from 'node:net';
import express, { type Request, type Response } from 'express';
import type { Reply } from './baseline-queue-sql.ts';

// The yardstick for progress (contract 4.1) and claim (5.2): a bare Express 5 app with
// express.json() whose two routes do Loupe's SQL work by hand through the same driver
// (node:sqlite or pg), on the same database. No schema validation, logs, metrics or request ids.
// Run as its own process by the benchmark (DATABASE_URL as Loupe's); prints one JSON line {url}.

export type QueueWrites = {
  progress(authorization: string | undefined, queueId: string, itemId: string, body: unknown): Reply | Promise<Reply>;
  claim(authorization: string | undefined, queueId: string, body: unknown): Reply | Promise<Reply>;
};

async function open(databaseUrl: string): Promise<QueueWrites> {
  if (databaseUrl.startsWith('sqlite:')) return (await import('./baseline-queue-sqlite.ts')).sqliteQueueWrites(databaseUrl.slice('sqlite:'.length));
  return (await import('./baseline-queue-postgres.ts')).postgresQueueWrites(databaseUrl);
}

async function main(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) throw new Error('DATABASE_URL is required');
  const writes = await open(databaseUrl);
  const send = (res: Response, reply: Reply) => res.status(reply.status).json(reply.body);
  const param = (req: Request, name: string) => String(req.params[name]);

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(express.json());
  app.post('/annotation_queues/:queue_id/items/claim', async (req, res) => {
    send(res, await writes.claim(req.headers.authorization, param(req, 'queue_id'), req.body));
  });
  app.post('/annotation_queues/:queue_id/items/:item_id/progress', async (req, res) => {
    send(res, await writes.progress(req.headers.authorization, param(req, 'queue_id'), param(req, 'item_id'), req.body));
  });

  const server = app.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    console.log(JSON.stringify({ msg: 'baseline listening', url: `http://127.0.0.1:${port}` }));
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

await main();

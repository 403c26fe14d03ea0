import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';

// A webhook receiver on loopback for the tests: it records every delivery it gets, verifies each
// with the standardwebhooks package (the specification's reference TypeScript library, not the
// server's own code) against the secrets the test registered for its path, answers as the test
// says, and counts requests of one webhook-id that overlap in time.

export type Delivery = {
  path: string;
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  /** The parsed body: `{type, timestamp, data}`. */
  json: { type: string; timestamp: string; data: any };
  /** For each registered secret of the path, whether the library verified the delivery with it. */
  verifiedWith: boolean[];
  /** When it arrived (performance.now()). */
  at: number;
  /** The status it was answered with. */
  status: number;
};

/** How to answer a delivery: a status, and optionally headers and a delay before answering. */
export type Answer = { status: number; headers?: Record<string, string>; delayMs?: number };
/** Answers the n-th delivery (0-based) of a path; `hang` keeps the request open until the receiver closes. */
export type Responder = (delivery: Omit<Delivery, 'status'>, n: number) => Answer | 'hang';

export type WebhookReceiver = {
  url: string;
  /** Every delivery so far, in arrival order. */
  deliveries: Delivery[];
  /** The receiver's url of a path, e.g. `/hooks/a`. */
  urlOf(path: string): string;
  /** The secrets a path's deliveries must verify with (replaces earlier ones). */
  setSecrets(path: string, secrets: string[]): void;
  respond(path: string, responder: Responder): void;
  /** The most requests of one webhook-id that were open at once, over all ids. */
  maxOverlap(): number;
  /** Waits until `count` deliveries of the path match, or fails after `timeoutMs`. */
  waitFor(path: string, predicate: (delivery: Delivery) => boolean, options?: { count?: number; timeoutMs?: number }): Promise<Delivery[]>;
  close(): Promise<void>;
};

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const deliveries: Delivery[] = [];
  const secrets = new Map<string, string[]>();
  const responders = new Map<string, Responder>();
  const counts = new Map<string, number>();
  const open = new Map<string, number>();
  let overlap = 0;
  const hanging = new Set<ServerResponse>();

  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const path = (req.url ?? '/').split('?')[0]!;
    const header = (name: string) => String(req.headers[name] ?? '');
    const id = header('webhook-id');
    open.set(id, (open.get(id) ?? 0) + 1);
    overlap = Math.max(overlap, open.get(id)!);
    const headers = { 'webhook-id': id, 'webhook-timestamp': header('webhook-timestamp'), 'webhook-signature': header('webhook-signature') };
    const verifiedWith = (secrets.get(path) ?? []).map((secret) => {
      try {
        new Webhook(secret).verify(body, headers);
        return true;
      } catch {
        return false;
      }
    });
    let json: Delivery['json'];
    try {
      json = JSON.parse(body);
    } catch {
      json = { type: '(not JSON)', timestamp: '', data: null };
    }
    const received = { path, id, timestamp: headers['webhook-timestamp'], signature: headers['webhook-signature'], body, json, verifiedWith, at: performance.now() };
    const n = counts.get(path) ?? 0;
    counts.set(path, n + 1);
    const answer = responders.get(path)?.(received, n) ?? { status: 200 };
    if (answer === 'hang') {
      deliveries.push({ ...received, status: 0 });
      hanging.add(res);
      res.on('close', () => open.set(id, open.get(id)! - 1));
      return;
    }
    if (answer.delayMs) await sleep(answer.delayMs);
    deliveries.push({ ...received, status: answer.status });
    open.set(id, open.get(id)! - 1);
    res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
    res.end('ok');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    deliveries,
    urlOf: (path) => `${url}${path}`,
    setSecrets: (path, list) => void secrets.set(path, list),
    respond: (path, responder) => void responders.set(path, responder),
    maxOverlap: () => overlap,
    async waitFor(path, predicate, { count = 1, timeoutMs = 10_000 } = {}) {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        const found = deliveries.filter((delivery) => delivery.path === path && predicate(delivery));
        if (found.length >= count) return found;
        if (performance.now() > deadline) {
          throw new Error(`waited ${timeoutMs} ms for ${count} deliveries to ${path}; got ${found.length} matching of ${deliveries.filter((d) => d.path === path).length}: ${JSON.stringify(deliveries.filter((d) => d.path === path).map((d) => [d.json.type, d.status]))}`);
        }
        await sleep(20);
      }
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

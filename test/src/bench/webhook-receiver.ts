import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

// The webhooks benchmark's receiver, a process of its own (started by webhooks.ts): a receiver on
// loopback that answers each delivery at once and notes its delay from the event's commit. Apart
// from the load generator, so that reading deliveries never holds up the writes being timed.
// GET /stats?from=<n> answers {received, noted, delays}: deliveries received, delays noted, and
// the delays from the n-th on.

let received = 0;
const delays: number[] = [];

const server = createServer((req, res) => {
  if (req.method === 'GET') {
    const from = Number(new URL(req.url ?? '/', 'http://receiver').searchParams.get('from') ?? 0);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ received, noted: delays.length, delays: delays.slice(from) }));
    return;
  }
  let head = '';
  req.on('data', (chunk: Buffer) => {
    if (head.length < 200) head += chunk.toString('utf8', 0, 200);
  });
  req.on('end', () => {
    const at = Date.now();
    received++;
    // The body begins {"type":"…","timestamp":"…": only its timestamp is read.
    const timestamp = /"timestamp":"([^"]+)"/.exec(head)?.[1];
    if (timestamp) delays.push(at - Date.parse(timestamp));
    res.writeHead(204).end();
  });
});

server.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
});

import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestServer } from '../harness/server.ts';
import { createUser } from '../harness/users.ts';

const mode = process.env.MODE ?? 'receiver';
const backend = (process.env.BACKEND ?? 'postgresql') as 'postgresql';
let received = 0;
const recv = createServer((req, res) => { req.resume(); req.on('end', () => { received++; if (mode !== 'hang') res.writeHead(204).end(); }); });
recv.listen(0, '127.0.0.1'); await once(recv, 'listening');
const rurl = `http://127.0.0.1:${(recv.address() as AddressInfo).port}`;
const server = await startTestServer(backend, { LOUPE_WEBHOOK_ALLOW_HTTP: 'true', LOUPE_WEBHOOK_ALLOW_PRIVATE: 'true' });
const user = await createUser(server, { entity: 'bench', role: 'member' });
const headers = { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`api:${user.api_key}`).toString('base64')}` };
if (mode !== 'none') for (let i = 0; i < 2; i++) {
  const r = await fetch(`${server.url}/webhooks`, { method: 'POST', headers, body: JSON.stringify({ project_id: 'bench/h', url: `${rurl}/x`, events: ['feedback.created'] }) });
  if (r.status !== 200) throw new Error(await r.text());
}
let n = 0;
const bodies = Array.from({ length: 8 }, () => JSON.stringify({ batch: Array.from({ length: 1000 }, () => ({ project_id: 'bench/h', svc_ref: `svc:///bench/h/call/c${n++ % 5000}`, feedback_type: 'thumbs', payload: { value: n % 5, reason: 'tone', tags: ['support', 'en'] } })) }));
const post = async (i: number) => { const r = await fetch(`${server.url}/feedback/batch/create`, { method: 'POST', headers, body: bodies[i % 8] }); await r.text(); };
for (let i = 0; i < 10; i++) await post(i);
await new Promise((r) => setTimeout(r, 500));
const c0 = process.cpuUsage(); const t = performance.now();
for (let i = 0; i < 60; i++) await post(i);
while (mode === 'receiver' && received < 2 * 70) await new Promise((r) => setTimeout(r, 5));
const c = process.cpuUsage(c0);
console.log(mode, backend, 'wall ms/batch', ((performance.now() - t) / 60).toFixed(1), 'cpu ms/batch', ((c.user + c.system) / 1000 / 60).toFixed(1), 'received', received);
await server.stop(); recv.close();

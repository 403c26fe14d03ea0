import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHmac, randomBytes } from 'node:crypto';
import { request } from 'node:http';

const recv = createServer((req, res) => { req.resume(); req.on('end', () => res.writeHead(204).end()); });
recv.listen(0, '127.0.0.1'); await once(recv, 'listening');
const port = (recv.address() as AddressInfo).port;
const body = Buffer.from('x'.repeat(170_000));
const key = randomBytes(24);
let c0 = process.cpuUsage(); let t = performance.now();
for (let i = 0; i < 200; i++) createHmac('sha256', key).update('id.123.').update(body).digest('base64');
let c = process.cpuUsage(c0); console.log('hmac ms', ((c.user + c.system) / 1000 / 200).toFixed(3), 'wall', ((performance.now() - t) / 200).toFixed(3));
const send = (agent: false | undefined) => new Promise<void>((resolve) => {
  const r = request({ host: '127.0.0.1', port, method: 'POST', path: '/', agent, headers: { 'content-length': String(body.length) } }, (res) => { res.resume(); res.on('end', resolve); });
  r.end(body);
});
c0 = process.cpuUsage(); t = performance.now();
for (let i = 0; i < 200; i++) await send(false);
c = process.cpuUsage(c0); console.log('send (client+receiver) ms', ((c.user + c.system) / 1000 / 200).toFixed(3), 'wall', ((performance.now() - t) / 200).toFixed(3));
recv.close();

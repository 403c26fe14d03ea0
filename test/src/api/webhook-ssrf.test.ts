import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { batchCreate, freeForm } from '../harness/feedback.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../harness/webhook-receiver.ts';

// Contract 5.13, server-side request forgery: without the allow settings, a url that is http://,
// or whose host is or resolves to a loopback, private, link-local, unique-local, multicast or
// unspecified address, is refused with that reason; the address checked at each attempt is the
// one connected to. Host names resolve through a resolver the test controls.

/** A public address. No test connects to it: it is refused before, or the attempt's time runs out first. */
const PUBLIC = '93.184.215.14';

describeEachBackend('webhook server-side request forgery', (backend) => {
  let strict: TestServer;
  let httpAllowed: TestServer;
  let receiver: WebhookReceiver;
  let member: CreatedKeyForTest;
  let member2: CreatedKeyForTest;
  /** What each name resolves to (a list, or a function asked at each lookup); a name missing is ENOTFOUND. */
  const names = new Map<string, string[] | (() => Promise<string[]>)>();
  const lookups: string[] = [];
  const resolveHost = async (hostname: string) => {
    lookups.push(hostname);
    const entry = names.get(hostname);
    const found = typeof entry === 'function' ? await entry() : entry;
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    strict = await startTestServer(backend, { LOUPE_WEBHOOK_POLL_MS: '100' }, undefined, { resolveHost });
    // http:// allowed (the receiver is plain HTTP on loopback), private addresses not.
    httpAllowed = await startTestServer(
      backend,
      { LOUPE_WEBHOOK_ALLOW_HTTP: 'true', LOUPE_WEBHOOK_POLL_MS: '100', LOUPE_WEBHOOK_RETRY_SCHEDULE: '1h', LOUPE_WEBHOOK_TIMEOUT_MS: '300' },
      undefined,
      { resolveHost },
    );
    member = await createUser(strict, { entity: 'acme', role: 'member' });
    member2 = await createUser(httpAllowed, { entity: 'acme', role: 'member' });
  });
  afterAll(async () => {
    await strict?.stop();
    await httpAllowed?.stop();
    await receiver?.close();
  });

  const create = (server: TestServer, key: string, url: string) =>
    rest(server, 'POST', '/webhooks', { key, body: { project_id: 'acme/ssrf', url, events: ['*'] } });

  it('refuses http:// and hosts that are or resolve to non-public addresses, saying why', async () => {
    names.set('localhost', ['127.0.0.1', '::1']);
    names.set('internal.example', ['10.1.2.3']);
    names.set('mixed.example', [PUBLIC, '192.168.0.7']);
    names.set('metadata.example', ['169.254.169.254']);
    names.set('public.example', [PUBLIC]);
    const cases: [string, RegExp][] = [
      ['http://public.example/hook', /must be https:\/\/.*LOUPE_WEBHOOK_ALLOW_HTTP/],
      ['https://127.0.0.1/hook', /127\.0\.0\.1 is a loopback address/],
      ['https://127.1.2.3:8443/hook', /loopback/],
      ['https://2130706433/hook', /127\.0\.0\.1 is a loopback address/],
      ['https://10.0.0.1/hook', /10\.0\.0\.1 is a private address/],
      ['https://172.16.5.4/hook', /private/],
      ['https://172.31.255.255/hook', /private/],
      ['https://192.168.1.1/hook', /private/],
      ['https://169.254.169.254/latest/meta-data', /link-local.*metadata/],
      ['https://[::1]/hook', /loopback/],
      ['https://[fd00::1]/hook', /unique-local/],
      ['https://[fe80::1]/hook', /link-local/],
      ['https://[::ffff:127.0.0.1]/hook', /127\.0\.0\.1 is a loopback address/],
      ['https://0.0.0.0/hook', /unspecified/],
      ['https://[::]/hook', /unspecified/],
      ['https://224.0.0.1/hook', /multicast/],
      ['https://localhost/hook', /localhost resolves to 127\.0\.0\.1: .*loopback/],
      ['https://internal.example/hook', /internal\.example resolves to 10\.1\.2\.3: .*private/],
      ['https://mixed.example/hook', /resolves to 192\.168\.0\.7/],
      ['https://metadata.example/hook', /169\.254\.169\.254 is a link-local address/],
      ['https://unknown.example/hook', /could not be resolved \(ENOTFOUND\)/],
    ];
    for (const [url, reason] of cases) {
      const reply = await create(strict, member.api_key, url);
      expect(reply.status, url).toBe(400);
      expect(reply.body.reason, url).toMatch(reason);
    }
    // A public host is accepted, and so is a public address.
    expect((await create(strict, member.api_key, 'https://public.example/hook')).status).toBe(200);
    expect((await create(strict, member.api_key, `https://${PUBLIC}/hook`)).status).toBe(200);
    // An update is checked the same way.
    const made = await create(strict, member.api_key, 'https://public.example/other');
    const changed = await rest(strict, 'PUT', `/webhooks/${made.body.webhook.id}`, {
      key: member.api_key,
      body: { project_id: 'acme/ssrf', url: 'https://169.254.169.254/' },
    });
    expect(changed.status).toBe(400);
    expect(changed.body.reason).toMatch(/link-local/);
  });

  it('checks at every attempt, and connects to the address it checked: a name that turns to 127.0.0.1 is refused', async () => {
    const port = new URL(receiver.url).port;
    names.set('rebind.example', [PUBLIC]);
    const made = await create(httpAllowed, member2.api_key, `http://rebind.example:${port}/rebind`);
    expect(made.status, made.text).toBe(200);
    // The name now resolves to loopback, where the receiver listens: the attempt is refused.
    names.set('rebind.example', ['127.0.0.1']);
    expect((await batchCreate(httpAllowed, member2.api_key, [freeForm('acme/ssrf')])).status).toBe(200);
    const delivery = await settledDelivery(httpAllowed, member2.api_key, made.body.webhook.id);
    expect(delivery.last_status).toBeNull();
    expect(delivery.last_error).toMatch(/^refused: rebind\.example resolves to 127\.0\.0\.1: 127\.0\.0\.1 is a loopback address/);
    expect(receiver.deliveries.filter((d) => d.path === '/rebind')).toHaveLength(0);
  });

  it('resolves once per attempt: the answer checked is the answer connected to', async () => {
    const port = new URL(receiver.url).port;
    names.set('flip.example', [PUBLIC]);
    const made = await create(httpAllowed, member2.api_key, `http://flip.example:${port}/flip`);
    expect(made.status).toBe(200);
    // The first lookup of an attempt answers the public address, every later one loopback: a sender
    // that checked one answer and connected by another lookup would reach the receiver. The first
    // answer comes after the attempt's 300 ms, so no connection to the public address is made.
    let first = true;
    names.set('flip.example', async () => {
      if (!first) return ['127.0.0.1'];
      first = false;
      await new Promise((resolve) => setTimeout(resolve, 600));
      return [PUBLIC];
    });
    const before = lookups.filter((name) => name === 'flip.example').length;
    expect((await batchCreate(httpAllowed, member2.api_key, [freeForm('acme/ssrf')])).status).toBe(200);
    const delivery = await settledDelivery(httpAllowed, member2.api_key, made.body.webhook.id);
    expect(delivery.last_error).toBe('no answer within 300 ms');
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(lookups.filter((name) => name === 'flip.example').length - before).toBe(1);
    expect(receiver.deliveries.filter((d) => d.path === '/flip')).toHaveLength(0);
  });

  /** The first delivery of the webhook once its first attempt has ended. */
  async function settledDelivery(server: TestServer, key: string, webhookId: string) {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const reply = await rest(server, 'POST', `/webhooks/${webhookId}/deliveries/query`, { key, body: { project_id: 'acme/ssrf' } });
      const delivery = reply.body.deliveries[0];
      if (delivery?.attempts >= 1) return delivery;
      if (Date.now() > deadline) throw new Error(`no attempt ended: ${reply.text}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
});

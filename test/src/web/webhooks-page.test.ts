import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { describeInBrowser, launchChromium, openPage, screenshot, seriousViolations, type PageTrouble, type PageView } from '../harness/browser.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { uniqueId } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { startWebhookReceiver, type Delivery, type WebhookReceiver } from '../harness/webhook-receiver.ts';

// The webhooks page (contract 5.13) in Chromium against the real server and a real receiver on
// loopback, which verifies every delivery with the standardwebhooks package. A member creates a
// webhook by keyboard, copies its secret, sends a test event and sees it delivered without a
// reload; a failing receiver's delivery shows as retrying, then failed, and is retried by hand;
// disabling, enabling and rotating are read back through the API. Viewers and annotators are
// told who manages webhooks (the server refuses them the list: a url may carry credentials).

// One retry, an hour after the first failure: a failed delivery waits as "retrying" for the test.
const SCHEDULE = '1h';

describeInBrowser('webhooks page in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachBackend('webhooks page', (backend) => {
    let server: TestServer;
    let receiver: WebhookReceiver;
    let alice: CreatedKeyForTest;
    let victor: CreatedKeyForTest;
    let anna: CreatedKeyForTest;
    const troubles: PageTrouble[] = [];

    beforeAll(async () => {
      receiver = await startWebhookReceiver();
      server = await startTestServer(backend, {
        LOUPE_WEBHOOK_ALLOW_HTTP: 'true',
        LOUPE_WEBHOOK_ALLOW_PRIVATE: 'true',
        LOUPE_WEBHOOK_RETRY_SCHEDULE: SCHEDULE,
        LOUPE_WEBHOOK_POLL_MS: '100',
      });
      alice = await createUser(server, { entity: 'acme', role: 'member' });
      victor = await createUser(server, { entity: 'acme', role: 'viewer' });
      anna = await createUser(server, { entity: 'acme', role: 'annotator' });
    });
    afterAll(async () => {
      await server?.stop();
      await receiver?.close();
    });

    async function open(key: string, path: string, view: PageView = {}): Promise<{ page: Page; close: () => Promise<void> }> {
      const opened = await openPage(browser, view);
      troubles.push(opened.trouble);
      await opened.page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
      await opened.page.addInitScript((apiKey: string) => sessionStorage.setItem('loupe.apiKey', apiKey), key);
      await opened.page.goto(`${server.url}/app/${path}`);
      return opened;
    }

    const webhooksOf = async (projectId: string) => {
      const reply = await rest(server, 'POST', '/webhooks/query', { key: alice.api_key, body: { project_id: projectId } });
      expect(reply.status, reply.text).toBe(200);
      return reply.body.webhooks as Record<string, unknown>[];
    };
    const deliveriesOf = async (projectId: string, webhookId: string) => {
      const reply = await rest(server, 'POST', `/webhooks/${webhookId}/deliveries/query`, { key: alice.api_key, body: { project_id: projectId } });
      expect(reply.status, reply.text).toBe(200);
      return reply.body.deliveries as { id: string; event_id: string; state: string; attempts: number; last_status: number | null; last_error: string | null }[];
    };
    const createHook = async (projectId: string, path: string) => {
      const reply = await rest(server, 'POST', '/webhooks', { key: alice.api_key, body: { project_id: projectId, url: receiver.urlOf(path), events: ['*'] } });
      expect(reply.status, reply.text).toBe(200);
      receiver.setSecrets(path, [reply.body.secret]);
      return { id: reply.body.webhook.id as string, secret: reply.body.secret as string };
    };
    const card = (page: Page, url: string) => page.getByRole('article', { name: url, exact: true });
    /** The cells of a card's delivery rows, newest first, as the page shows them. */
    const rowsOf = (container: Locator) =>
      container.locator('table.deliveries tbody tr').evaluateAll((rows) => rows.map((row) => Array.from(row.querySelectorAll('th, td'), (cell) => cell.textContent?.trim() ?? '')));
    const verified = (delivery: Delivery) => delivery.verifiedWith.length > 0 && delivery.verifiedWith.every(Boolean);
    const focusedText = (page: Page) => page.evaluate(() => document.activeElement?.textContent ?? '');

    it('lets a member create a webhook by keyboard, copy its secret once, and see a test event delivered live and verified', async () => {
      const name = uniqueId('hooks').replace(/-/g, '');
      const projectId = `acme/${name}`;
      const path = `/${uniqueId('kbd')}`;
      const url = receiver.urlOf(path);
      const { page, close } = await open(alice.api_key, `p/${projectId}`);
      try {
        await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
        await page.getByRole('heading', { level: 1, name: `Webhooks of ${projectId}` }).waitFor();
        expect(new URL(page.url()).pathname).toBe(`/app/p/${projectId}/webhooks`);
        await page.getByText('No webhooks yet.').waitFor();

        // By keyboard: open the form, type the url, choose one event, describe it, submit.
        await page.getByRole('button', { name: 'New webhook' }).focus();
        await page.keyboard.press('Enter');
        const dialog = page.getByRole('dialog', { name: 'New webhook' });
        await dialog.waitFor();
        expect(await page.evaluate(() => document.activeElement?.getAttribute('type'))).toBe('url');
        await page.keyboard.type(url);
        await page.keyboard.press('Tab'); // "All events", checked
        await page.keyboard.press('Space');
        await page.keyboard.press('Tab'); // feedback.created
        await page.keyboard.press('Space');
        expect(await dialog.getByRole('checkbox', { name: /feedback\.created/ }).isChecked()).toBe(true);
        expect(await dialog.getByRole('checkbox', { name: /annotation_queue\.completed/ }).isChecked()).toBe(false);
        for (let n = 0; n < 4; n++) await page.keyboard.press('Tab'); // past the other three events
        await page.keyboard.type('CI results');
        await page.keyboard.press('Tab');
        expect(await focusedText(page)).toBe('Create webhook');
        await page.keyboard.press('Enter');

        // The secret, shown once, with a copy button; the panel takes the focus.
        const panel = page.getByRole('region', { name: `Signing secret of ${url}` });
        await panel.waitFor();
        await expect.poll(() => page.evaluate(() => document.activeElement?.tagName)).toBe('H2');
        expect(await dialog.isVisible()).toBe(false);
        const secret = await panel.getByLabel('Signing secret').inputValue();
        expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
        await panel.getByRole('button', { name: 'Copy' }).click();
        await panel.getByText('Copied to the clipboard.').waitFor();
        expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
        receiver.setSecrets(path, [secret]);
        await screenshot(page, `${backend}-webhooks-secret`);
        expect(await seriousViolations(page)).toEqual([]);
        await panel.getByRole('button', { name: 'I have copied it' }).click();
        expect(await panel.count()).toBe(0);
        expect(await page.content()).not.toContain(secret);

        // Stored as typed.
        const [stored] = await webhooksOf(projectId);
        expect(stored).toMatchObject({ url, events: ['feedback.created'], description: 'CI results', enabled: true, disabled_reason: null, created_by: alice.user_id });
        await card(page, url).getByText('No deliveries yet.').waitFor();

        // A test event: its row appears and turns delivered without a reload; the receiver
        // verified it with the secret the page showed.
        await card(page, url).getByRole('button', { name: `Send test to ${url}` }).press('Enter');
        await expect.poll(() => rowsOf(card(page, url)), { timeout: 10_000 }).toEqual([[expect.stringMatching(/^webhook\.test/), 'Delivered', '1', '200', '—', '—', expect.any(String), '']]);
        const [received] = await receiver.waitFor(path, (delivery) => delivery.json.type === 'webhook.test');
        expect(verified(received!)).toBe(true);
        expect(received!.json.data).toEqual({ project_id: projectId, webhook_id: stored!.id });
        const [delivery] = await deliveriesOf(projectId, stored!.id as string);
        expect(delivery).toMatchObject({ event_id: received!.id, state: 'delivered', attempts: 1, last_status: 200, last_error: null });
        expect(await rowsOf(card(page, url))).toEqual([[`webhook.test${received!.id}`, 'Delivered', '1', '200', '—', '—', expect.any(String), '']]);
      } finally {
        await close();
      }
    });

    it('shows a failing delivery as retrying, then failed, with its status and error, and retries it by hand', async () => {
      const projectId = `acme/${uniqueId('fail').replace(/-/g, '')}`;
      const path = `/${uniqueId('failing')}`;
      const url = receiver.urlOf(path);
      // The receiver fails twice, then accepts.
      receiver.respond(path, (_delivery, n) => ({ status: n < 2 ? 500 : 200 }));
      const { id: webhookId } = await createHook(projectId, path);

      const { page, close } = await open(alice.api_key, `p/${projectId}/webhooks`);
      try {
        const hook = card(page, url);
        await hook.getByText('No deliveries yet.').waitFor();
        await hook.getByRole('button', { name: `Send test to ${url}` }).click();
        // Failed once: retrying, an hour later by the schedule.
        await expect.poll(() => rowsOf(hook), { timeout: 10_000 }).toEqual([
          [expect.stringMatching(/^webhook\.test/), 'Retrying', '1', '500', 'the receiver answered 500', expect.any(String), expect.any(String), 'Retry now'],
        ]);
        const [retrying] = await deliveriesOf(projectId, webhookId);
        expect(retrying).toMatchObject({ state: 'pending', attempts: 1, last_status: 500, last_error: 'the receiver answered 500' });
        await screenshot(page, `${backend}-webhooks-retrying`);
        expect(await seriousViolations(page)).toEqual([]);

        // Retried now: the second attempt fails too, and ends the schedule: failed.
        await hook.getByRole('button', { name: /^Retry now the webhook\.test delivery/ }).click();
        await expect.poll(() => rowsOf(hook), { timeout: 10_000 }).toEqual([
          [expect.stringMatching(/^webhook\.test/), 'Failed', '2', '500', 'the receiver answered 500', '—', expect.any(String), 'Retry now'],
        ]);
        await screenshot(page, `${backend}-webhooks-failed`);

        // Retried again: delivered (the error is cleared), the same event (webhook-id) each time,
        // each one verified.
        await hook.getByRole('button', { name: /^Retry now the webhook\.test delivery/ }).click();
        await expect.poll(() => rowsOf(hook), { timeout: 10_000 }).toEqual([[expect.stringMatching(/^webhook\.test/), 'Delivered', '3', '200', '—', '—', expect.any(String), '']]);
        const got = await receiver.waitFor(path, () => true, { count: 3 });
        expect(got.map((delivery) => delivery.status)).toEqual([500, 500, 200]);
        expect(new Set(got.map((delivery) => delivery.id)).size).toBe(1);
        expect(got.every(verified)).toBe(true);
        expect(await deliveriesOf(projectId, webhookId)).toMatchObject([{ state: 'delivered', attempts: 3, last_status: 200, last_error: null }]);
      } finally {
        await close();
      }
    });

    it('disables, enables, rotates, edits and deletes, storing exactly that; deliveries carry both signatures after a rotation; a refused url shows at its field', async () => {
      const projectId = `acme/${uniqueId('rot').replace(/-/g, '')}`;
      const path = `/${uniqueId('rotate')}`;
      const url = receiver.urlOf(path);
      const { id: webhookId, secret: firstSecret } = await createHook(projectId, path);

      const { page, close } = await open(alice.api_key, `p/${projectId}/webhooks`);
      try {
        const hook = card(page, url);
        await hook.getByText('No deliveries yet.').waitFor();

        await hook.getByRole('button', { name: `Disable ${url}` }).click();
        await hook.getByText('Disabled', { exact: true }).waitFor();
        const sendTest = hook.getByRole('button', { name: `Send test to ${url}` });
        expect(await sendTest.isDisabled()).toBe(true);
        // The disabled button names why.
        const why = await sendTest.getAttribute('aria-describedby');
        expect(await page.locator(`[id="${why}"]`).textContent()).toMatch(/^Nothing is sent to it while it is disabled/);
        expect((await webhooksOf(projectId)).find((webhook) => webhook.id === webhookId)).toMatchObject({ enabled: false, disabled_reason: null });
        await screenshot(page, `${backend}-webhooks-disabled`);

        await hook.getByRole('button', { name: `Enable ${url}` }).click();
        await hook.getByText('Enabled', { exact: true }).waitFor();
        expect((await webhooksOf(projectId)).find((webhook) => webhook.id === webhookId)).toMatchObject({ enabled: true });

        // Rotating asks first; keeping the secret changes nothing.
        await hook.getByRole('button', { name: `Rotate secret of ${url}` }).click();
        const confirm = page.getByRole('dialog', { name: 'Rotate the signing secret?' });
        await confirm.waitFor();
        expect(await focusedText(page)).toBe('Keep the current secret');
        await page.keyboard.press('Enter');
        await confirm.waitFor({ state: 'hidden' });
        await hook.getByRole('button', { name: `Rotate secret of ${url}` }).click();
        await confirm.getByRole('button', { name: 'Rotate secret' }).click();
        const panel = page.getByRole('region', { name: `New signing secret of ${url}` });
        await panel.waitFor();
        await panel.getByText(/The previous secret keeps signing deliveries until/).waitFor();
        const newSecret = await panel.getByLabel('Signing secret').inputValue();
        expect(newSecret).toMatch(/^whsec_/);
        expect(newSecret).not.toBe(firstSecret);
        await panel.getByRole('button', { name: 'I have copied it' }).click();

        // A test now verifies with the new secret and with the old one (both signatures sent).
        receiver.setSecrets(path, [newSecret, firstSecret]);
        await hook.getByRole('button', { name: `Send test to ${url}` }).click();
        await expect.poll(() => rowsOf(hook), { timeout: 10_000 }).toEqual([[expect.stringMatching(/^webhook\.test/), 'Delivered', '1', '200', '—', '—', expect.any(String), '']]);
        const [received] = await receiver.waitFor(path, (delivery) => delivery.json.type === 'webhook.test');
        expect(received!.verifiedWith).toEqual([true, true]);
        expect(received!.signature.split(' ')).toHaveLength(2);

        // Editing: some events instead of all, and a description.
        await hook.getByRole('button', { name: `Edit ${url}` }).click();
        const edit = page.getByRole('dialog', { name: 'Edit webhook' });
        expect(await edit.getByLabel('Receiver URL').inputValue()).toBe(url);
        await edit.getByRole('checkbox', { name: 'All events, including those added later' }).uncheck();
        await edit.getByRole('checkbox', { name: /annotation_queue\.completed/ }).check();
        await edit.getByLabel('Description').fill('queues done');
        await edit.getByRole('button', { name: 'Save webhook' }).click();
        await hook.getByText('queues done').waitFor();
        expect((await webhooksOf(projectId)).find((webhook) => webhook.id === webhookId)).toMatchObject({ url, events: ['annotation_queue.completed'], description: 'queues done', enabled: true });

        // A url the server refuses: its reason at the field, nothing stored.
        await page.getByRole('button', { name: 'New webhook' }).click();
        const form = page.getByRole('dialog', { name: 'New webhook' });
        const urlField = form.getByLabel('Receiver URL');
        await urlField.fill('ftp://hooks.example.com/x');
        await form.getByRole('button', { name: 'Create webhook' }).click();
        await expect.poll(() => urlField.getAttribute('aria-invalid')).toBe('true');
        await form.getByText(/^url must be https:\/\//).waitFor();
        expect(await urlField.evaluate((element) => element === document.activeElement)).toBe(true);
        await form.getByRole('button', { name: 'Cancel' }).click();
        expect(await webhooksOf(projectId)).toHaveLength(1);

        // Deleting asks first, then the card goes.
        await hook.getByRole('button', { name: `Delete ${url}` }).click();
        await page.getByRole('dialog', { name: 'Delete this webhook?' }).getByRole('button', { name: 'Delete webhook' }).click();
        await page.getByText('No webhooks yet.').waitFor();
        expect(await webhooksOf(projectId)).toEqual([]);
      } finally {
        await close();
      }
    });

    it('tells viewers and annotators who manages webhooks, and links members only', async () => {
      const projectId = `acme/${uniqueId('ro').replace(/-/g, '')}`;
      await createHook(projectId, `/${uniqueId('ro')}`);
      for (const [user, words] of [
        [victor, /viewers do not see them, since a webhook’s URL may carry the receiver’s credentials/],
        [anna, /annotators work the queues open to them/],
      ] as const) {
        const { page, close } = await open(user.api_key, `p/${projectId}/webhooks`);
        try {
          await page.getByText(words).waitFor();
          expect(await page.getByRole('article').count()).toBe(0);
          expect(await page.getByRole('button', { name: 'New webhook' }).count()).toBe(0);
        } finally {
          await close();
        }
      }
      const { page, close } = await open(victor.api_key, `p/${projectId}`);
      try {
        await page.getByText('Your role: viewer.').waitFor();
        expect(await page.getByRole('link', { name: 'Webhooks' }).count()).toBe(0);
      } finally {
        await close();
      }
    });

    it('looks right in the dark theme at 390 px: no sideways scrolling, no serious axe violation', async () => {
      const projectId = `acme/${uniqueId('phone').replace(/-/g, '')}`;
      const path = `/${uniqueId('phone')}`;
      receiver.respond(path, () => ({ status: 503 }));
      const { id: webhookId } = await createHook(projectId, path);
      await rest(server, 'POST', `/webhooks/${webhookId}/test`, { key: alice.api_key, body: { project_id: projectId } });
      await expect.poll(async () => (await deliveriesOf(projectId, webhookId))[0]?.attempts, { timeout: 10_000 }).toBe(1);
      const { page, close } = await open(alice.api_key, `p/${projectId}/webhooks`, { width: 390, height: 844, colorScheme: 'dark' });
      try {
        await card(page, receiver.urlOf(path)).getByText('Retrying', { exact: true }).waitFor();
        await screenshot(page, `${backend}-webhooks-dark-390`);
        expect(await seriousViolations(page)).toEqual([]);
        expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
      } finally {
        await close();
      }
    });

    it('saw no CSP violation, console error or uncaught error', () => {
      expect(troubles.flatMap((trouble) => [...trouble.cspViolations, ...trouble.pageErrors])).toEqual([]);
      // The one refusal the test provoked on purpose (the ftp:// url) is the browser's own log line of a 400.
      const errors = troubles.flatMap((trouble) => trouble.consoleErrors);
      expect(errors.filter((text) => !/status of 400/.test(text))).toEqual([]);
      expect(errors.length).toBeLessThanOrEqual(1);
    });
  });
});

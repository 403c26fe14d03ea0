import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { describeInBrowser, launchChromium, openPage, screenshot, seriousViolations, type PageTrouble } from '../harness/browser.ts';
import { createSpec } from '../harness/feedback.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { addItems, claim, createCalls, createQueue, progress, projectQuery, queryItems, queueWithItems, uniqueId } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// The project page in Chromium against the real server: a member creates an annotation spec and a
// queue, browses the calls and adds them to the queue, edits and deletes it, all through the page;
// what was stored is read back through the API. A viewer sees the same page with every write
// control disabled, and the API refuses every write they could send.

const LIVE_MS = 2_000;
const READ_ONLY = 'Viewers can read this project but not change it.';
const CALLS_PAGE_SIZE = 50;

describeInBrowser('project page in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachBackend('project page', (backend) => {
    let server: TestServer;
    let alice: CreatedKeyForTest;
    let bob: CreatedKeyForTest;
    let victor: CreatedKeyForTest;
    const troubles: PageTrouble[] = [];
    const dialogs: string[] = [];

    beforeAll(async () => {
      server = await startTestServer(backend);
      alice = await createUser(server, { entity: 'acme', role: 'member' });
      bob = await createUser(server, { entity: 'acme', role: 'member' });
      victor = await createUser(server, { entity: 'acme', role: 'viewer' });
    });
    afterAll(() => server?.stop());

    /** A page signed in with `key`, at `path` under /app/; `watch` sees the page before it loads. */
    async function open(key: string, path: string, watch?: (page: Page) => void): Promise<{ page: Page; close: () => Promise<void> }> {
      const opened = await openPage(browser);
      watch?.(opened.page);
      troubles.push(opened.trouble);
      opened.page.on('dialog', (dialog) => {
        dialogs.push(dialog.message());
        void dialog.dismiss();
      });
      await opened.page.addInitScript((apiKey: string) => sessionStorage.setItem('loupe.apiKey', apiKey), key);
      await opened.page.goto(`${server.url}/app/${path}`);
      return opened;
    }

    const queueCard = (page: Page, name: string) => page.getByRole('article', { name, exact: true });
    /** The text of what a control's aria-describedby names. */
    const description = (page: Page, control: Locator) =>
      control.evaluate((element) =>
        (element.getAttribute('aria-describedby') ?? '')
          .split(' ')
          .filter(Boolean)
          .map((id) => document.getElementById(id)?.textContent ?? '')
          .join(' '),
      );
    const specsOf = async (key: string, projectId: string) => {
      const reply = await rest(server, 'POST', '/annotation_specs/query', { key, body: { project_id: projectId } });
      expect(reply.status, reply.text).toBe(200);
      return reply.body.specs as { ref: string; name: string; description: string | null; field_schema: unknown }[];
    };
    const queuesOf = async (key: string, projectId: string) => {
      const reply = await rest(server, 'POST', '/annotation_queues/query', { key, body: { project_id: projectId } });
      expect(reply.status, reply.text).toBe(200);
      return reply.body.queues as Record<string, unknown>[];
    };

    it('lets a member create a spec and a queue, add browsed calls to it, edit it and delete it, storing exactly that', async () => {
      const name = uniqueId('proj').replace(/-/g, '');
      const projectId = `acme/${name}`;
      // More calls of the op than one page holds, and a few of another op started earlier.
      const others = await createCalls(server, alice.api_key, projectId, [0, 1, 2].map((i) => ({ id: uniqueId('other'), op_name: 'summarize', started_at: `2026-01-01T00:00:0${i}.000Z` })));
      const chats = await createCalls(
        server,
        alice.api_key,
        projectId,
        Array.from({ length: CALLS_PAGE_SIZE + 10 }, (_, i) => ({ id: uniqueId('chat'), op_name: 'chat', started_at: new Date(Date.UTC(2026, 0, 2, 0, 0, i)).toISOString() })),
      );

      const { page, close } = await open(alice.api_key, '');
      try {
        // From the projects list to the project page.
        await page.getByRole('link', { name, exact: true }).click();
        await page.getByRole('heading', { level: 1, name: `Project ${projectId}` }).waitFor();
        expect(new URL(page.url()).pathname).toBe(`/app/p/${projectId}`);
        await page.getByText('No queues yet.').waitFor();
        expect(await page.getByText('Your role: member.').count()).toBe(1);
        expect(await seriousViolations(page)).toEqual([]);

        // A schema the server refuses: its reason at the field, and nothing stored.
        const specName = page.getByLabel('Spec name');
        const schema = page.getByLabel('JSON Schema');
        await specName.fill('helpfulness');
        await schema.fill('{"type": "integr"}');
        await page.getByRole('button', { name: 'Create spec' }).click();
        await expect.poll(() => schema.getAttribute('aria-invalid')).toBe('true');
        expect(await description(page, schema)).toMatch(/field_schema is not a valid JSON Schema/);
        expect(await schema.evaluate((element) => element === document.activeElement)).toBe(true);
        expect(await specName.getAttribute('aria-invalid')).toBeNull();
        await screenshot(page, `${backend}-project-spec-refused`);
        expect(await seriousViolations(page)).toEqual([]);
        expect(await specsOf(alice.api_key, projectId)).toEqual([]);

        // A name the server refuses: at the name field.
        await specName.fill('not a name!');
        await schema.fill('{"type": "integer", "minimum": 1, "maximum": 5}');
        await page.getByRole('button', { name: 'Create spec' }).click();
        await expect.poll(() => specName.getAttribute('aria-invalid')).toBe('true');
        expect(await description(page, specName)).toMatch(/Invalid request at name/);
        expect(await schema.getAttribute('aria-invalid')).toBeNull();
        expect(await specsOf(alice.api_key, projectId)).toEqual([]);

        await specName.fill('helpfulness');
        await page.getByLabel('Spec description').fill('How helpful the answer is');
        await page.getByRole('button', { name: 'Create spec' }).click();
        await page.getByText(/Stored annotation spec helpfulness/).waitFor();
        const specs = await specsOf(alice.api_key, projectId);
        expect(specs.map(({ name: specName, description, field_schema }) => ({ name: specName, description, field_schema }))).toEqual([
          { name: 'helpfulness', description: 'How helpful the answer is', field_schema: { type: 'integer', minimum: 1, maximum: 5 } },
        ]);
        const specRef = specs[0]!.ref;
        await page.getByRole('list').getByText('helpfulness').first().waitFor();

        // The dialog with the keyboard: Enter opens it on its first field, Esc closes it and the
        // focus (with its ring) is back on the button.
        const newQueue = page.getByRole('button', { name: 'New queue' });
        await newQueue.focus();
        await page.keyboard.press('Enter');
        const dialog = page.getByRole('dialog', { name: 'New queue' });
        await dialog.waitFor();
        expect(await dialog.getByLabel('Name').evaluate((element) => element === document.activeElement)).toBe(true);
        await page.keyboard.press('Escape');
        await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
        expect(await newQueue.evaluate((element) => element === document.activeElement)).toBe(true);
        expect(await newQueue.evaluate((element) => getComputedStyle(element).outlineStyle)).toBe('solid');

        // A queue with that spec, through the dialog.
        await newQueue.click();
        await dialog.waitFor();
        await dialog.getByLabel('Name').fill('Triage');
        await dialog.getByLabel('Description').fill('First pass over the chats');
        await dialog.getByRole('checkbox', { name: /helpfulness/ }).check();
        await dialog.getByLabel('Annotations per item').fill('2');
        await dialog.getByLabel('Lease (seconds)').fill('600');
        expect(await seriousViolations(page)).toEqual([]);
        await screenshot(page, `${backend}-project-new-queue`);
        await dialog.getByRole('button', { name: 'Create queue' }).click();
        await queueCard(page, 'Triage').waitFor();
        expect(await page.getByRole('dialog').count()).toBe(0);
        let queues = await queuesOf(alice.api_key, projectId);
        expect(queues).toHaveLength(1);
        const queueId = queues[0]!.id as string;
        expect(queues[0]).toMatchObject({
          name: 'Triage',
          description: 'First pass over the chats',
          scorer_refs: [specRef],
          annotations_per_item: 2,
          lease_seconds: 600,
          created_by: alice.user_id,
        });
        const card = queueCard(page, 'Triage');
        expect(await card.getByRole('link', { name: 'Triage', exact: true }).getAttribute('href')).toBe(`/app/p/${projectId}/q/${queueId}`);
        expect(await card.getByRole('link', { name: 'Annotate Triage' }).getAttribute('href')).toBe(`/app/p/${projectId}/q/${queueId}/annotate`);
        await card.getByText('0 of 0 items done').waitFor();

        // Calls of one op, over two pages, all selected and added.
        await page.getByLabel('Op name').fill('chat');
        await page.getByRole('button', { name: 'Filter' }).click();
        const count = page.locator('.select-bar .count');
        await expect.poll(() => count.innerText()).toBe(`${CALLS_PAGE_SIZE} calls shown, more to load; 0 selected`);
        await page.getByRole('button', { name: 'Load more' }).click();
        await expect.poll(() => count.innerText()).toBe(`${chats.length} calls shown; 0 selected`);
        expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
        expect(await page.getByRole('table').getByText('summarize').count()).toBe(0);
        await page.getByLabel('Select all shown').check();
        await expect.poll(() => count.innerText()).toBe(`${chats.length} calls shown; ${chats.length} selected`);
        await page.getByLabel('Queue', { exact: true }).selectOption({ label: 'Triage' });
        await page.getByRole('button', { name: 'Add to queue' }).click();
        const answer = page.locator('.add-answer');
        await answer.getByText(`Added ${chats.length} of ${chats.length} calls to Triage.`).waitFor();
        expect(await answer.locator('dd').allInnerTexts()).toEqual([String(chats.length), '0', '0']);
        await card.getByText(`0 of ${chats.length} items done`).waitFor();
        await screenshot(page, `${backend}-project-added`);
        expect(await seriousViolations(page)).toEqual([]);

        // The same calls again: every one a duplicate.
        await page.getByRole('button', { name: 'Add to queue' }).click();
        await answer.getByText(`Added 0 of ${chats.length} calls to Triage.`).waitFor();
        expect(await answer.locator('dd').allInnerTexts()).toEqual(['0', String(chats.length), '0']);
        expect(await answer.getByText(`Already in the queue (${chats.length})`).count()).toBe(1);

        // Every call again, one old and one new selected by hand.
        await page.getByRole('button', { name: 'Show all calls' }).click();
        await expect.poll(() => count.innerText()).toBe(`${CALLS_PAGE_SIZE} calls shown, more to load; 0 selected`);
        await page.getByLabel(`Select ${others[1]}`, { exact: true }).check();
        await page.getByLabel(`Select ${chats[0]}`, { exact: true }).check();
        await page.getByRole('button', { name: 'Add to queue' }).click();
        await answer.getByText('Added 1 of 2 calls to Triage.').waitFor();
        expect(await answer.locator('dd').allInnerTexts()).toEqual(['1', '1', '0']);

        const items = await queryItems(server, alice.api_key, projectId, queueId, { limit: 1000 });
        expect(items.map((item) => item.call_id).sort()).toEqual([...chats, others[1]!].sort());
        expect(new Set(items.map((item) => item.added_by))).toEqual(new Set([alice.user_id]));
        expect(new Set(items.map((item) => item.annotation_state))).toEqual(new Set(['unstarted']));

        // Editing: a lease the server refuses is shown at its field and stores nothing.
        const updates: string[] = [];
        page.on('request', (request) => {
          if (request.url().includes('/trpc/annotationQueues.update')) updates.push(request.postData() ?? '');
        });
        await card.getByRole('button', { name: 'Edit Triage' }).click();
        const edit = page.getByRole('dialog', { name: 'Edit queue Triage' });
        await edit.waitFor();
        expect(await edit.getByLabel('Name').inputValue()).toBe('Triage');
        expect(await edit.getByRole('checkbox', { name: /helpfulness/ }).isChecked()).toBe(true);
        await edit.getByLabel('Name').fill('Triage 2');
        await edit.getByLabel('Lease (seconds)').fill('5');
        await edit.getByRole('button', { name: 'Save queue' }).click();
        const lease = edit.getByLabel('Lease (seconds)');
        await expect.poll(() => lease.getAttribute('aria-invalid')).toBe('true');
        expect(await description(page, lease)).toMatch(/lease_seconds/);
        expect(await lease.evaluate((element) => element === document.activeElement)).toBe(true);
        expect(await queuesOf(alice.api_key, projectId)).toEqual(queues);

        await lease.fill('300');
        await edit.getByLabel('Annotations per item').fill('1');
        await edit.getByRole('checkbox', { name: /helpfulness/ }).uncheck();
        await edit.getByRole('button', { name: 'Save queue' }).click();
        await queueCard(page, 'Triage 2').waitFor();
        queues = await queuesOf(alice.api_key, projectId);
        expect(queues).toHaveLength(1);
        expect(queues[0]).toMatchObject({ id: queueId, name: 'Triage 2', description: 'First pass over the chats', scorer_refs: [], annotations_per_item: 1, lease_seconds: 300 });
        // An update sends only what the form changed: another editor's change to the rest stays.
        expect(updates).toHaveLength(2);
        expect(JSON.parse(updates[1]!)).toEqual({ project_id: projectId, queue_id: queueId, name: 'Triage 2', scorer_refs: [], annotations_per_item: 1, lease_seconds: 300 });

        // Deleting asks first; keeping it changes nothing.
        await queueCard(page, 'Triage 2').getByRole('button', { name: 'Delete Triage 2' }).click();
        const confirm = page.getByRole('dialog', { name: 'Delete queue Triage 2?' });
        await confirm.waitFor();
        expect(await seriousViolations(page)).toEqual([]);
        await screenshot(page, `${backend}-project-delete`);
        // The focus starts on the harmless choice: Enter keeps the queue.
        expect(await confirm.getByRole('button', { name: 'Keep it' }).evaluate((element) => element === document.activeElement)).toBe(true);
        await page.keyboard.press('Enter');
        await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
        expect(await queuesOf(alice.api_key, projectId)).toHaveLength(1);
        await queueCard(page, 'Triage 2').getByRole('button', { name: 'Delete Triage 2' }).click();
        await page.getByRole('dialog', { name: 'Delete queue Triage 2?' }).getByRole('button', { name: 'Delete queue' }).click();
        await page.getByText('No queues yet.').waitFor();
        await page.getByText('Deleted queue Triage 2 and its items.').waitFor();
        expect(await queuesOf(alice.api_key, projectId)).toEqual([]);
        expect((await rest(server, 'GET', `/annotation_queues/${queueId}${projectQuery(projectId)}`, { key: alice.api_key })).status).toBe(404);
      } finally {
        await close();
      }
    });

    it("follows other annotators' progress on every queue of a project with 12 within 2 s, on one event stream", async () => {
      const projectId = `acme/${uniqueId('live').replace(/-/g, '')}`;
      // Newest first on the page: the queue created first is the 12th card.
      const { queueId } = await queueWithItems(server, alice.api_key, projectId, 3, { name: 'Live one' });
      await queueWithItems(server, alice.api_key, projectId, 2, { name: 'Quiet one' });
      const quiet: string[] = [];
      for (let i = 2; i <= 11; i++) quiet.push(await createQueue(server, alice.api_key, projectId, { name: `Quiet ${i}` }));
      const streams: string[] = [];
      const { page, close } = await open(alice.api_key, `p/${projectId}`, (watched) =>
        watched.on('request', (request) => {
          const path = new URL(request.url()).pathname;
          if (/^\/trpc\/annotationQueues\.(events|projectEvents)/.test(path)) streams.push(path);
        }),
      );
      try {
        const card = queueCard(page, 'Live one');
        const line = card.locator('.progress-line');
        await expect.poll(() => line.innerText(), { timeout: 15_000 }).toMatch(/^0 of 3 items done/);
        expect(await page.getByRole('article').count()).toBe(12);
        expect(await page.getByRole('article').nth(11).getAttribute('aria-labelledby')).toBe(`queue-${queueId}-title`);
        await expect.poll(() => card.locator('.progress-summary').getAttribute('data-live'), { timeout: 10_000 }).toBe('live');
        expect(await card.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('0');
        // Every card is live: no "reload for the latest counts" anywhere. The cards' counts come in
        // more than one batch of requests, so the others may arrive after this card's.
        await expect.poll(() => page.locator('.progress-summary[data-live="live"]').count(), { timeout: 10_000 }).toBe(12);
        expect(await page.getByText(/not live/).count()).toBe(0);

        const claimed = await claim(server, bob.api_key, projectId, queueId);
        expect(claimed.status).toBe(200);
        // Held by bob: shown in progress, not yet done.
        await card.getByRole('list', { name: 'Items of Live one by state' }).getByText('In progress 1').waitFor({ timeout: LIVE_MS });
        const begun = Date.now();
        expect((await progress(server, bob.api_key, projectId, queueId, claimed.body.item.id, 'completed')).status).toBe(200);
        await line.getByText('1 of 3 items done').waitFor({ timeout: LIVE_MS });
        expect(Date.now() - begun).toBeLessThan(LIVE_MS);
        expect(await card.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('1');
        expect(await card.getByRole('progressbar').getAttribute('aria-valuetext')).toBe('1 of 3 done');

        // Items added by someone else show up too.
        const [extra] = await createCalls(server, bob.api_key, projectId, [{ id: uniqueId('late') }]);
        const added = Date.now();
        expect((await addItems(server, bob.api_key, projectId, queueId, [extra!])).added_count).toBe(1);
        await line.getByText('1 of 4 items done').waitFor({ timeout: LIVE_MS });
        expect(Date.now() - added).toBeLessThan(LIVE_MS);
        expect(await queueCard(page, 'Quiet one').locator('.progress-line').innerText()).toMatch(/^0 of 2 items done/);

        // Queues someone else creates or deletes appear and vanish.
        await createQueue(server, bob.api_key, projectId, { name: 'Bob new' });
        await queueCard(page, 'Bob new').waitFor({ timeout: LIVE_MS });
        expect((await rest(server, 'DELETE', `/annotation_queues/${quiet[0]}${projectQuery(projectId)}`, { key: bob.api_key })).status).toBe(200);
        await expect.poll(() => queueCard(page, 'Quiet 2').count(), { timeout: LIVE_MS }).toBe(0);
        expect(await page.getByRole('article').count()).toBe(12);

        // All of it on one stream of the project, none per queue.
        expect(streams).toEqual(['/trpc/annotationQueues.projectEvents']);
        await screenshot(page, `${backend}-project-live`);
        expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await close();
      }
    });

    it('shows a viewer everything with every write control disabled and the reason, and the API refuses their writes', async () => {
      const projectId = `acme/${uniqueId('viewed').replace(/-/g, '')}`;
      const spec = await createSpec(server, alice.api_key, projectId, 'correct', { type: 'boolean' });
      const { queueId, items } = await queueWithItems(server, alice.api_key, projectId, 2, { name: 'Read only', scorer_refs: [spec.ref] });
      const before = { queues: await queuesOf(alice.api_key, projectId), specs: await specsOf(alice.api_key, projectId), items };

      const { page, close } = await open(victor.api_key, `p/${projectId}`);
      try {
        const card = queueCard(page, 'Read only');
        await card.getByText('0 of 2 items done').waitFor();
        await page.getByText('Your role: viewer.').waitFor();
        // Everything is shown: the queue, its rubric, the spec and the calls.
        expect(await card.getByText(/Rubric: correct/).count()).toBe(1);
        expect(await card.getByRole('link', { name: 'Read only', exact: true }).count()).toBe(1);
        await expect.poll(() => page.getByRole('table').getByRole('row').count()).toBe(3);
        expect(await page.locator('.spec-list').getByText('correct', { exact: true }).count()).toBe(1);

        const controls = [
          page.getByRole('button', { name: 'New queue' }),
          card.getByRole('button', { name: 'Edit Read only' }),
          card.getByRole('button', { name: 'Delete Read only' }),
          page.getByLabel('Spec name'),
          page.getByLabel('Spec description'),
          page.getByLabel('JSON Schema'),
          page.getByRole('button', { name: 'Create spec' }),
          page.getByLabel('Queue', { exact: true }),
          page.getByRole('button', { name: 'Add to queue' }),
        ];
        for (const control of controls) {
          expect(await control.isDisabled()).toBe(true);
          expect(await description(page, control)).toContain(READ_ONLY);
        }
        // The reason is on the page to be read, beside each section's controls.
        expect(await page.getByText(READ_ONLY, { exact: true }).count()).toBe(3);
        // Browsing stays open: calls can be selected (nothing is written by that).
        await page.getByLabel('Select all shown').check();
        await screenshot(page, `${backend}-project-viewer`);
        expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await close();
      }

      // Every write the page offers, sent by the viewer anyway: refused, nothing changed.
      const key = victor.api_key;
      const [callId] = await createCalls(server, alice.api_key, projectId, [{ id: uniqueId('new') }]);
      const refused = [
        await rest(server, 'POST', '/annotation_specs', { key, body: { project_id: projectId, name: 'sneaky', field_schema: { type: 'string' } } }),
        await rest(server, 'POST', '/annotation_queues', { key, body: { project_id: projectId, name: 'sneaky' } }),
        await rest(server, 'PUT', `/annotation_queues/${queueId}`, { key, body: { project_id: projectId, name: 'renamed' } }),
        await rest(server, 'DELETE', `/annotation_queues/${queueId}${projectQuery(projectId)}`, { key }),
        await rest(server, 'POST', `/annotation_queues/${queueId}/items`, { key, body: { project_id: projectId, call_ids: [callId] } }),
      ];
      expect(refused.map((reply) => reply.status)).toEqual([403, 403, 403, 403, 403]);
      expect(await queuesOf(alice.api_key, projectId)).toEqual(before.queues);
      expect(await specsOf(alice.api_key, projectId)).toEqual(before.specs);
      expect(await queryItems(server, alice.api_key, projectId, queueId)).toEqual(before.items);
    });

    it('saw no CSP violation, dialog, console error or uncaught error', () => {
      expect(dialogs).toEqual([]);
      const seen = troubles.flatMap((trouble) => [...trouble.cspViolations, ...trouble.pageErrors]);
      expect(seen).toEqual([]);
      // The refusals the test provoked on purpose are the browser's own log lines of a 400.
      expect(troubles.flatMap((trouble) => trouble.consoleErrors).filter((text) => !/status of 400/.test(text))).toEqual([]);
    });
  });
});

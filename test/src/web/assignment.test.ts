import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { describeInBrowser, launchChromium, openPage, screenshot, seriousViolations, type PageTrouble, type PageView } from '../harness/browser.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { claim, progress, queryItems, queueWithItems, stats, type Item } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Assignment and the annotator role in the web app (contract 5.11, section 9), in Chromium against
// the real server: a member sets a queue's access, assignees (picked by name) and overlap coverage;
// assigns items on the queue page and reads each assignee's progress; annotators land on "My
// queues", which lists exactly the queues the server lets them claim from and follows the work
// live; an annotator a queue is not assigned to neither sees it nor may open its annotate page.
// What the pages did is checked through the API.

const ENTITY = 'acme';
const PROJECT = `${ENTITY}/assign`;
const LIVE_MS = 5_000;

describeInBrowser('assignment in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachBackend('assignment and the annotator role', (backend) => {
    let server: TestServer;
    let lead: CreatedKeyForTest; // a member: manages the queues
    let picked: CreatedKeyForTest; // an annotator the assigned queue names
    let unpicked: CreatedKeyForTest; // an annotator it does not
    let viewer: CreatedKeyForTest;
    let assignedQueue: { queueId: string; items: Item[] };
    let openQueue: { queueId: string; items: Item[] };
    const troubles: PageTrouble[] = [];

    beforeAll(async () => {
      server = await startTestServer(backend);
      lead = await createUser(server, { entity: ENTITY, role: 'member', username: `lead${process.pid}` });
      picked = await createUser(server, { entity: ENTITY, role: 'annotator', username: `picked${process.pid}` });
      unpicked = await createUser(server, { entity: ENTITY, role: 'annotator', username: `unpicked${process.pid}` });
      viewer = await createUser(server, { entity: ENTITY, role: 'viewer', username: `viewer${process.pid}` });
      assignedQueue = await queueWithItems(server, lead.api_key, PROJECT, 4, { name: 'Assigned queue', description: 'Only for the chosen.', access: 'assigned', assignees: [picked.user_id] });
      openQueue = await queueWithItems(server, lead.api_key, PROJECT, 2, { name: 'Open queue' });
      // The assigned queue's last item is the picked annotator's alone: their claim starts there.
      const assigned = await rest(server, 'POST', `/annotation_queues/${assignedQueue.queueId}/items/assign`, {
        key: lead.api_key,
        body: { project_id: PROJECT, item_ids: [assignedQueue.items[3]!.id], user_id: picked.user_id },
      });
      expect(assigned.body, assigned.text).toEqual({ assigned_count: 1, missing_item_ids: [] });
    });
    afterAll(() => server?.stop());

    async function open(user: CreatedKeyForTest, path: string, view: PageView = {}): Promise<{ page: Page; trouble: PageTrouble; close: () => Promise<void> }> {
      const opened = await openPage(browser, view);
      await opened.page.addInitScript((key: string) => sessionStorage.setItem('loupe.apiKey', key), user.api_key);
      await opened.page.goto(`${server.url}/app${path}`);
      return opened;
    }

    const mine = async (user: CreatedKeyForTest) => {
      const reply = await rest(server, 'POST', '/annotation_queues/mine', { key: user.api_key, body: {} });
      expect(reply.status, reply.text).toBe(200);
      return reply.body.queues as { project_id: string; queue: { id: string; name: string }; remaining_for_me: number; done_by_me: number }[];
    };
    const readQueue = async (queueId: string) => (await rest(server, 'GET', `/annotation_queues/${queueId}?project_id=${encodeURIComponent(PROJECT)}`, { key: lead.api_key })).body.queue;
    const card = (page: Page, queueName: string) => page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: queueName, exact: true }) });
    const describedBy = (field: Locator) =>
      field.evaluate((element) => (element.getAttribute('aria-describedby') ?? '').split(' ').map((id) => document.getElementById(id)?.textContent ?? '').join(' '));
    const countsText = (remaining: number, done: number) =>
      `${remaining} ${remaining === 1 ? 'item' : 'items'} left for you · ${done} ${done === 1 ? 'item' : 'items'} done by you`;

    it("lets a member set a queue's access, assignees picked by name and overlap coverage; a refused value is shown at its field and stores nothing", async () => {
      const { queueId } = await queueWithItems(server, lead.api_key, PROJECT, 1, { name: 'Draft queue' });
      const before = await readQueue(queueId);
      const { page, trouble, close } = await open(lead, `/p/${PROJECT}`);
      troubles.push(trouble);
      try {
        await page.getByRole('button', { name: 'Edit Draft queue' }).click();
        const edit = page.getByRole('dialog', { name: 'Edit queue Draft queue' });
        await edit.waitFor();
        expect(await edit.getByRole('radio', { name: 'Everyone who annotates in the project' }).isChecked()).toBe(true);
        // The entity's people who may annotate, by name: the viewer is not offered.
        const offered = edit.getByRole('group', { name: 'Assignees' }).getByRole('checkbox');
        await expect.poll(() => offered.count()).toBe(3);
        expect(await edit.getByRole('checkbox', { name: new RegExp(`^${viewer.username}\\b`) }).count()).toBe(0);

        await edit.getByRole('radio', { name: 'Only the assignees' }).check();
        await edit.getByRole('checkbox', { name: new RegExp(`^${picked.username}\\b`) }).check();
        await edit.getByLabel('Annotations per item').fill('2');
        const coverage = edit.getByLabel('Overlap coverage');
        await coverage.fill('1.5');
        await edit.getByRole('button', { name: 'Save queue' }).click();
        await expect.poll(() => coverage.getAttribute('aria-invalid')).toBe('true');
        expect(await describedBy(coverage)).toMatch(/overlap_coverage/);
        expect(await coverage.evaluate((element) => element === document.activeElement)).toBe(true);
        expect(await readQueue(queueId)).toEqual(before);

        await coverage.fill('0.5');
        await screenshot(page, `${backend}-assignment-queue-form`);
        expect(await seriousViolations(page)).toEqual([]);
        await edit.getByRole('button', { name: 'Save queue' }).click();
        await page.getByText('Saved queue Draft queue.').waitFor();
        expect(await readQueue(queueId)).toMatchObject({ access: 'assigned', assignees: [picked.user_id], overlap_coverage: 0.5, annotations_per_item: 2 });
        await card(page, 'Draft queue').getByText(/assigned to 1 person/).waitFor();

        // Opened again, the form shows what is stored.
        await page.getByRole('button', { name: 'Edit Draft queue' }).click();
        await edit.waitFor();
        expect(await edit.getByRole('radio', { name: 'Only the assignees' }).isChecked()).toBe(true);
        await expect.poll(() => edit.getByRole('checkbox', { name: new RegExp(`^${picked.username}\\b`) }).isChecked()).toBe(true);
        expect(await edit.getByLabel('Overlap coverage').inputValue()).toBe('0.5');
        expect(trouble.pageErrors).toEqual([]);
      } finally {
        await close();
      }
    });

    it("assigns selected items to a person on the queue page, and shows each assignee's progress, live", async () => {
      const team = await queueWithItems(server, lead.api_key, PROJECT, 4, { name: 'Team queue' });
      const { page, trouble, close } = await open(lead, `/p/${PROJECT}/q/${team.queueId}`);
      troubles.push(trouble);
      try {
        await page.locator('p.progress').waitFor();
        for (const item of team.items.slice(0, 2)) await page.getByRole('checkbox', { name: `Select ${item.call_op_name} ${item.call_id}` }).check();
        await page.getByText('2 items selected').waitFor();
        await page.getByLabel('Assign to').selectOption({ label: picked.username });
        await page.getByRole('button', { name: 'Assign', exact: true }).click();
        await page.getByText(`Assigned 2 items to ${picked.username}.`).waitFor();

        const items = await queryItems(server, lead.api_key, PROJECT, team.queueId, { limit: 10 });
        expect(items.map((item) => item.assigned_user_id)).toEqual([picked.user_id, picked.user_id, null, null]);
        // The list shows who each item is assigned to.
        const row = (item: Item) => page.locator(`table.items tbody tr[data-call-id="${item.call_id}"] td[data-assigned]`);
        await expect.poll(() => row(team.items[0]!).innerText()).toBe(picked.username);
        expect(await row(team.items[2]!).innerText()).toBe('anyone');

        const table = page.getByRole('table', { name: 'Progress by assignee' });
        const assigneeRow = table.getByRole('row', { name: new RegExp(picked.username) });
        const cells = () => assigneeRow.getByRole('cell').allInnerTexts();
        const expected = async () => {
          const row = (await stats(server, lead.api_key, PROJECT, team.queueId)).by_assignee.find((entry) => entry.user_id === picked.user_id)!;
          return [row.assigned_items, row.done, row.in_progress, row.remaining].map(String);
        };
        await expect.poll(cells).toEqual(await expected());
        expect(await cells()).toEqual(['2', '0', '0', '4']);

        // The annotator finishes their first item (through the API): the page follows.
        const claimed = await claim(server, picked.api_key, PROJECT, team.queueId);
        expect(claimed.body.item.id).toBe(team.items[0]!.id);
        expect((await progress(server, picked.api_key, PROJECT, team.queueId, claimed.body.item.id, 'completed')).status).toBe(200);
        await expect.poll(cells, { timeout: LIVE_MS }).toEqual(await expected());
        expect(await cells()).toEqual(['2', '1', '0', '3']);
        await screenshot(page, `${backend}-assignment-queue-page`);
        expect(await seriousViolations(page)).toEqual([]);

        // Back to anyone.
        await page.getByRole('checkbox', { name: `Select ${team.items[1]!.call_op_name} ${team.items[1]!.call_id}` }).check();
        await page.getByLabel('Assign to').selectOption({ label: 'Nobody (anyone may claim)' });
        await page.getByRole('button', { name: 'Assign', exact: true }).click();
        await page.getByText('1 item now open to anyone.').waitFor();
        expect((await queryItems(server, lead.api_key, PROJECT, team.queueId, { limit: 10 }))[1]!.assigned_user_id).toBeNull();
        expect(trouble).toEqual({ cspViolations: [], consoleErrors: [], pageErrors: [] });
      } finally {
        await close();
      }
    });

    it('lands an annotator on My queues: the queues the server lets them claim from, what is left for them, live; Start annotating claims their assigned item first', async () => {
      const { page, trouble, close } = await open(picked, '/');
      troubles.push(trouble);
      try {
        await page.getByRole('heading', { name: 'My queues', level: 1 }).waitFor();
        expect(new URL(page.url()).pathname).toBe('/app/mine');
        const nav = page.getByRole('navigation', { name: 'Main' });
        expect(await nav.getByRole('link').allInnerTexts()).toEqual(['My queues', 'Models']);

        const expected = await mine(picked);
        expect(expected.map((entry) => entry.queue.name)).toContain('Assigned queue');
        for (const entry of expected) {
          await card(page, entry.queue.name).getByText(countsText(entry.remaining_for_me, entry.done_by_me)).waitFor();
        }
        expect(await page.getByRole('heading', { level: 3 }).allInnerTexts()).toEqual(expected.map((entry) => entry.queue.name));
        expect(await card(page, 'Assigned queue').getByText('Assigned to you').count()).toBe(1);
        await screenshot(page, `${backend}-assignment-my-queues`);
        expect(await seriousViolations(page)).toEqual([]);

        // Someone else finishes an item of the open queue: what is left for the annotator follows, without a reload.
        const left = expected.find((entry) => entry.queue.id === openQueue.queueId)!.remaining_for_me;
        const other = await claim(server, lead.api_key, PROJECT, openQueue.queueId);
        expect((await progress(server, lead.api_key, PROJECT, openQueue.queueId, other.body.item.id, 'completed')).status).toBe(200);
        await card(page, 'Open queue').getByText(countsText(left - 1, 0)).waitFor({ timeout: LIVE_MS });

        // In: the annotate page, whose first claim is the item assigned to them.
        await page.getByRole('link', { name: 'Start annotating Assigned queue' }).click();
        await page.getByRole('heading', { name: 'Annotate: Assigned queue' }).waitFor();
        await page.getByRole('button', { name: 'Start annotating' }).click();
        await expect
          .poll(async () => (await queryItems(server, lead.api_key, PROJECT, assignedQueue.queueId, { limit: 10 })).find((item) => item.annotator_user_id === picked.user_id)?.id)
          .toBe(assignedQueue.items[3]!.id);
        // Their way back is My queues, not the project's pages.
        await page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'My queues' }).click();
        await page.getByRole('heading', { name: 'My queues', level: 1 }).waitFor();
        expect(trouble).toEqual({ cspViolations: [], consoleErrors: [], pageErrors: [] });
      } finally {
        await close();
      }
    });

    it('shows an annotator the assigned queue is not for neither it under My queues nor its annotate page, nor any page of the project beyond annotating', async () => {
      const expected = await mine(unpicked);
      expect(expected.map((entry) => entry.queue.id)).not.toContain(assignedQueue.queueId);
      expect(expected.map((entry) => entry.queue.id)).toContain(openQueue.queueId);
      const { page, trouble, close } = await open(unpicked, '/', { width: 390, height: 844, colorScheme: 'dark' });
      troubles.push(trouble);
      try {
        await page.getByRole('heading', { name: 'My queues', level: 1 }).waitFor();
        await card(page, 'Open queue').waitFor();
        expect(await page.getByRole('heading', { level: 3 }).allInnerTexts()).toEqual(expected.map((entry) => entry.queue.name));
        expect(await page.getByText('Assigned queue').count()).toBe(0);
        await screenshot(page, `${backend}-assignment-my-queues-dark-390`);
        expect(await seriousViolations(page)).toEqual([]);
        expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);

        // Its annotate page, opened by its address: refused, with the server's reason.
        await page.goto(`${server.url}/app/p/${PROJECT}/q/${assignedQueue.queueId}/annotate`);
        await page.getByRole('heading', { name: 'You cannot annotate this queue' }).waitFor();
        expect(await page.getByRole('alert').innerText()).toContain('not open to you');
        expect(await page.getByText('Only for the chosen.').count()).toBe(0);
        await screenshot(page, `${backend}-assignment-refused-dark-390`);
        expect((await claim(server, unpicked.api_key, PROJECT, assignedQueue.queueId)).status).toBe(403);
        expect((await stats(server, lead.api_key, PROJECT, assignedQueue.queueId)).by_annotator.map((row) => row.annotator_user_id)).not.toContain(unpicked.user_id);

        // The project's pages, where other annotators' values are, are not for annotators.
        for (const path of [`/p/${PROJECT}`, `/p/${PROJECT}/q/${openQueue.queueId}`, `/p/${PROJECT}/q/${openQueue.queueId}/agreement`]) {
          await page.goto(`${server.url}/app${path}`);
          await page.getByRole('heading', { name: 'Not available to annotators' }).waitFor();
          expect(await page.locator('table').count()).toBe(0);
        }
        expect(trouble.pageErrors).toEqual([]);
      } finally {
        await close();
      }
    });

    it('saw no CSP violation or uncaught error', () => {
      expect(troubles.flatMap((trouble) => [...trouble.cspViolations, ...trouble.pageErrors])).toEqual([]);
    });
  });
});

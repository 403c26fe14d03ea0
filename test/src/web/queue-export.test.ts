import { readFileSync } from 'node:fs';
import { parse as parseCsv } from 'csv-parse/sync';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { describeInBrowser, launchChromium, openPage, screenshot, seriousViolations, type PageTrouble, type PageView } from '../harness/browser.ts';
import { expectedJsonRows, exportFixture, storedNow, type ExportFixture } from '../harness/export-fixture.ts';
import { client, type CreatedKeyForTest } from '../harness/http.ts';
import { progress } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Issue 25: the queue page's "Export" (points 9) and each item's "1 of 2" (point 2), in Chromium
// against the real server. The downloaded files are compared with what the API stored; the counts
// with what the API answers.

const LIVE_MS = 2_000;

describeInBrowser('queue page export and annotation counts in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachBackend('queue page export', (backend) => {
    let server: TestServer;
    let fixture: ExportFixture;
    const troubles: PageTrouble[] = [];

    beforeAll(async () => {
      server = await startTestServer(backend);
      fixture = await exportFixture(server, 'acme/export-page');
    });
    afterAll(() => server?.stop());

    async function openQueuePage(user: CreatedKeyForTest, view: PageView = {}): Promise<{ page: Page; close: () => Promise<void> }> {
      const opened = await openPage(browser, view);
      troubles.push(opened.trouble);
      await opened.page.addInitScript((key: string) => sessionStorage.setItem('loupe.apiKey', key), user.api_key);
      await opened.page.goto(`${server.url}/app/p/${fixture.projectId}/q/${fixture.queueId}`);
      await opened.page.locator('table.items tbody tr').first().waitFor();
      return opened;
    }

    const countOf = (page: Page, callId: string) => page.locator(`table.items tbody tr[data-call-id="${callId}"] .item-annotations`);

    it('shows per item how many of its two annotations it has: "1 of 2" once one annotator completed it, "2 of 2" live when the other does', async () => {
      const { page, close } = await openQueuePage(fixture.ben);
      try {
        const [refund, shipping] = fixture.callIds as [string, string];
        const answer = await client(server, fixture.ben.api_key).annotationQueues.items.annotations.query({
          project_id: fixture.projectId,
          queue_id: fixture.queueId,
          item_ids: fixture.items.map((item) => item.id),
        });
        expect(answer.items).toEqual([
          { item_id: fixture.items[0]!.id, annotations_done: 1, annotations_required: 2 },
          { item_id: fixture.items[1]!.id, annotations_done: 0, annotations_required: 2 },
        ]);
        await expect.poll(() => countOf(page, refund).textContent()).toBe('1 of 2 annotations');
        expect(await countOf(page, shipping).textContent()).toBe('0 of 2 annotations');
        expect(await page.locator(`table.items tbody tr[data-call-id="${refund}"] .state`).innerText()).toBe('Completed');
        expect(await seriousViolations(page)).toEqual([]);

        await expect.poll(() => page.locator('.queue-progress .live').getAttribute('data-live'), { timeout: 10_000 }).toBe('live');
        const done = await progress(server, fixture.ben.api_key, fixture.projectId, fixture.queueId, fixture.items[0]!.id, 'skipped');
        expect(done.status, done.text).toBe(200);
        await expect.poll(() => countOf(page, refund).textContent(), { timeout: LIVE_MS }).toBe('2 of 2 annotations');
        expect(await countOf(page, refund).getAttribute('class')).toContain('done');
      } finally {
        await close();
      }
    });

    /** Chooses a format with the keyboard, presses Export, and returns the downloaded file's text and name. */
    async function exportAs(page: Page, label: 'CSV' | 'JSON Lines'): Promise<{ text: string; name: string }> {
      await page.getByLabel('Export as').selectOption({ label });
      const button = page.getByRole('button', { name: `Export all items as ${label}` });
      await button.focus();
      const downloading = page.waitForEvent('download');
      await page.keyboard.press('Enter');
      const download = await downloading;
      const path = await download.path();
      await page.getByRole('status').filter({ hasText: `Exported 2 items as ${label}.` }).waitFor();
      return { text: readFileSync(path, 'utf8'), name: download.suggestedFilename() };
    }

    it('exports the queue from the page as JSON Lines and CSV: the rows the API stored, annotators by username', async () => {
      const { page, close } = await openQueuePage(fixture.ana);
      try {
        // The export's code is loaded only when asked for.
        const scripts = () => page.evaluate(() => performance.getEntriesByType('resource').map((entry) => entry.name).filter((name) => name.endsWith('.js')));
        const before = await scripts();

        const jsonl = await exportAs(page, 'JSON Lines');
        expect(jsonl.name).toMatch(/^queue-.*-\d{4}-\d{2}-\d{2}\.jsonl$/);
        expect((await scripts()).length).toBeGreaterThan(before.length);
        const rows = jsonl.text.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
        // What the API stores now (the test before changed the first item's state).
        const expected = expectedJsonRows(await storedNow(server, fixture));
        expect(rows).toHaveLength(expected.length);
        rows.forEach((row, n) => expect(row).toMatchObject(expected[n]!));

        const csv = await exportAs(page, 'CSV');
        expect(csv.name).toMatch(/\.csv$/);
        const cells = parseCsv(csv.text, { columns: true }) as Record<string, string>[];
        const { ana, ben } = fixture;
        expect(cells.map((row) => [row.item_id, row.annotator, row[`verdict.${ana.username}`], row[`verdict.${ben.username}`]])).toEqual(
          expected.map((row) => {
            const values = (row.scores as { verdict: { values: Record<string, string> } }).verdict.values;
            return [row.item_id, row.annotator ?? '', values[ana.username] ?? '', values[ben.username] ?? ''];
          }),
        );
        expect(cells.map((row) => JSON.parse(row.annotator_user_ids!))).toEqual(expected.map((row) => row.annotator_user_ids));
        expect(cells.map((row) => row.notes)).toEqual(expected.map((row) => (row.notes as { by: string; note: string }[]).map((n) => `${n.by}: ${n.note}`).join('\n')));
        expect(cells.map((row) => row.reactions)).toEqual(expected.map((row) => (row.reactions as { by: string; emoji: string }[]).map((r) => `${r.by}: ${r.emoji}`).join('\n')));
        await screenshot(page, `${backend}-queue-export`);
        expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await close();
      }
    });

    it('lays the export control out at 390 px and in the dark theme', async () => {
      for (const [name, view] of [['390', { width: 390, height: 844 }], ['dark', { colorScheme: 'dark' }]] as const) {
        const { page, close } = await openQueuePage(fixture.ana, view);
        try {
          await page.getByRole('button', { name: 'Export all items as CSV' }).waitFor();
          await expect.poll(() => countOf(page, fixture.callIds[0]!).textContent()).toMatch(/ of 2 annotations$/);
          // Nothing wider than the screen but the items table, which scrolls on its own.
          expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
          await screenshot(page, `${backend}-queue-export-${name}`);
          expect(await seriousViolations(page)).toEqual([]);
        } finally {
          await close();
        }
      }
    });

    it('saw no CSP violation, console error or uncaught error', () => {
      expect(troubles.flatMap((trouble) => [...trouble.cspViolations, ...trouble.pageErrors, ...trouble.consoleErrors])).toEqual([]);
    });
  });
});

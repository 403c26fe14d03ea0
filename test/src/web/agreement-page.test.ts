import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { describeInBrowser, launchChromium, openPage, screenshot, seriousViolations, type PageTrouble } from '../harness/browser.ts';
import { batchCreate, callRefOf, createSpec } from '../harness/feedback.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { addItems, createCalls, createQueue, uniqueId } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// The agreement page in Chromium against the real server. The data set is example C of
// Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 annotators × 12 items with
// missing values, whose published alpha is 0.743 at the nominal level and 0.815 at the ordinal
// level; beside it a spec with no variation (no alpha, and a reason) and one the annotators
// contradict each other on. What the page shows is compared with the API's answer.

const PROJECT = 'acme/agreement-page';
const _ = undefined;
const EXAMPLE_C = [
  [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
  [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
  [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
  [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
];
/** Every annotator says yes wherever they rated. */
const FLAG = EXAMPLE_C.map((row) => row.map((value) => (value === undefined ? undefined : true)));
/** Two annotators who always say the opposite on the first four items. */
const MOOD = [['up', 'down', 'up', 'down'], ['down', 'up', 'down', 'up'], [], []];

const SPECS = {
  category: { schema: { enum: [1, 2, 3, 4, 5] }, rows: EXAMPLE_C },
  rating: { schema: { type: 'integer', minimum: 1, maximum: 5 }, rows: EXAMPLE_C },
  flag: { schema: { type: 'boolean' }, rows: FLAG },
  mood: { schema: { enum: ['up', 'down'] }, rows: MOOD },
} as const;
type SpecName = keyof typeof SPECS;

type Agreement = {
  scorer_ref: string;
  name: string;
  level: string;
  annotators: string[];
  alpha: number | null;
  observed_agreement: number | null;
  pairs: { annotator_a: string; annotator_b: string; items: number; agreement: number; kappa: number | null }[];
  disagreements: { item_id: string; call_id: string; values: { annotator_user_id: string; value: unknown }[] }[];
  reason: string | null;
};

// What the page writes for people, as its own modules format them.
const alphaText = (alpha: number) => alpha.toFixed(3).replace('-', '−');
const shareText = (share: number) => `${(share * 100).toFixed(1)}%`;
const kappaText = (kappa: number | null) => (kappa === null ? 'κ undefined' : `κ ${kappa.toFixed(2).replace('-', '−')}`);
const valueText = (value: unknown) => (typeof value === 'boolean' ? (value ? 'yes' : 'no') : String(value));

describeInBrowser('agreement page in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachBackend('agreement page', (backend) => {
    let server: TestServer;
    let annotators: CreatedKeyForTest[];
    let viewer: CreatedKeyForTest;
    let queueId: string;
    let callIds: string[];
    let refs: Record<SpecName, string>;
    const troubles: PageTrouble[] = [];
    /** How the page names an annotator: by username (resolved through the API after the figures arrive). */
    const labelOf = (userId: string) => annotators.find((user) => user.user_id === userId)!.username;

    beforeAll(async () => {
      server = await startTestServer(backend);
      annotators = [];
      for (let i = 0; i < 4; i++) annotators.push(await createUser(server, { entity: 'acme', role: 'member' }));
      viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
      const owner = annotators[0]!;
      refs = {} as typeof refs;
      for (const [name, { schema }] of Object.entries(SPECS)) refs[name as SpecName] = (await createSpec(server, owner.api_key, PROJECT, name, schema)).ref;
      callIds = await createCalls(server, owner.api_key, PROJECT, Array.from({ length: 12 }, (_unused, index) => ({ id: uniqueId('call'), op_name: `unit-${index + 1}`, output: `Answer ${index + 1}` })));
      queueId = await createQueue(server, owner.api_key, PROJECT, { scorer_refs: Object.values(refs), annotations_per_item: 4 });
      expect((await addItems(server, owner.api_key, PROJECT, queueId, callIds)).added_count).toBe(12);
      for (const [index, annotator] of annotators.entries()) {
        const batch = Object.entries(SPECS).flatMap(([name, { rows }]) =>
          (rows[index] as readonly unknown[]).flatMap((value, unit) => {
            if (value === undefined) return [];
            const ref = callRefOf(PROJECT, callIds[unit]!);
            return [{ project_id: PROJECT, svc_ref: ref, call_ref: ref, queue_id: queueId, feedback_type: `svc.annotation.${name}`, annotation_ref: refs[name as SpecName], payload: { value } }];
          }),
        );
        const reply = await batchCreate(server, annotator.api_key, batch);
        expect(reply.status, reply.text).toBe(200);
      }
    });
    afterAll(() => server?.stop());

    async function agreementOf(key: string, levels?: Record<string, string>): Promise<Map<SpecName, Agreement>> {
      const reply = await rest(server, 'POST', `/annotation_queues/${queueId}/agreement`, { key, body: { project_id: PROJECT, ...(levels ? { levels } : {}) } });
      expect(reply.status, reply.text).toBe(200);
      return new Map((reply.body.agreement as Agreement[]).map((agreement) => [agreement.name as SpecName, agreement]));
    }

    async function openAgreement(user: CreatedKeyForTest): Promise<{ page: Page; close: () => Promise<void> }> {
      const opened = await openPage(browser);
      troubles.push(opened.trouble);
      await opened.page.addInitScript((key: string) => sessionStorage.setItem('loupe.apiKey', key), user.api_key);
      await opened.page.goto(`${server.url}/app/p/${PROJECT}/q/${queueId}/agreement`);
      await opened.page.locator('.spec-agreement').first().waitFor();
      return opened;
    }

    const section = (page: Page, name: SpecName) => page.getByRole('region', { name, exact: true });
    const figure = (page: Page, name: SpecName, which: 'alpha' | 'observed') => section(page, name).locator(`dl.figures .${which} dd`).innerText();

    it('shows a viewer alpha and observed agreement as the API answers them, read by the threshold band, with the reason when there is no alpha', async () => {
      const api = await agreementOf(viewer.api_key);
      // The published figures of the example.
      expect(api.get('category')!.level).toBe('nominal');
      expect(api.get('category')!.alpha).toBeCloseTo(0.743, 3);
      expect(api.get('rating')!.level).toBe('ordinal');
      expect(api.get('rating')!.alpha).toBeCloseTo(0.815, 3);
      expect(api.get('flag')!.alpha).toBeNull();
      expect(api.get('mood')!.alpha).toBeLessThan(0.667);

      const { page, close } = await openAgreement(viewer);
      try {
        expect(await page.getByRole('heading', { level: 2 }).allInnerTexts()).toEqual(['category', 'rating', 'flag', 'mood']);
        for (const name of ['category', 'rating', 'mood'] as const) {
          const agreement = api.get(name)!;
          expect(await figure(page, name, 'alpha')).toBe(alphaText(agreement.alpha!));
          expect(await figure(page, name, 'observed')).toBe(shareText(agreement.observed_agreement!));
        }
        expect(await figure(page, 'category', 'alpha')).toBe('0.743');
        expect(await figure(page, 'rating', 'alpha')).toBe('0.815');
        const reading = (name: SpecName) => section(page, name).locator('.reading').innerText();
        expect(await reading('category')).toBe('Tentative. 0.667 ≤ α < 0.800: good enough for tentative conclusions only.');
        expect(await reading('rating')).toBe('Reliable. α ≥ 0.800: the annotators agree well enough to rely on these values.');
        expect(await reading('mood')).toMatch(/^Not reliable\. α < 0\.667/);
        expect(await figure(page, 'flag', 'alpha')).toBe('not computed');
        expect(await reading('flag')).toBe(`No α. ${api.get('flag')!.reason}`);
        expect(await section(page, 'flag').getByText('No item has values that disagree.').count()).toBe(1);
        // The thresholds and where they come from.
        expect(await page.locator('cite').innerText()).toMatch(/^Krippendorff, K\. \(2004\)\. Content Analysis: An Introduction to Its Methodology \(2nd ed\.\), p\. 241/);
        await screenshot(page, `${backend}-agreement`);
        expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await close();
      }
    });

    it("shows each pair's kappa as the API answers it, in a table with a cell per pair", async () => {
      const api = await agreementOf(viewer.api_key);
      const { page, close } = await openAgreement(viewer);
      try {
        for (const name of ['category', 'rating', 'mood'] as const) {
          const agreement = api.get(name)!;
          const table = section(page, name).locator('table.kappa');
          const cells = () => table.locator('tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].map((cell) => (cell as HTMLElement).querySelector('.kappa-value, .annotator')?.textContent ?? (cell.textContent ?? '').trim())));
          const pairOf = (a: string, b: string) => agreement.pairs.find((pair) => (pair.annotator_a === a && pair.annotator_b === b) || (pair.annotator_a === b && pair.annotator_b === a));
          const ids = agreement.annotators;
          await expect.poll(cells).toEqual([
            ['', ...ids.map(labelOf)],
            ...ids.map((row) => [labelOf(row), ...ids.map((column) => (row === column ? '— the same annotator' : pairOf(row, column) ? kappaText(pairOf(row, column)!.kappa) : 'no items in common'))]),
          ]);
          // Items in common and the share agreed are written out too.
          const first = agreement.pairs[0]!;
          const cell = table.locator('tbody tr').nth(ids.indexOf(first.annotator_a)).locator('td').nth(ids.indexOf(first.annotator_b));
          expect(await cell.locator('.pair-facts').innerText()).toBe(`${first.items} items, ${shareText(first.agreement)} agree`);
        }
        expect(await section(page, 'category').getByRole('table', { name: /Cohen's kappa \(unweighted\)/ }).count()).toBe(1);
        expect(await section(page, 'rating').getByRole('table', { name: /Cohen's kappa \(quadratic-weighted\)/ }).count()).toBe(1);
      } finally {
        await close();
      }
    });

    it('opens a disagreement with every annotator\'s value side by side, and the item with its call', async () => {
      const api = await agreementOf(viewer.api_key);
      const category = api.get('category')!;
      const { page, close } = await openAgreement(viewer);
      try {
        const shown = section(page, 'category').locator('.disagreements > li');
        expect(await shown.count()).toBe(category.disagreements.length);
        const worst = category.disagreements[0]!;
        // The worst item of example C is unit 6 (values 1, 2, 3, 4).
        expect(worst.call_id).toBe(callIds[5]);
        const summary = shown.first().locator('summary');
        expect(await summary.innerText()).toBe(`${worst.call_id}: ${worst.values.map(({ value }) => valueText(value)).join(', ')}`);
        await summary.focus();
        await page.keyboard.press('Enter');
        const table = shown.first().getByRole('table');
        await table.waitFor();
        await expect.poll(() => table.locator('thead th').allInnerTexts()).toEqual(worst.values.map(({ annotator_user_id }) => labelOf(annotator_user_id)));
        expect(await table.locator('tbody td').allInnerTexts()).toEqual(worst.values.map(({ value }) => valueText(value)));
        expect(await seriousViolations(page)).toEqual([]);

        await shown.first().getByRole('button', { name: 'Open the item with its call and every value' }).focus();
        await page.keyboard.press('Enter');
        const dialog = page.getByRole('dialog');
        await dialog.getByRole('heading', { level: 2, name: 'unit-6', exact: true }).waitFor();
        const values = dialog.getByRole('table', { name: 'Values by annotator' });
        await values.waitFor();
        const rows = () => values.locator('tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].map((cell) => (cell as HTMLElement).innerText)));
        const ids = annotators.map((user) => user.user_id).sort();
        const valueOf = (name: SpecName, userId: string) => {
          const value = (SPECS[name].rows[annotators.findIndex((user) => user.user_id === userId)] as readonly unknown[])[5];
          return value === undefined ? 'none' : valueText(value);
        };
        await expect.poll(rows).toEqual([
          ['Spec', ...ids.map(labelOf)],
          ...(['category', 'rating', 'flag', 'mood'] as const).map((name) => [name, ...ids.map((id) => valueOf(name, id))]),
        ]);
        expect(await dialog.getByRole('region', { name: 'Output' }).innerText()).toContain('Answer 6');
        await screenshot(page, `${backend}-agreement-item`);
        expect(await seriousViolations(page)).toEqual([]);
        await dialog.getByRole('button', { name: 'Close' }).click();
        await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
      } finally {
        await close();
      }
    });

    it('computes again at a level of measurement chosen on the page', async () => {
      const api = await agreementOf(viewer.api_key, { [refs.rating]: 'interval' });
      expect(api.get('rating')!.alpha).toBeCloseTo(0.849, 3);
      const { page, close } = await openAgreement(viewer);
      try {
        const level = section(page, 'rating').getByLabel('Level of measurement');
        expect(await level.inputValue()).toBe('ordinal');
        await level.focus();
        await level.selectOption('interval');
        await expect.poll(() => figure(page, 'rating', 'alpha')).toBe(alphaText(api.get('rating')!.alpha!));
        expect(await figure(page, 'rating', 'observed')).toBe(shareText(api.get('rating')!.observed_agreement!));
        expect(await section(page, 'rating').locator('.reading').innerText()).toMatch(/^Reliable\./);
        // The other specs keep their own levels.
        expect(await figure(page, 'category', 'alpha')).toBe('0.743');
        expect(await level.evaluate((element) => element === document.activeElement)).toBe(true);
      } finally {
        await close();
      }
    });

    it('saw no CSP violation, console error or uncaught error', () => {
      expect(troubles.flatMap((trouble) => [...trouble.cspViolations, ...trouble.pageErrors, ...trouble.consoleErrors])).toEqual([]);
    });
  });
});

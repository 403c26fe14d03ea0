import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { describeInBrowser, launchChromium, openPage, screenshot, seriousViolations, type PageTrouble, type PageView } from '../harness/browser.ts';
import { allFeedback, callRefOf } from '../harness/feedback.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { addItems, createCalls, createQueue, uniqueId } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// The rubric builder of the project page in Chromium: specs of each kind built with the keyboard,
// each stored schema read back through the API, and the fields they make answered on the annotate
// page, whose stored values are read back too.

type Spec = { ref: string; name: string; description: string | null; field_schema: Record<string, unknown> };

describeInBrowser('rubric builder in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachBackend('rubric builder', (backend) => {
    let server: TestServer;
    let alice: CreatedKeyForTest;
    const troubles: PageTrouble[] = [];

    beforeAll(async () => {
      server = await startTestServer(backend);
      alice = await createUser(server, { entity: 'acme', role: 'member' });
    });
    afterAll(() => server?.stop());

    async function open(path: string, view: PageView = {}): Promise<{ page: Page; close: () => Promise<void> }> {
      const opened = await openPage(browser, view);
      troubles.push(opened.trouble);
      await opened.page.addInitScript((apiKey: string) => sessionStorage.setItem('loupe.apiKey', apiKey), alice.api_key);
      await opened.page.goto(`${server.url}/app/${path}`);
      return opened;
    }
    const specsOf = async (projectId: string): Promise<Spec[]> => {
      const reply = await rest(server, 'POST', '/annotation_specs/query', { key: alice.api_key, body: { project_id: projectId } });
      expect(reply.status, reply.text).toBe(200);
      return reply.body.specs;
    };
    /** Types into a field reached by its label (focus, select all, type): keys only. */
    const typeInto = async (page: Page, label: string, text: string) => {
      const field = page.getByLabel(label, { exact: true });
      await field.focus();
      await page.keyboard.press('ControlOrMeta+A');
      await page.keyboard.press('Delete');
      if (text) await page.keyboard.type(text);
    };
    const create = async (page: Page, name: string) => {
      await page.getByRole('button', { name: 'Create spec' }).focus();
      await page.keyboard.press('Enter');
      await page.getByText(new RegExp(`Stored annotation spec ${name} `)).waitFor();
    };
    const preview = (page: Page) => page.getByRole('region', { name: 'Preview' });

    it('builds each kind of field into the schema the annotate page shows as that field, and stores what is answered there', async () => {
      const projectId = `acme/${uniqueId('rubric').replace(/-/g, '')}`;
      // The project exists once a call is stored.
      const callIds = await createCalls(server, alice.api_key, projectId, [{ id: uniqueId('call'), op_name: 'answer' }]);
      const { page, close } = await open(`p/${projectId}`);
      try {
        await page.getByRole('heading', { name: 'New annotation spec' }).waitFor();
        const kind = page.getByLabel('Kind of field');
        const schemaBox = page.getByLabel('JSON Schema');

        // A scale 1–5 with words for its ends: the schema is written as the form is filled, and the preview is the scale.
        await typeInto(page, 'Spec name', 'helpfulness');
        await typeInto(page, 'Words for the lowest point (optional)', 'Not at all');
        await typeInto(page, 'Words for the highest point (optional)', 'Completely');
        const scale = { type: 'integer', minimum: 1, maximum: 5, anyOf: [{ const: 1, title: 'Not at all' }, { const: 5, title: 'Completely' }, { minimum: 2, maximum: 4 }] };
        expect(JSON.parse(await schemaBox.inputValue())).toEqual(scale);
        const previewScale = preview(page).getByRole('radiogroup', { name: 'helpfulness' });
        expect(await previewScale.getByRole('radio').count()).toBe(5);
        // The ends carry their words, in the radios' names too.
        expect(await previewScale.getByRole('radio', { name: /^1\s*Not at all$/ }).count()).toBe(1);
        expect(await previewScale.getByRole('radio', { name: /^5\s*Completely$/ }).count()).toBe(1);
        expect(await previewScale.getByRole('radio', { name: '3', exact: true }).count()).toBe(1);
        await screenshot(page, `${backend}-rubric-builder-scale`);
        expect(await seriousViolations(page)).toEqual([]);
        await create(page, 'helpfulness');

        // A scale too wide is refused at its field, before anything is sent.
        await typeInto(page, 'Spec name', 'wide');
        await typeInto(page, 'Highest point', '20');
        await page.getByRole('button', { name: 'Create spec' }).focus();
        await page.keyboard.press('Enter');
        await expect.poll(() => page.getByLabel('Highest point', { exact: true }).getAttribute('aria-invalid')).toBe('true');
        expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-invalid'))).toBe('true');
        await page.getByText('A scale has at most 11 points; for a wider range choose a number.').waitFor();

        // Yes or no; one of a list; several of a list (two options are the least); free text; a whole number.
        await kind.selectOption('boolean');
        await typeInto(page, 'Spec name', 'correct');
        await create(page, 'correct');
        await kind.selectOption('choice');
        await typeInto(page, 'Spec name', 'tone');
        await typeInto(page, 'Options, one a line', 'friendly\nneutral\nrude');
        expect(await preview(page).getByRole('radiogroup', { name: 'tone' }).getByRole('radio').count()).toBe(3);
        await create(page, 'tone');
        await kind.selectOption('multi');
        await typeInto(page, 'Spec name', 'problems');
        await typeInto(page, 'Options, one a line', 'wrong');
        await page.getByRole('button', { name: 'Create spec' }).focus();
        await page.keyboard.press('Enter');
        await page.getByText('Give at least two options, one a line.').waitFor();
        await typeInto(page, 'Options, one a line', 'wrong\nrude\nlong\n');
        expect(await preview(page).getByRole('group', { name: /problems/ }).getByRole('checkbox').count()).toBe(3);
        await screenshot(page, `${backend}-rubric-builder-multi`);
        expect(await seriousViolations(page)).toEqual([]);
        await create(page, 'problems');
        await kind.selectOption('text');
        await typeInto(page, 'Spec name', 'comment');
        await typeInto(page, 'Longest answer in characters (optional)', '500');
        await create(page, 'comment');
        await kind.selectOption('number');
        await typeInto(page, 'Spec name', 'tokens');
        await typeInto(page, 'Least value (optional)', '0');
        await typeInto(page, 'Greatest value (optional)', '');
        await page.getByLabel('Whole numbers only').focus();
        await page.keyboard.press('Space');
        expect(await preview(page).getByLabel('tokens').getAttribute('inputmode')).toBe('numeric');
        await create(page, 'tokens');
        // The advanced kind starts from the schema built so far.
        await kind.selectOption('json');
        expect(JSON.parse(await schemaBox.inputValue())).toEqual({ type: 'integer', minimum: 1, maximum: 5 });

        const specs = await specsOf(projectId);
        const stored = Object.fromEntries(specs.map((spec) => [spec.name, spec.field_schema]));
        expect(stored).toEqual({
          helpfulness: scale,
          correct: { type: 'boolean' },
          tone: { enum: ['friendly', 'neutral', 'rude'] },
          problems: { type: 'array', items: { enum: ['wrong', 'rude', 'long'] }, uniqueItems: true },
          comment: { type: 'string', maxLength: 500 },
          tokens: { type: 'integer', minimum: 0 },
        });
        expect(specs.map((spec) => spec.name)).not.toContain('wide');

        // The annotate page shows each as built, and stores what is answered with the keyboard.
        const refs = ['helpfulness', 'correct', 'tone', 'problems', 'comment', 'tokens'].map((name) => specs.find((spec) => spec.name === name)!.ref);
        const queueId = await createQueue(server, alice.api_key, projectId, { scorer_refs: refs });
        expect((await addItems(server, alice.api_key, projectId, queueId, callIds)).added_count).toBe(1);
        await page.goto(`${server.url}/app/p/${projectId}/q/${queueId}/annotate`);
        await page.getByRole('button', { name: 'Start annotating' }).waitFor();
        await page.keyboard.press('Enter');
        await page.getByRole('heading', { level: 2, name: 'answer', exact: true }).waitFor();
        const helpfulness = page.getByRole('radiogroup', { name: 'helpfulness' });
        expect(await helpfulness.getByRole('radio').count()).toBe(5);
        expect(await helpfulness.getByText('Completely').count()).toBe(1);
        // Digits answer the first unanswered fields: helpfulness 4, correct yes, tone rude.
        for (const key of ['4', '1', '3']) await page.keyboard.press(key);
        // Several of a list: Tab to its first box, Space ticks it, Tab, Tab and Space the third.
        await page.getByRole('group', { name: /problems/ }).getByRole('checkbox', { name: 'wrong' }).focus();
        await page.keyboard.press('Space');
        await page.keyboard.press('3'); // a digit in the focused field ticks that option
        await page.getByLabel('tokens').focus();
        await page.keyboard.type('12');
        await screenshot(page, `${backend}-rubric-builder-annotate`);
        expect(await seriousViolations(page)).toEqual([]);
        await page.keyboard.press('Control+Enter');
        await page.getByRole('heading', { name: 'Nothing left to annotate' }).waitFor();
        const feedback = await allFeedback(server, alice.api_key, projectId, { queue_id: queueId });
        expect(feedback.map((record) => [record.call_ref, record.feedback_type, record.payload]).sort()).toEqual(
          [
            ['svc.annotation.helpfulness', { value: 4 }],
            ['svc.annotation.correct', { value: true }],
            ['svc.annotation.tone', { value: 'rude' }],
            ['svc.annotation.problems', { value: ['wrong', 'long'] }],
            ['svc.annotation.tokens', { value: 12 }],
          ]
            .map(([type, payload]) => [callRefOf(projectId, callIds[0]!), type, payload])
            .sort(),
        );
      } finally {
        await close();
      }
    });

    it('the builder and its preview in the dark theme at 390 px: no serious axe violation and nothing scrolls sideways', async () => {
      // A short id: a long one is a single word wider than the phone (the page's heading, not the builder).
      const projectId = 'acme/narrow';
      await createCalls(server, alice.api_key, projectId, [{ id: uniqueId('call'), op_name: 'answer' }]);
      const { page, close } = await open(`p/${projectId}`, { width: 390, height: 844, colorScheme: 'dark' });
      try {
        await page.getByRole('heading', { name: 'New annotation spec' }).waitFor();
        await typeInto(page, 'Spec name', 'helpfulness');
        await typeInto(page, 'Words for the lowest point (optional)', 'Not at all');
        await typeInto(page, 'Words for the highest point (optional)', 'Completely');
        await page.getByRole('heading', { name: 'Preview' }).scrollIntoViewIfNeeded();
        await screenshot(page, `${backend}-rubric-builder-dark-390-scale`);
        expect(await seriousViolations(page)).toEqual([]);
        await page.getByLabel('Kind of field').selectOption('multi');
        await typeInto(page, 'Options, one a line', 'wrong\nrude\nlong');
        await screenshot(page, `${backend}-rubric-builder-dark-390-multi`);
        expect(await seriousViolations(page)).toEqual([]);
        expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
      } finally {
        await close();
      }
    });

    it('saw no CSP violation, console error or uncaught error', () => {
      expect(troubles.flatMap((trouble) => [...trouble.cspViolations, ...trouble.pageErrors, ...trouble.consoleErrors])).toEqual([]);
    });
  });
});

import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { describeInBrowser, launchChromium, openPage, screenshot, seriousViolations, type PageTrouble } from '../harness/browser.ts';
import { batchCreate, freeForm } from '../harness/feedback.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { createQueue, createSomeCalls } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

const STRICT_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'";

describeInBrowser('web app in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachBackend('web app', (backend) => {
    let server: TestServer;
    let alice: CreatedKeyForTest;
    const troubles: PageTrouble[] = [];
    beforeAll(async () => {
      server = await startTestServer(backend);
      alice = await createUser(server, { entity: 'acme', role: 'member' });
      await createSomeCalls(server, alice.api_key, 'acme/chatbot', 3);
      await createQueue(server, alice.api_key, 'acme/chatbot');
      expect((await batchCreate(server, alice.api_key, [freeForm('acme/chatbot')])).status).toBe(200);
      await createSomeCalls(server, alice.api_key, 'acme/search', 1);
    });
    afterAll(() => server?.stop());

    async function open() {
      const opened = await openPage(browser);
      troubles.push(opened.trouble);
      return opened;
    }

    it('signs in with an API key, lists entities and projects, and signs out', async () => {
      const { page, close } = await open();
      try {
        await page.goto(`${server.url}/`);
        expect(new URL(page.url()).pathname).toBe('/app/');
        await expect.poll(() => page.getByRole('heading', { name: 'Sign in' }).isVisible()).toBe(true);
        await screenshot(page, `${backend}-sign-in`);
        expect(await seriousViolations(page)).toEqual([]);

        // A wrong key: a clear message, nothing kept (the key form is the second choice, after the password's).
        await page.getByRole('button', { name: 'Use an API key instead' }).click();
        await page.getByLabel('API key').fill('lp_not_a_real_key');
        await page.getByRole('button', { name: 'Sign in' }).click();
        const alert = page.getByRole('alert');
        await alert.waitFor();
        expect(await alert.textContent()).toMatch(/not accepted/);
        expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
        expect(await seriousViolations(page)).toEqual([]);

        // The key, typed and sent with the keyboard.
        await page.getByLabel('API key').fill(alice.api_key);
        await page.keyboard.press('Enter');
        await page.getByRole('heading', { name: 'Projects', level: 1 }).waitFor();
        const rows = page.getByRole('table').getByRole('row');
        await expect.poll(() => rows.count()).toBe(3);
        expect(await rows.nth(1).innerText()).toMatch(/^chatbot\s+acme\s+3\s+1\s+1\s+/);
        expect(await rows.nth(2).innerText()).toMatch(/^search\s+acme\s+1\s+0\s+0\s+/);
        expect(await page.getByRole('listitem').filter({ hasText: 'acme' }).innerText()).toMatch(/acme\s+member/);
        expect(await page.getByText(`Signed in as ${alice.username}`).isVisible()).toBe(true);
        // Kept for the tab only, and never in the address.
        expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([alice.api_key]);
        expect(await page.evaluate(() => localStorage.length)).toBe(0);
        expect(page.url()).not.toContain(alice.api_key);
        await screenshot(page, `${backend}-projects`);
        expect(await seriousViolations(page)).toEqual([]);

        // A reload keeps the tab signed in.
        await page.reload();
        await page.getByRole('heading', { name: 'Projects', level: 1 }).waitFor();

        // The focus ring shows on the focused button.
        await page.getByRole('button', { name: 'Sign out' }).focus();
        await page.keyboard.press('Shift+Tab');
        await page.keyboard.press('Tab');
        const ring = await page.getByRole('button', { name: 'Sign out' }).evaluate((button) => getComputedStyle(button).outlineStyle);
        expect(ring).toBe('solid');

        await page.keyboard.press('Enter');
        await page.getByLabel('API key').waitFor();
        expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
        await page.reload();
        await page.getByRole('button', { name: 'Use an API key instead' }).click();
        await page.getByLabel('API key').waitFor();
        expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
      } finally {
        await close();
      }
    });

    it('shows the public model catalog, filtered by the server, with prices per million tokens', async () => {
      const all = (await rest(server, 'GET', '/inference/router/partner/models')).body.data as any[];
      const { page, close } = await open();
      try {
        await page.goto(`${server.url}/app/models`);
        await page.getByRole('heading', { name: 'Model catalog' }).waitFor();
        const rows = page.getByRole('table').locator('tbody tr');
        await expect.poll(() => rows.count()).toBe(all.length);
        const llama = rows.filter({ hasText: 'meta-llama/llama-3.3-70b-instruct' });
        expect(await llama.locator('td').allInnerTexts()).toEqual(['text', 'text', 'fp8', '131,072', '$0.13', '$0.39', 'tools, json_mode, structured_outputs']);
        // Prices are exact decimals: per token × 1,000,000, without floating-point noise.
        const prices = async (id: string) => (await rows.filter({ hasText: id }).locator('td').allInnerTexts()).slice(4, 6);
        expect(await prices('meta-llama/llama-3.1-8b-instruct')).toEqual(['$0.02', '$0.05']);
        expect(await prices('meta-llama/llama-3.2-11b-vision-instruct')).toEqual(['$0.049', '$0.049']);
        expect(await prices('deepseek/deepseek-r1-0528')).toEqual(['$0.5', '$2.15']);
        expect(await prices('openai/whisper-large-v3')).toEqual(['free', 'free']);
        await screenshot(page, `${backend}-models`);
        expect(await seriousViolations(page)).toEqual([]);

        const shown = async () => (await rows.locator('th .model-id').allInnerTexts()).sort();
        const expected = (keep: (model: any) => boolean) => all.filter(keep).map((model) => model.id).sort();
        await page.getByLabel('Feature').selectOption('reasoning');
        await expect.poll(shown).toEqual(expected((m) => m.supported_features.includes('reasoning')));
        await page.getByLabel('Quantization').selectOption('fp8');
        await expect.poll(shown).toEqual(expected((m) => m.supported_features.includes('reasoning') && m.quantization === 'fp8'));
        await page.getByLabel('Feature').selectOption('');
        await page.getByLabel('Quantization').selectOption('');
        await page.getByLabel('Input modality').selectOption('image');
        await expect.poll(shown).toEqual(expected((m) => m.input_modalities.includes('image')));
        await page.getByLabel('Input modality').selectOption('');
        await page.getByLabel('Output modality').selectOption('embeddings');
        await expect.poll(shown).toEqual(expected((m) => m.output_modalities.includes('embeddings')));
        await page.getByLabel('Input modality').selectOption('video');
        await page.getByText('No model matches these filters.').waitFor();
        expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await close();
      }
    });

    it('serves the app under a strict CSP with nothing inline, and the page needs nothing it blocks', async () => {
      const { page, close } = await open();
      try {
        const response = await page.goto(`${server.url}/app/`);
        const headers = response!.headers();
        expect(headers['content-security-policy']).toBe(STRICT_CSP);
        expect(headers['x-content-type-options']).toBe('nosniff');
        expect(headers['referrer-policy']).toBe('no-referrer');
        expect(headers['cache-control']).toBe('no-cache');
        const html = await response!.text();
        expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/i);
        expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
        expect(html).not.toMatch(/https?:\/\//);
        await page.getByRole('button', { name: 'Use an API key instead' }).click();
        await page.getByLabel('API key').waitFor();
        const assets = await page.evaluate(() => performance.getEntriesByType('resource').map((entry) => entry.name));
        for (const asset of assets) expect(new URL(asset).origin).toBe(server.url);
        // A page served inside a frame is refused by frame-ancestors 'none'.
      } finally {
        await close();
      }
    });

    it('saw no CSP violation, console error or uncaught error on any page', () => {
      const seen = troubles.flatMap((trouble) => [...trouble.cspViolations, ...trouble.pageErrors]);
      expect(seen).toEqual([]);
      // The wrong key's 401 is the one error the browser itself logs.
      const consoleErrors = troubles.flatMap((trouble) => trouble.consoleErrors).filter((text) => !/status of 401/.test(text));
      expect(consoleErrors).toEqual([]);
    });
  });
});

import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { describeInBrowser, launchChromium, openPage, screenshot } from '../harness/browser.ts';
import { rest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Issue 23 point 8: /docs (Swagger UI) carries the web app's protective headers, and Swagger UI
// works under that CSP in Chromium: every operation listed, one opened, nothing blocked.

describeInBrowser('API docs in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachBackend('/docs', (backend) => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer(backend);
    });
    afterAll(() => server?.stop());

    it('carries the same protective headers as /app/, on the page and its assets', async () => {
      const app = await rest(server, 'GET', '/app/');
      const csp = app.headers.get('content-security-policy')!;
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe');
      for (const path of ['/docs', '/docs/', '/docs/init.js', '/docs/swagger-ui-bundle.js', '/docs/swagger-ui.css']) {
        const reply = await rest(server, 'GET', path);
        expect(reply.status, path).toBe(200);
        expect(reply.headers.get('content-security-policy'), path).toBe(csp);
        expect(reply.headers.get('x-content-type-options'), path).toBe('nosniff');
        expect(reply.headers.get('referrer-policy'), path).toBe('no-referrer');
      }
    });

    it('renders every operation of /openapi.json under that CSP, with nothing blocked', async () => {
      const document = (await rest(server, 'GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
      const operations = Object.values(document.paths).reduce((n, item) => n + Object.keys(item).length, 0);
      expect(operations).toBeGreaterThan(20);
      const { page, trouble, close } = await openPage(browser);
      const failed: string[] = [];
      page.on('response', (answer) => {
        if (answer.status() >= 400) failed.push(`${answer.status()} ${answer.url()}`);
      });
      try {
        const response = await page.goto(`${server.url}/docs`);
        expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
        const blocks = page.locator('.opblock');
        await expect.poll(() => blocks.count(), { timeout: 20_000 }).toBe(operations);
        expect(await page.locator('.opblock-summary-path').first().innerText()).toMatch(/^\//);
        // One operation opened: its parameters and responses render too.
        await page.locator('.opblock-summary').first().click();
        await page.locator('.opblock-body .responses-wrapper').first().waitFor();
        await screenshot(page, `${backend}-docs`);
        expect(failed).toEqual([]);
        expect(trouble).toEqual({ cspViolations: [], consoleErrors: [], pageErrors: [] });
      } finally {
        await close();
      }
    });
  });
});

/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// Code passed to page.evaluate runs in the page: the DOM's types check it.
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AxeBuilder } from '@axe-core/playwright';
import { chromium, type Browser, type Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';

/** Debian's Chromium (never a downloaded browser); LOUPE_CHROMIUM names another binary. */
export const CHROMIUM = process.env.LOUPE_CHROMIUM ?? '/usr/bin/chromium';
export const REPORTS = fileURLToPath(new URL('../../reports/web/', import.meta.url));

/**
 * Declares browser tests. Without Chromium they fail in CI (a skipped browser suite there is a
 * broken machine, not a pass) and are skipped elsewhere under a name that says why.
 */
export function describeInBrowser(name: string, body: () => void): void {
  if (existsSync(CHROMIUM)) {
    describe(name, body);
    return;
  }
  const why = `no Chromium at ${CHROMIUM} (apt-get install chromium)`;
  if (process.env.CI && process.env.CI !== 'false') {
    describe(name, () => it(`needs Chromium: ${why}`, () => expect.fail(`The browser tests cannot run: ${why}.`)));
    return;
  }
  console.warn(`\n*** NOTICE: ${why}: every browser test is SKIPPED. ***\n`);
  describe.skip(`${name} — SKIPPED: ${why}`, body);
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}

/** What a page reported that it should not have: CSP violations, console errors, uncaught errors. */
export type PageTrouble = { cspViolations: string[]; consoleErrors: string[]; pageErrors: string[] };

/** A page in a context of its own (its own sessionStorage), watched for trouble. */
/**
 * How a page is looked at: the desktop's light theme by default, or a phone's width, or the dark
 * theme; `timezoneId` (IANA) sets the browser's time zone, else the machine's.
 */
export type PageView = { width?: number; height?: number; colorScheme?: 'light' | 'dark'; timezoneId?: string };

export async function openPage(browser: Browser, { width = 1280, height = 900, colorScheme = 'light', timezoneId }: PageView = {}): Promise<{ page: Page; trouble: PageTrouble; close: () => Promise<void> }> {
  const context = await browser.newContext({ viewport: { width, height }, colorScheme, ...(timezoneId ? { timezoneId } : {}) });
  const page = await context.newPage();
  const trouble: PageTrouble = { cspViolations: [], consoleErrors: [], pageErrors: [] };
  await page.exposeFunction('reportCspViolation', (text: string) => trouble.cspViolations.push(text));
  // Injected by the browser's debugging protocol, which the page's CSP does not govern.
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event: SecurityPolicyViolationEvent) => {
      (window as unknown as { reportCspViolation(text: string): void }).reportCspViolation(`${event.violatedDirective} blocked ${event.blockedURI}`);
    });
  });
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    if (/Content.Security.Policy|Refused to/i.test(message.text())) trouble.cspViolations.push(message.text());
    else trouble.consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => trouble.pageErrors.push(error.message));
  return { page, trouble, close: () => context.close() };
}

/** axe-core's serious and critical violations on the page as it is now. */
export async function seriousViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id} (${violation.impact}): ${violation.help} — ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(REPORTS, { recursive: true });
  await page.screenshot({ path: `${REPORTS}${name}.png`, fullPage: true });
}

/// <reference lib="dom" />
// (for the callbacks given to page.evaluate, which run in the browser)
/**
 * The inspector page in a real browser (Debian's chromium through playwright-core; where none is
 * installed, a failing test says how to install it): its layout at a desktop width and a phone width (with screenshots
 * compared against test/inspect/screenshots/, UPDATE_SCREENSHOTS=1 to renew them after looking at
 * them), the chart lit for the shown allocation, the timeline and the deployment, names from the
 * cluster as text, live updates, the lost connection; everything loaded from the inspector itself.
 */
import type { Page } from 'playwright-core';
import { HOSTILE_JOB, PAGE_START, pageFixture, type PageFixture } from './pageFixture.js';
import { describeWithBrowser, expectScreenshot, launchBrowser, type Browser } from './browserSupport.js';
import { driveTo } from '../supervisor/support/harness.js';

interface Watched {
  page: Page;
  /** Console errors, page errors, dialogs, and requests to anywhere but the inspector. */
  trouble: string[];
}

async function open(browser: Browser, fixture: PageFixture, width: number, height: number, allocationId: string): Promise<Watched> {
  const page = await browser.context.newPage();
  // Shorter than the test's own timeout, so a wait that fails says which.
  page.setDefaultTimeout(10_000);
  await page.setViewportSize({ width, height });
  const origin = new URL(fixture.inspected.server.url).origin;
  const trouble: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') trouble.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => trouble.push(`page error: ${error.message}`));
  page.on('dialog', (dialog) => {
    trouble.push(`dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  page.on('request', (request) => {
    if (new URL(request.url()).origin !== origin) trouble.push(`request to ${request.url()}`);
  });
  await page.goto(`${fixture.inspected.server.url}#${encodeURIComponent(allocationId)}`);
  await page.waitForSelector('#selected:not([hidden]) .timeline .step');
  await page.waitForSelector('#panel-deployments .deployment');
  await page.evaluate(() => document.fonts.ready);
  return { page, trouble };
}

const screenshot = (page: Page): Promise<Buffer> => page.screenshot({ fullPage: true, animations: 'disabled', caret: 'hide' });

/** Boxes of the page's three parts, and how wide the document is. */
function layout(page: Page): Promise<{ nav: DOMRect; detail: DOMRect; aside: DOMRect; scrollWidth: number; innerWidth: number }> {
  return page.evaluate(() => ({
    nav: document.querySelector('nav')!.getBoundingClientRect().toJSON() as DOMRect,
    detail: document.querySelector('#detail')!.getBoundingClientRect().toJSON() as DOMRect,
    aside: document.querySelector('aside')!.getBoundingClientRect().toJSON() as DOMRect,
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
  }));
}

const texts = (page: Page, selector: string): Promise<string[]> => page.locator(selector).allTextContents();

jest.setTimeout(60_000);

describeWithBrowser('the inspector page in chromium', () => {
  let browser: Browser;
  let fixture: PageFixture;
  beforeAll(async () => {
    fixture = await pageFixture();
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await fixture?.inspected.close();
  });

  test('at 1400 px: three columns; the unhealthy allocation with Nomad\'s reason, its last move lit on the chart, its timeline; the deployment in Nomad\'s counts', async () => {
    const unhealthy = fixture.web[2]!;
    const { page, trouble } = await open(browser, fixture, 1400, 1100, unhealthy);
    try {
      const { nav, detail, aside, scrollWidth, innerWidth } = await layout(page);
      expect(nav.right).toBeLessThanOrEqual(detail.left + 1);
      expect(detail.right).toBeLessThanOrEqual(aside.left + 1);
      expect(Math.abs(nav.top - aside.top)).toBeLessThan(2);
      expect(scrollWidth).toBeLessThanOrEqual(innerWidth);

      expect(await page.locator('#title').textContent()).toBe('web.app[2]');
      expect(await page.locator('#verdict').textContent()).toBe('Unhealthy at 18:00:01.700 UTCserver: Unhealthy because of failed task');
      expect(await page.locator('.alloc.selected').getAttribute('data-id')).toBe(unhealthy);
      // The chart: unhealthy is the current state; the grouped arrow into it (from minHealthyWait among others) is lit, with its label.
      expect(await page.locator('svg.chart .node.current').getAttribute('data-state')).toBe('unhealthy');
      expect(await page.locator('svg.chart .edge.taken').getAttribute('data-from')).toBe('pending running minHealthyWait disconnected');
      expect(await texts(page, 'svg.chart .label.taken text')).toEqual(['taskFailed', 'allocFailed', 'deadlinePassed']);
      // The chart is drawn at its own size: labels 12 px, states 14 px.
      const scale = await page.locator('svg.chart').evaluate((svg) => svg.getBoundingClientRect().width / (svg as SVGSVGElement).viewBox.baseVal.width);
      expect(scale).toBeCloseTo(1, 2);

      const timeline = fixture.inspected.model.timeline(unhealthy)!;
      expect(await page.locator('.timeline > .step').count()).toBe(timeline.entries.length);
      expect(await texts(page, '.timeline .cause')).toEqual(['first seen', 'allocation update', 'allocation update', 'allocation update']);
      expect(await texts(page, '.timeline .move')).toEqual(['pending → running', 'running → minHealthyWait', 'minHealthyWait → unhealthy']);
      expect(await page.locator('.timeline .step').last().textContent()).toContain('task server: running → dead (failed)');

      const web = page.locator('#panel-deployments .deployment', { hasText: 'default/web v0' });
      expect(await web.locator('dl').textContent()).toBe('desired3placed3healthy2unhealthy1');
      expect(await web.locator('.deadline').textContent()).toBe('progress deadline in 54s');
      expect(await web.locator('.segment').evaluateAll((segments) => segments.map((s) => [s.getAttribute('data-kind'), Math.round(s.getBoundingClientRect().width)]))).toEqual([
        ['healthy', expect.any(Number)],
        ['unhealthy', expect.any(Number)],
      ]);
      expect(await web.locator('.chips .badge').allTextContents()).toEqual(['unhealthy', 'healthy', 'healthy']);
      expect(await texts(page, '#panel-evaluations pre')).toEqual([expect.stringContaining('Dimension "memory" exhausted on 1 nodes')]);

      expectScreenshot(await screenshot(page), 'inspector-1400.png');
      expect(trouble).toEqual([]);
    } finally {
      await page.close();
    }
  });

  test('at 420 px: one column, nothing wider than the screen, the chart at a legible size scrolled to the current state, the countdown', async () => {
    const { page, trouble } = await open(browser, fixture, 420, 900, fixture.api);
    try {
      const { nav, detail, aside, scrollWidth, innerWidth } = await layout(page);
      expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
      expect(nav.bottom).toBeLessThanOrEqual(detail.top + 1);
      expect(detail.bottom).toBeLessThanOrEqual(aside.top + 1);
      for (const part of [nav, detail, aside]) expect(part.width).toBeGreaterThan(400);
      // Words stay words: the title and a list entry each on one line.
      expect(await page.locator('#title').evaluate((title) => title.getBoundingClientRect().height)).toBeLessThan(30);
      expect(await page.locator('.alloc .name').first().evaluate((name) => name.getBoundingClientRect().width)).toBeGreaterThan(150);

      const chart = await page.locator('.chartbox').evaluate((box) => {
        const svg = box.querySelector('svg')!;
        const current = box.querySelector('.node.current')!.getBoundingClientRect();
        const view = box.getBoundingClientRect();
        return { scale: svg.getBoundingClientRect().width / svg.viewBox.baseVal.width, scrolled: box.scrollLeft, visible: current.left >= view.left && current.right <= view.right };
      });
      expect(chart.scale).toBeGreaterThan(0.85);
      expect(chart.visible).toBe(true);
      expect(await page.locator('svg.chart .node.current').getAttribute('data-state')).toBe('minHealthyWait');
      expect(await page.locator('#verdict').textContent()).toBe('Not judged yet: minHealthyWait — healthy in 28s if nothing changes; deadline in 4m 58s.');

      expectScreenshot(await screenshot(page), 'inspector-420.png');
      expect(trouble).toEqual([]);
    } finally {
      await page.close();
    }
  });

  test('names from the cluster are text: the job named in HTML is shown as its name, never as an element', async () => {
    const { page, trouble } = await open(browser, fixture, 1400, 900, fixture.hostile);
    try {
      expect(await texts(page, '.job')).toContain(`default/${HOSTILE_JOB}`);
      expect(await page.locator('#subtitle').textContent()).toContain(`job default/${HOSTILE_JOB} v0 · group g<b>`);
      expect(await page.locator('#tasks td').first().textContent()).toBe('"><script>alert(2)</script>');
      expect(await page.locator('img, #detail script, b').count()).toBe(0);
      expect(trouble).toEqual([]);
    } finally {
      await page.close();
    }
  });
});

describeWithBrowser('the inspector page, live', () => {
  test('a click shows another allocation and its timeline; time passing on the server counts down and brings the verdict; the filter; a lost server is said', async () => {
    // The server tells the page the time every second of its clock, so countdowns move.
    const fixture = await pageFixture({ tickMs: 1_000 });
    const browser = await launchBrowser();
    try {
      const { page, trouble } = await open(browser, fixture, 1400, 900, fixture.web[0]!);
      expect(await page.locator('#title').textContent()).toBe('web.app[0]');
      await page.locator(`.alloc[data-id="${fixture.api}"]`).click();
      await page.waitForFunction(() => document.querySelector('#title')?.textContent === 'api.http[0]');
      expect(new URL(page.url()).hash).toBe(`#${fixture.api}`);
      await page.waitForFunction((count) => document.querySelectorAll('.timeline > .step').length === count, fixture.inspected.model.timeline(fixture.api)!.entries.length);

      // 20 s later on the server's clock: still waiting, 8 s to go.
      await driveTo(fixture.inspected.clock, PAGE_START + 26_000);
      await page.waitForFunction(() => document.querySelector('#verdict')?.textContent?.includes('healthy in 8s'));
      // Then min_healthy_time passes: healthy, the timer's step on the timeline, the move lit.
      await driveTo(fixture.inspected.clock, PAGE_START + 40_000);
      await page.waitForFunction(() => document.querySelector('#verdict')?.textContent?.startsWith('Healthy at 18:00:34.000 UTC'));
      await page.waitForFunction(() => document.querySelector('.timeline > .step:last-child')?.textContent?.includes('min_healthy_time of 30s passed'));
      expect(await page.locator('svg.chart .edge.taken').getAttribute('data-from')).toBe('pending running minHealthyWait disconnected');
      expect(await page.locator('svg.chart .edge.taken').getAttribute('data-to')).toBe('healthy');
      expect(await page.locator(`.alloc[data-id="${fixture.api}"] .badge`).textContent()).toBe('healthy');

      await page.locator('#filter').fill('web.app');
      await page.waitForFunction(() => document.querySelectorAll('.alloc').length === 3);
      await page.locator('#filter').fill('no such thing');
      await page.waitForFunction(() => document.querySelector('#empty')?.textContent === 'No allocation matches the filter.');

      expect(await page.locator('#offline').isHidden()).toBe(true);
      await fixture.inspected.server.close();
      await page.waitForSelector('#offline:not([hidden])');
      expect(trouble).toEqual([]);
    } finally {
      await browser.close();
      await fixture.inspected.close();
    }
  });
});

/**
 * Debian's chromium driven by playwright-core, for the page tests: nothing downloaded or installed
 * at run time; where no chromium is installed they fail at once saying how to get one (.ci/run
 * installs it): a page left untested is not a pass. A fresh profile per launch, and the flags that keep Chromium off the network.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pixelmatch from 'pixelmatch';
import { chromium, type BrowserContext } from 'playwright-core';
import { PNG } from 'pngjs';

export const CHROMIUM = process.env.WARDEN_CHROMIUM ?? '/usr/bin/chromium';
export const HAVE_CHROMIUM = existsSync(CHROMIUM);

export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** describe where chromium is installed; elsewhere one test that fails saying how to get it. */
export function describeWithBrowser(name: string, body: () => void): void {
  if (HAVE_CHROMIUM) {
    describe(name, body);
    return;
  }
  describe(name, () => {
    test('needs chromium', () => {
      throw new Error(`no chromium at ${CHROMIUM}: apt-get install chromium (as .ci/run does), or set WARDEN_CHROMIUM`);
    });
  });
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchBrowser(width = 1400, height = 1000): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'warden-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width, height },
    deviceScaleFactor: 1,
    reducedMotion: 'reduce',
    colorScheme: 'dark',
    locale: 'en-US',
    timezoneId: 'UTC',
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

const SCREENSHOTS = join(__dirname, 'screenshots');
/** Pixels that may differ (anti-aliasing aside) before two screenshots count as different. */
const MAX_DIFFERENT = 0.003;

/**
 * Compares a screenshot with test/inspect/screenshots/<name>, tolerating what font rendering
 * varies: anti-aliased pixels are not counted (pixelmatch's detection), small colour shifts pass
 * (threshold 0.1), and up to 0.3% of pixels may differ. UPDATE_SCREENSHOTS=1 writes the reference
 * instead. On a failure the actual picture and the difference are written beside a temp folder.
 */
export function expectScreenshot(actual: Buffer, name: string): void {
  const reference = join(SCREENSHOTS, name);
  if (process.env.UPDATE_SCREENSHOTS === '1') {
    mkdirSync(SCREENSHOTS, { recursive: true });
    writeFileSync(reference, actual);
    return;
  }
  if (!existsSync(reference)) throw new Error(`no reference screenshot ${reference}: run UPDATE_SCREENSHOTS=1 npx jest test/inspect/page.test.ts and look at it`);
  const want = PNG.sync.read(readFileSync(reference));
  const got = PNG.sync.read(actual);
  const keep = (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'warden-screenshot-'));
    writeFileSync(join(dir, name), actual);
    return dir;
  };
  if (want.width !== got.width || want.height !== got.height) {
    throw new Error(`${name}: ${got.width}×${got.height} where the reference is ${want.width}×${want.height} (actual in ${keep()})`);
  }
  const diff = new PNG({ width: want.width, height: want.height });
  const different = pixelmatch(want.data, got.data, diff.data, want.width, want.height, { threshold: 0.1, includeAA: false });
  const ratio = different / (want.width * want.height);
  if (ratio > MAX_DIFFERENT) {
    const dir = keep();
    writeFileSync(join(dir, `diff-${name}`), PNG.sync.write(diff));
    throw new Error(`${name}: ${different} pixels (${(ratio * 100).toFixed(2)}%) differ from the reference, more than ${MAX_DIFFERENT * 100}% (actual and diff in ${dir})`);
  }
}

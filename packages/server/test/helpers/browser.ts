import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Debian's `chromium` package (`scripts/ensure-chromium.mjs` installs it): no test downloads a browser. */
export const chromiumPath = '/usr/bin/chromium';

/** Where screenshots go: a test artefact, git-ignored. */
export const screenshotDir = fileURLToPath(new URL('../../../../test-artifacts/dashboard/', import.meta.url));

/** The two widths every page is looked at: a laptop and a phone. */
export const widths = [
  { name: 'desktop', width: 1280, height: 900 },
  { name: 'phone', width: 390, height: 844 },
] as const;

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** A headless Chromium with a fresh profile, and what each page did that it must not. */
export interface TestBrowser {
  context: BrowserContext;
  /** A new tab that records requests to other origins and policy violations. */
  newPage(): Promise<Page>;
  /** Fails when a tab sent a request anywhere but `origin`, or the console reported a CSP violation or a script error. */
  assertClean(): void;
  close(): Promise<void>;
}

/** Launches Chromium headless (no network beyond what the page asks, no background services) on a throwaway profile. */
export async function launchBrowser(origin: string): Promise<TestBrowser> {
  const profile = mkdtempSync(join(tmpdir(), 'ferry-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 900 },
    permissions: ['clipboard-read', 'clipboard-write'],
  });
  const problems: string[] = [];
  const watch = (page: Page) => {
    page.on('request', (request) => {
      const url = request.url();
      if (!url.startsWith(origin + '/') && !url.startsWith('data:')) problems.push(`request to ${url}`);
    });
    page.on('console', (message) => {
      if (message.type() === 'error' && /Content Security Policy|Refused to/i.test(message.text())) problems.push(`console: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  };
  return {
    context,
    async newPage() {
      const page = context.pages()[0] && context.pages()[0]!.url() === 'about:blank' ? context.pages()[0]! : await context.newPage();
      watch(page);
      return page;
    },
    assertClean() {
      assert.deepEqual(problems, [], 'the dashboard reached only its own server, and nothing broke its policy');
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Opens the dashboard and signs in with `token`; resolves once the layout shows. */
export async function signIn(page: Page, adminUrl: string, token: string): Promise<void> {
  await page.goto(`${adminUrl}/dashboard/`);
  await page.getByLabel('Admin or read token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

/**
 * Looks at the page as a person would at both widths: a full-page screenshot of each into
 * `test-artifacts/dashboard/<name>-<width>.png`, and axe-core's check, failing on any serious
 * or critical violation. Leaves the page at desktop width.
 */
export async function inspect(page: Page, name: string): Promise<void> {
  mkdirSync(screenshotDir, { recursive: true });
  for (const size of widths) {
    await page.setViewportSize({ width: size.width, height: size.height });
    // uPlot resizes on a ResizeObserver callback: wait for a frame to be drawn at the new width.
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    await page.screenshot({ path: join(screenshotDir, `${name}-${size.width}.png`), fullPage: true });
    const violations = await runAxe(page);
    const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    assert.deepEqual(
      bad.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
      [],
      `${name} at ${size.width} px has no serious or critical accessibility violation`,
    );
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

// Evaluated through the DevTools protocol rather than added as a <script>, which the page's
// own Content-Security-Policy (script-src 'self') rightly refuses.
async function runAxe(page: Page): Promise<AxeViolation[]> {
  const loaded = await page.evaluate(() => typeof (globalThis as { axe?: unknown }).axe !== 'undefined');
  if (!loaded) await page.evaluate(axeSource);
  return page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (ctx: Document, o: object) => Promise<{ violations: AxeViolation[] }> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) }));
  });
}

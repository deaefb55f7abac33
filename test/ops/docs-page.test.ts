import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * /docs in a real browser (Debian's chromium, installed by .ci/run when missing): the reference page
 * renders the operations from /openapi.json using only files the gateway serves itself.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

let gw: TestGateway;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium), as .ci/run does`);
  gw = await startTestGateway({});
  browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await gw?.close();
});

describe('GET /docs', () => {
  it('renders the video and embeddings operations, loading nothing from outside the gateway', async () => {
    const page = await browser.newPage();
    const foreign: string[] = [];
    const failed: string[] = [];
    // Anything not served by the gateway itself (a CDN, a validator badge) is refused and recorded.
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(gw.url) || url.startsWith('data:')) return route.continue();
      foreign.push(url);
      return route.abort();
    });
    page.on('requestfailed', (r) => failed.push(r.url()));
    // The page runs under its CSP (src/ops/openapi.ts): nothing of it may be blocked by it.
    const blocked: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) blocked.push(m.text());
    });
    page.on('response', (r) => {
      if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
    });
    const res = await page.goto(`${gw.url}/docs`, { waitUntil: 'load' });
    expect(res?.status()).toBe(200);
    // Same origin as the console: never framed, and no https upgrade that would break plain http.
    const csp = res?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('upgrade-insecure-requests');
    expect(res?.headers()['x-frame-options']).toBe('DENY');
    await page.waitForSelector('.opblock', { timeout: 20_000 });
    const paths = await page.$$eval('.opblock .opblock-summary-path', (els) => els.map((e) => e.getAttribute('data-path') ?? e.textContent ?? ''));
    expect(paths).toEqual(expect.arrayContaining(['/v1/videos/generations', '/v1/videos/{id}', '/v1/embeddings']));
    const title = await page.textContent('.info .title');
    expect(title).toContain('Video & Embeddings Gateway');
    // The operation opens and shows its request body schema.
    await page.click('#operations-embeddings-postV1Embeddings .opblock-summary');
    await page.waitForSelector('#operations-embeddings-postV1Embeddings .opblock-body', { timeout: 10_000 });
    expect(await page.textContent('#operations-embeddings-postV1Embeddings .opblock-body')).toContain('encoding_format');
    expect(foreign).toEqual([]);
    expect(failed).toEqual([]);
    expect(blocked).toEqual([]);
    await page.close();
  }, 60_000);
});

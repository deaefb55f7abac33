import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * The console in a real browser (Debian's chromium, installed by .ci/run when missing) against a
 * gateway with a Sora simulator: the operator opens an account, tops it up and makes a key; the
 * key's holder signs in, a video made through the API completes in the jobs list and plays in the
 * job page; another account's job stays invisible in the page and in the API.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const SHOTS = resolve(__dirname, '../../test-artifacts/console');
/**
 * How long a page may take to show what an action brings about. expect.poll gives up after a second
 * by default, which a page, the gateway and the browser sharing a busy machine can take.
 */
const SHOWN = { timeout: 15_000 };

let sim: SimServer;
let gw: TestGateway;
let browser: Browser;
const problems: string[] = [];

async function newPage(ctx: BrowserContext): Promise<Page> {
  const page = await ctx.newPage();
  // A policy violation, an uncaught error or a request to anywhere else is a failure of the page.
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 40[14]/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(gw.url)) return route.continue();
    problems.push(`foreign request: ${url}`);
    return route.abort();
  });
  return page;
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

async function signIn(page: Page, token: string): Promise<void> {
  await page.goto(`${gw.url}/console`);
  await page.fill('#token', token);
  await page.press('#token', 'Enter');
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium), as .ci/run does`);
  mkdirSync(SHOTS, { recursive: true });
  sim = await sora.simulator.start({ taskMs: 600 });
  gw = await startTestGateway({ ...upstreamsFor([{ module: sora, sim }]), video: { poll_interval_ms: 100, refresher_interval_ms: 100 } }, { poller: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await sim?.close();
});

describe('the console in headless Chromium', () => {
  it('operator sets up an account and key; the key holder watches a video complete and play; other accounts stay hidden', async () => {
    // Another account with a finished job the key holder must never see.
    const other = await gw.newKey(50);
    const foreign = await call(gw, 'POST', '/v1/videos/generations', { key: other.key, body: { model: 'sora-2', prompt: 'not yours' } });
    expect(foreign.status, foreign.text).toBe(200);

    // Operator: a wrong token is refused, the admin token signs in.
    const opCtx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const op = await newPage(opCtx);
    await signIn(op, 'sk-gw-' + 'x'.repeat(43));
    await expect.poll(() => op.textContent('[role=alert]'), SHOWN).toContain('not the admin token or a valid API key');
    await shot(op, 'sign-in-refused');
    await op.fill('#token', gw.adminToken);
    await op.click('button[type=submit]');
    await op.waitForSelector('#accounts-title');
    // The session cookie is out of reach of scripts; nothing is kept in the browser's storage.
    expect(await op.evaluate(() => document.cookie)).not.toContain('gw_console');
    expect(await op.evaluate(() => localStorage.length + sessionStorage.length)).toBe(0);

    await op.fill('#new-account-name', 'acme');
    await op.fill('#new-account-balance', '1');
    await op.click('text=Create account');
    await op.waitForSelector('#account-title');
    expect(await op.textContent('#account-title')).toContain('acme');
    await op.fill('#topup-amount', '24');
    await op.fill('#topup-note', 'first invoice');
    await op.click('button:has-text("Top up")');
    await expect.poll(() => op.textContent('[data-testid=balance]'), SHOWN).toBe('25.00');
    await expect.poll(() => op.locator('text=first invoice').count(), SHOWN).toBe(1);
    await op.fill('#key-name', 'browser');
    await op.fill('#key-total', '10');
    await op.click('text=Create key');
    const secret = (await op.waitForSelector('#new-key-secret')).textContent();
    const key = (await secret)!.trim();
    expect(key).toMatch(/^sk-gw-[A-Za-z0-9_-]{43}$/);
    await shot(op, 'account');
    expect((await gw.services.store.getAccountByName('acme'))!.balance).toBe(25_000_000);

    // Key holder: signs in with the new key; a video made through the API completes in the list.
    const keyCtx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const holder = await newPage(keyCtx);
    await signIn(holder, key);
    await holder.waitForSelector('#jobs-title');
    expect(await holder.textContent('.who')).toContain('acme');
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'a red fox in the snow', seconds: 4 } });
    expect(created.status, created.text).toBe(200);
    const id: string = created.json.id;
    await holder.click('text=Refresh');
    const row = `tr[data-job="${id}"]`;
    await holder.waitForSelector(row);
    await holder.waitForSelector(`${row} .badge.ok`, { timeout: 20_000 });
    expect(await holder.textContent(`${row} .badge`)).toBe('completed');
    expect(await holder.locator(`tr[data-job="${foreign.json.id}"]`).count()).toBe(0);
    await shot(holder, 'jobs');

    // The job page plays the video through the content endpoint (Range requests, session cookie).
    const ranges: string[] = [];
    holder.on('request', (r) => {
      if (r.url().includes(`/v1/videos/${id}/content`)) ranges.push(r.headers().range ?? '');
    });
    await holder.click(`${row} a`);
    await holder.waitForSelector('#player');
    const played = await holder.evaluate(async () => {
      const v = document.getElementById('player') as HTMLVideoElement;
      v.muted = true;
      await v.play();
      const t0 = v.currentTime;
      // Plays on: the position moves (on a busy machine the first frames may take a while).
      const until = performance.now() + 15_000;
      while (v.currentTime <= t0 && !v.error && performance.now() < until) await new Promise((r) => setTimeout(r, 50));
      return { t0, t1: v.currentTime, error: v.error?.code ?? null, duration: v.duration };
    });
    expect(played.error).toBeNull();
    expect(played.t1).toBeGreaterThan(played.t0);
    expect(played.duration).toBeGreaterThan(1);
    expect(ranges.some((r) => r.startsWith('bytes='))).toBe(true);
    expect(await holder.textContent('.facts')).toContain('sora-2');
    await holder.evaluate(() => (document.getElementById('player') as HTMLVideoElement).pause());
    await shot(holder, 'job');

    // Another account's job: not in the page, not through the API with this session.
    await holder.goto(`${gw.url}/console#/jobs/${foreign.json.id}`);
    await expect.poll(() => holder.textContent('[role=alert]'), SHOWN).toMatch(/No video|not found/i);
    const probe = await holder.evaluate(async (otherId) => {
      const a = await fetch(`/v1/videos/${otherId}`);
      const b = await fetch(`/v1/videos/${otherId}/content`);
      const c = await fetch('/admin/accounts');
      return [a.status, b.status, c.status];
    }, foreign.json.id as string);
    expect(probe).toEqual([404, 404, 401]);

    // Usage charts for the key holder.
    await holder.goto(`${gw.url}/console#/usage`);
    await holder.waitForSelector('.chart svg');
    expect(await holder.locator('.chart svg rect.bar').count()).toBeGreaterThanOrEqual(2);
    await shot(holder, 'usage-key');

    // Operator: every account's jobs, upstream health, usage.
    await op.goto(`${gw.url}/console#/jobs`);
    await op.waitForSelector(`tr[data-job="${id}"]`);
    expect(await op.locator(`tr[data-job="${foreign.json.id}"]`).count()).toBe(1);
    await shot(op, 'operator-jobs');
    await op.goto(`${gw.url}/console#/upstreams`);
    await op.waitForSelector('#upstreams-title');
    await expect.poll(() => op.textContent('tbody'), SHOWN).toContain('2xx');
    await shot(op, 'upstreams');
    await op.goto(`${gw.url}/console#/usage`);
    await op.waitForSelector('.chart svg');
    await shot(op, 'usage');

    // Phone width: the page fits (wide tables scroll inside their own box).
    await holder.setViewportSize({ width: 390, height: 844 });
    await holder.goto(`${gw.url}/console#/jobs`);
    await holder.waitForSelector(`tr[data-job="${id}"]`);
    const overflow = await holder.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(1);
    await shot(holder, 'phone-jobs');

    // Keyboard: from the top, Tab reaches the skip link, then the navigation, with a visible focus ring.
    await holder.reload();
    await holder.waitForSelector(`tr[data-job="${id}"]`);
    await holder.keyboard.press('Tab');
    expect(await holder.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await holder.keyboard.press('Tab');
    const focused = await holder.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      return { text: el.textContent, outline: getComputedStyle(el).outlineStyle };
    });
    expect(focused.text).toBe('Jobs');
    expect(focused.outline).toBe('solid');

    // Sign out ends the session server-side: the API refuses the old cookie at once.
    await holder.click('text=Sign out');
    await holder.waitForSelector('#token');
    expect(await holder.evaluate(async () => (await fetch('/v1/videos')).status)).toBe(401);

    expect(problems).toEqual([]);
    await opCtx.close();
    await keyCtx.close();
  }, 120_000);

  it("an account's keys come newest first in pages; a key made on a later page shows at the head of the first", async () => {
    const accountId = await gw.createAccount('many-keys');
    const ids: string[] = [];
    for (let i = 0; i < 53; i++) {
      const k = await gw.services.store.createKey({
        id: `many-${String(i).padStart(2, '0')}`, accountId, hash: `many-hash-${i}`, prefix: `sk-gw-m${i}`, name: null,
        models: ['*'], actions: ['video'], limits: {}, expiresAt: null, createdAt: 1_700_000_000_000 + i, budget: null,
      });
      ids.unshift(k.id);
    }
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const op = await newPage(ctx);
    await signIn(op, gw.adminToken);
    await op.waitForSelector('#accounts-title');
    await op.goto(`${gw.url}/console#/accounts/many-keys`);
    const shown = () => op.$$eval('tr[data-key]', (rows) => rows.map((r) => r.getAttribute('data-key')));
    await expect.poll(shown, SHOWN).toEqual(ids.slice(0, 50));
    await op.click('text=Older keys');
    await expect.poll(shown, SHOWN).toEqual(ids.slice(50));
    expect(await op.isDisabled('text=Older keys')).toBe(true);
    await op.fill('#key-name', 'latest');
    await op.click('text=Create key');
    await op.waitForSelector('#new-key-secret');
    await expect.poll(async () => (await shown()).length, SHOWN).toBe(50);
    const rows = await shown();
    expect(rows.slice(1)).toEqual(ids.slice(0, 49));
    expect((await gw.services.store.getKey(rows[0]!))!.name).toBe('latest');
    expect(problems).toEqual([]);
    await ctx.close();
  }, 60_000);
});

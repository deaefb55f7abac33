import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { closeListener } from '../../src/http/close-listener.js';
import { isWildcardHost, listenerUrl } from '../../src/http/listener-url.js';
import { createLogger } from '../../src/ops/logger.js';
import { buildServices, type Services } from '../../src/services.js';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call } from '../helpers/gateway.js';
import { waitFor } from '../helpers/process.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * With no `public_url`, output_url is the listener's own address: an IPv6 host goes in brackets
 * (`http://::1:8080/...` is no URL), and with port 0 it names the port the OS chose, not 0.
 */
const BIN = fileURLToPath(new URL('../../bin/gateway.js', import.meta.url));
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'gw-listener-url-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Whether this machine has IPv6 loopback (some CI containers do not). */
async function hasIpv6Loopback(): Promise<boolean> {
  const srv = createServer();
  return new Promise((res) => {
    srv.once('error', () => res(false));
    srv.listen(0, '::1', () => srv.close(() => res(true)));
  });
}
const ipv6 = await hasIpv6Loopback();

describe('listenerUrl', () => {
  it('brackets an IPv6 literal, and only that', () => {
    expect(listenerUrl('::1', 8080)).toBe('http://[::1]:8080');
    expect(listenerUrl('2001:db8::7', 80)).toBe('http://[2001:db8::7]:80');
    expect(listenerUrl('127.0.0.1', 8080)).toBe('http://127.0.0.1:8080');
    expect(listenerUrl('localhost', 1)).toBe('http://localhost:1');
    expect(new URL(`${listenerUrl('::1', 18423)}/v1/videos/x/content`).host).toBe('[::1]:18423');
  });

  it('names the loopback address of its family for a wildcard host, which no client can connect to', () => {
    expect(listenerUrl('0.0.0.0', 8080)).toBe('http://127.0.0.1:8080');
    expect(listenerUrl('::', 8080)).toBe('http://[::1]:8080');
    expect(listenerUrl('0:0:0:0:0:0:0:0', 80)).toBe('http://[::1]:80');
    expect(['0.0.0.0', '::', '::0', '0:0:0:0:0:0:0:0'].every(isWildcardHost)).toBe(true);
    expect(['127.0.0.1', '::1', '10.0.0.0', '::ffff:0.0.0.0', 'localhost', 'gw.example.com'].some(isWildcardHost)).toBe(false);
  });
});

describe('output_url of a gateway on port 0 with no public_url', () => {
  let sim: SimServer;
  const running: Array<{ app: FastifyInstance; services: Services }> = [];
  beforeAll(async () => {
    sim = await sora.simulator.start({ taskMs: 50 });
  });
  afterAll(async () => {
    for (const r of running) {
      await closeListener(r.app);
      await r.services.close();
    }
    await sim?.close();
  });

  /** Starts a gateway listening on `host`; `logLines` collects what it logs at info and above. */
  async function start(host: string, server: Record<string, unknown> = {}, logLines?: string[]): Promise<{ url: string; services: Services }> {
    const dataDir = tempDir();
    const cfg = validateConfig(
      {
        database: `sqlite:${join(dataDir, 'gateway.db')}`,
        data_dir: dataDir,
        log_level: 'silent',
        admin_token: 'test-admin-token-0123456789',
        secret: 'test-secret-0123456789abcdef',
        server: { host, port: 0, ...server },
        video: { poll_interval_ms: 0, refresher_interval_ms: 0 },
        ...upstreamsFor([{ module: sora, sim }]),
      },
      '(test)',
    );
    const logger = logLines ? createLogger('info', { sink: { write: (line: string) => logLines.push(line) } }) : createLogger('silent');
    const services = await buildServices(cfg, { logger });
    const app = buildApp(services);
    running.push({ app, services });
    await app.listen({ host, port: 0 });
    const port = (app.server.address() as { port: number }).port;
    services.listening(port);
    return { url: listenerUrl(host, port), services };
  }

  async function outputUrl(gw: { url: string; services: Services }): Promise<string> {
    await gw.services.admin.createAccount('a', { balance: 100 });
    const { key } = await gw.services.admin.createKey({ account: 'a' });
    return (await completedJob(gw, key, 10_000, 50)).output_url as string;
  }

  it('names the port the server got, and the video downloads from it', async () => {
    const gw = await start('127.0.0.1');
    const out = await outputUrl(gw);
    expect(out.startsWith(`${gw.url}/v1/videos/`), out).toBe(true);
    const res = await fetch(out);
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0);
  }, 20_000);

  it.runIf(ipv6)('on an IPv6 host, is a URL (the address in brackets) that downloads', async () => {
    const gw = await start('::1');
    const out = await outputUrl(gw);
    expect(new URL(out).host).toBe(new URL(gw.url).host);
    expect(new URL(out).hostname).toBe('[::1]');
    expect((await fetch(out)).status).toBe(200);
  }, 20_000);

  const loopbackNotice = (lines: string[]) => lines.filter((l) => l.includes('server.public_url is not set'));

  it('on 0.0.0.0, names 127.0.0.1 (the video downloads from it) and says once that other machines need public_url', async () => {
    const lines: string[] = [];
    const gw = await start('0.0.0.0', {}, lines);
    const port = new URL(gw.url).port;
    const out = await outputUrl(gw);
    expect(out.startsWith(`http://127.0.0.1:${port}/v1/videos/`), out).toBe(true);
    expect((await fetch(out)).status).toBe(200);
    const notice = loopbackNotice(lines);
    expect(notice).toHaveLength(1);
    expect(JSON.parse(notice[0]!)).toMatchObject({ level: 40 });
    expect(notice[0]).toContain('set server.public_url');
  }, 20_000);

  it.runIf(ipv6)('on ::, names [::1], and the video downloads from it', async () => {
    const lines: string[] = [];
    const gw = await start('::', {}, lines);
    const out = await outputUrl(gw);
    expect(new URL(out).host).toBe(`[::1]:${new URL(gw.url).port}`);
    expect((await fetch(out)).status).toBe(200);
    expect(loopbackNotice(lines)).toHaveLength(1);
  }, 20_000);

  it('on 0.0.0.0 with a public_url, keeps it and says nothing', async () => {
    const lines: string[] = [];
    const gw = await start('0.0.0.0', { public_url: 'https://videos.example.com' }, lines);
    expect(gw.services.video.deps.settings.publicUrl).toBe('https://videos.example.com');
    expect(loopbackNotice(lines)).toEqual([]);
  });

  it('a public_url of its own is kept as it is', async () => {
    const gw = await start('127.0.0.1', { public_url: 'https://videos.example.com/gw/' });
    expect(gw.services.video.deps.settings.publicUrl).toBe('https://videos.example.com/gw');
  });
});

describe('gateway serve with no config, HOST=::1 and PORT=0', () => {
  it.runIf(ipv6)('says where it listens, with brackets and the real port, and its output_url uses it', async () => {
    const cwd = tempDir();
    const child = spawn(process.execPath, [BIN, 'serve'], { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HOST: '::1', PORT: '0' } });
    let err = '';
    child.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
    child.stdout!.resume();
    const exited = new Promise((res) => child.once('exit', res));
    try {
      await waitFor(() => /Gateway ready at (\S+?)[ .]/.test(err), 'the start banner', 20_000, 50);
      const base = /Gateway ready at (\S+?)(?: \(|\.\n)/.exec(err)![1]!;
      expect(base).toMatch(/^http:\/\/\[::1\]:\d+$/);
      expect(new URL(base).port).not.toBe('0');
      const key = readFileSync(join(cwd, 'data', 'demo-key'), 'utf8').trim();
      // The simulated task takes 6 s.
      const done = await completedJob({ url: base }, key, 20_000, 200);
      expect(String(done.output_url).startsWith(`${base}/v1/videos/`), done.output_url).toBe(true);
      expect((await fetch(done.output_url)).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  }, 40_000);
});

/** A 4-second sora-2 job created through `gw` and polled until it ended; it must have completed. */
async function completedJob(gw: { url: string }, key: string, waitMs: number, everyMs: number): Promise<any> {
  const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'a fox', seconds: 4 } });
  expect(created.status, created.text).toBe(200);
  let done: any;
  await waitFor(async () => {
    done = (await call(gw, 'GET', `/v1/videos/${created.json.id}`, { key })).json;
    return done.status !== 'processing' && done.status !== 'queued';
  }, 'the job to end', waitMs, everyMs);
  expect(done.status, JSON.stringify(done)).toBe('completed');
  return done;
}

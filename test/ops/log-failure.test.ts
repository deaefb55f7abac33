import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import { LOG_BUFFER_MAX_BYTES } from '../../src/ops/log-destination.js';
import type { SimServer } from '../../src/sim/framework.js';
import { onFreePort, PORT_TAKEN, saysReady, waitFor } from '../helpers/process.js';
import { parse, total } from './scrape.js';

/**
 * The gateway (bin/gateway.js) whose log destination, standard output, fails: a device that
 * refuses every write (/dev/full: ENOSPC, as a full disk) or a pipe whose reader stopped reading.
 * It must go on serving, count the lines it could not write (gateway_log_lines_dropped_total), say
 * so on stderr without flooding it, and still exit on SIGTERM within the drain deadline. Before,
 * the first failed write was raised with nothing to catch it (the process died, or hung in the
 * exit's flush retrying the write for ever), and a stalled reader held the exit for ever.
 */
const BIN = fileURLToPath(new URL('../../bin/gateway.js', import.meta.url));
const ADMIN = 'log-failure-admin-token-0123456789';
const DEADLINE_MS = 3_000;
const DROPPED = 'gateway_log_lines_dropped_total';
let dir: string;
let sim: SimServer;
let child: ChildProcess | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gw-log-failure-'));
  sim = await startOpenAISimulator();
});
afterEach(() => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  child = undefined;
});
afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Started {
  child: ChildProcess;
  url: string;
  /** Everything on stderr so far. */
  stderr: () => string;
  exited: Promise<number | string>;
}

/** Starts `gateway serve` with standard output on `stdout` (a descriptor, or 'pipe'); resolves once it says it listens. */
function start(name: string, stdout: number | 'pipe'): Promise<Started> {
  return onFreePort(async (port) => {
    const file = join(dir, `${name}.json`);
    writeFileSync(
      file,
      JSON.stringify({
        database: `sqlite:${join(dir, `${name}.db`)}`,
        data_dir: join(dir, `data-${name}`),
        admin_token: ADMIN,
        secret: 'log-failure-secret-0123456789abcdef',
        log_level: 'info',
        server: { host: '127.0.0.1', port, shutdown_timeout_ms: DEADLINE_MS },
        webhooks: { timeout_ms: 500 },
        upstreams: [{ name: 'oa', vendor: 'openai', base_url: sim.url, api_key: sim.settings.apiKey, models: ['text-embedding-3-small'] }],
        models: { 'text-embedding-3-small': { capabilities: ['embedding'], price: { per_million_input_tokens: 1000 } } },
      }),
    );
    const c = spawn(process.execPath, [BIN, 'serve', '--config', file], { stdio: ['ignore', stdout, 'pipe'] });
    child = c;
    let err = '';
    c.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number | string>((res) => c.once('exit', (code, signal) => res(code ?? signal ?? -1)));
    const url = `http://127.0.0.1:${port}`;
    let gone = false;
    void exited.then(() => (gone = true));
    await waitFor(() => gone || saysReady(err, url), 'the gateway to say it listens', 20_000);
    if (gone) {
      if (err.includes(PORT_TAKEN)) return PORT_TAKEN;
      throw new Error(`the gateway exited before listening:\n${err}`);
    }
    return { child: c, url, stderr: () => err, exited };
  });
}

async function health(url: string): Promise<number> {
  return (await fetch(`${url}/health`, { signal: AbortSignal.timeout(5_000) })).status;
}

async function dropped(url: string): Promise<number> {
  const r = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` }, signal: AbortSignal.timeout(5_000) });
  expect(r.status).toBe(200);
  return total(parse(await r.text()), DROPPED);
}

/** `n` requests, `parallel` at a time, each writing an access line of about `pathBytes`. */
async function traffic(url: string, n: number, pathBytes: number, parallel = 16): Promise<void> {
  let next = 0;
  const long = 'p'.repeat(pathBytes);
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const r = await fetch(`${url}/${long}${i}`, { signal: AbortSignal.timeout(10_000) });
      await r.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}

/** An API key of a new account with money on it. */
async function apiKey(url: string): Promise<string> {
  const admin = (path: string, body: unknown) =>
    fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect((await admin('/admin/accounts', { name: 'acct', balance: '10' })).status).toBe(201);
  const r = await admin('/admin/keys', { account: 'acct' });
  expect(r.status).toBe(201);
  return ((await r.json()) as { key: string }).key;
}

/** SIGTERM, then how the process ended and how long that took. */
async function terminate(g: Started): Promise<{ code: number | string; ms: number }> {
  const at = Date.now();
  g.child.kill('SIGTERM');
  const code = await Promise.race([g.exited, new Promise<string>((r) => setTimeout(() => r('still running'), DEADLINE_MS + 10_000))]);
  return { code, ms: Date.now() - at };
}

const notices = (text: string) => text.split('\n').filter((l) => l.startsWith('gateway: log lines dropped'));

describe('a log destination that fails', () => {
  it.skipIf(!existsSync('/dev/full'))('every write refused (ENOSPC): keeps serving, counts the lines, says so once, exits on SIGTERM', async () => {
    const full = openSync('/dev/full', 'w');
    let g: Started;
    try {
      g = await start('full', full);
    } finally {
      closeSync(full);
    }
    // Each request writes an access line, and each write of the buffer (every 250 ms) fails.
    for (let round = 0; round < 5; round++) {
      await traffic(g.url, 40, 10);
      expect(await health(g.url)).toBe(200);
      await new Promise((r) => setTimeout(r, 300));
    }
    await waitFor(async () => (await dropped(g.url)) >= 100, 'the failed lines to be counted');
    // Many failed writes, one line on stderr: at most one a minute.
    expect(notices(g.stderr())).toHaveLength(1);
    expect(notices(g.stderr())[0]).toMatch(/writing to standard output failed: ENOSPC/);
    const end = await terminate(g);
    expect(end.code).toBe(0);
    expect(end.ms).toBeLessThan(DEADLINE_MS);
  }, 60_000);

  it('a reader that stopped reading: keeps serving, drops what its buffer cannot hold (counted), exits on SIGTERM', async () => {
    const g = await start('stalled', 'pipe');
    // Nothing reads the pipe: it fills (64 KB, and what Node reads ahead), then the buffer (4 MiB),
    // then lines are dropped. About 4 KB of access line a request, a sixth more than the buffer holds.
    const pathBytes = 4_000;
    await traffic(g.url, Math.ceil((LOG_BUFFER_MAX_BYTES * 7) / 6 / pathBytes), pathBytes);
    expect(await health(g.url)).toBe(200);
    expect(await dropped(g.url)).toBeGreaterThan(0);
    expect(notices(g.stderr()).join('\n')).toMatch(/standard output is not taking lines and the 4 MiB buffer is full/);
    const end = await terminate(g);
    expect(end.code).toBe(0);
    expect(end.ms).toBeLessThan(DEADLINE_MS);
    g.child.stdout!.destroy();
  }, 60_000);

  it('a reader that stopped reading, and a request in flight past the deadline: exits 1 at the deadline, not later', async () => {
    const g = await start('stalled-deadline', 'pipe');
    const key = await apiKey(g.url);
    const pathBytes = 4_000;
    await traffic(g.url, Math.ceil((LOG_BUFFER_MAX_BYTES * 7) / 6 / pathBytes), pathBytes);
    sim.latencyMs = 20_000;
    try {
      const slow = fetch(`${g.url}/v1/embeddings`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'text-embedding-3-small', input: 'slow' }),
      }).catch((e: unknown) => e);
      await waitFor(() => sim.received('POST', '/v1/embeddings').length === 1, 'the request to reach the upstream');
      const end = await terminate(g);
      // Cut shortly before the deadline (shutdown.ts), then the exit's log flush gives up at it.
      expect(end.code).toBe(1);
      expect(end.ms).toBeLessThan(DEADLINE_MS + 1_000);
      expect(notices(g.stderr()).join('\n')).toMatch(/writing to standard output at exit failed: EAGAIN/);
      await slow;
    } finally {
      sim.latencyMs = 0;
      g.child.stdout!.destroy();
    }
  }, 60_000);
});

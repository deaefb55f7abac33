import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { onFreePort, PORT_TAKEN, saysReady } from '../helpers/process.js';
import { eventually, fdCount, httpCall } from './client.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const entry = fileURLToPath(new URL('./child-entry.ts', import.meta.url));

export const ADMIN_TOKEN = 'fault-admin-token-0123456789';

export interface ChildGateway {
  url: string;
  pid: number;
  /** Everything the process wrote, for failure messages (a crash prints its stack here). */
  output(): string;
  /** The process still runs and /health answers 200. */
  healthy(): Promise<boolean>;
  fds(): number;
  /** A fresh account with `balance` and an all-access key. */
  newKey(balance: number): Promise<{ key: string; account: string }>;
  balance(account: string): Promise<number>;
  stop(): Promise<void>;
}

let accounts = 0;

/**
 * Starts `gateway serve --config` in a child process on a free loopback port with a temp SQLite
 * store; on another port when another test's server took the first before the gateway listened.
 */
export function startChildGateway(config: Record<string, unknown>, opts: { env?: Record<string, string> } = {}): Promise<ChildGateway> {
  return onFreePort((port) => startOn(port, config, opts));
}

async function startOn(port: number, config: Record<string, unknown>, opts: { env?: Record<string, string> }): Promise<ChildGateway | typeof PORT_TAKEN> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-fault-'));
  const url = `http://127.0.0.1:${port}`;
  const cfg = {
    database: `sqlite:${join(dir, 'gateway.db')}`,
    data_dir: dir,
    log_level: 'warn',
    admin_token: ADMIN_TOKEN,
    secret: 'fault-secret-0123456789abcdef',
    ...config,
    server: { host: '127.0.0.1', port, public_url: url, ...((config.server as object) ?? {}) },
  };
  const file = join(dir, 'gateway.yaml');
  // JSON is YAML.
  writeFileSync(file, JSON.stringify(cfg));
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', entry, 'serve', '--config', file], {
    cwd: root,
    env: { ...process.env, ...(opts.env ?? {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  // After the exit and the end of its output.
  const closed = new Promise<void>((r) => child.once('close', () => r()));
  const running = () => child.exitCode === null && child.signalCode === null;
  const up = await eventually(async () => {
    if (!running()) return true;
    // Whatever answers /health before the gateway says it listens may be another test's server.
    if (!saysReady(out, url)) return false;
    try {
      return (await httpCall(`${url}/health`, { timeoutMs: 1_000 })).status === 200;
    } catch {
      return false;
    }
  }, 30_000);
  if (!up || !running()) {
    child.kill('SIGKILL');
    await closed;
    rmSync(dir, { recursive: true, force: true });
    if (out.includes(PORT_TAKEN)) return PORT_TAKEN;
    throw new Error(`the gateway did not start:\n${out}`);
  }
  const admin = (method: string, path: string, body?: unknown) =>
    httpCall(url + path, { method, body, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  return {
    url,
    pid: child.pid!,
    output: () => out,
    async healthy() {
      if (!running()) return false;
      try {
        return (await httpCall(`${url}/health`, { timeoutMs: 2_000 })).status === 200;
      } catch {
        return false;
      }
    },
    fds: () => fdCount(child.pid!),
    async newKey(balance) {
      const account = `fault-${process.pid}-${++accounts}`;
      const a = await admin('POST', '/admin/accounts', { name: account, balance });
      if (a.status >= 300) throw new Error(`account: ${a.status} ${a.body}`);
      const k = await admin('POST', '/admin/keys', { account });
      if (k.status >= 300) throw new Error(`key: ${k.status} ${k.body}`);
      return { key: k.json.key as string, account };
    },
    async balance(account) {
      const r = await admin('GET', `/admin/accounts/${account}`);
      return r.json.balance_micros ?? r.json.balance;
    },
    async stop() {
      if (running()) {
        child.kill('SIGTERM');
        const gone = await Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5_000))]);
        if (!gone) child.kill('SIGKILL');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

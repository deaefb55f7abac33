import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { spawnForeign, type Child } from './children.js';

/**
 * Other gateways measured beside ours with `--peers`: Portkey's open-source gateway (a Node
 * AI gateway, installed with npm into a scratch directory at bench time, never a dependency of this
 * project) and nginx (the Debian package, when installed). Each one proxies OpenAI-style
 * `POST /v1/embeddings` to the same mock upstream as the floor proxy and the gateway, and runs as
 * one process so /proc describes it alone. A peer that cannot be installed or started is reported
 * as "not run" with the reason; it never fails the run.
 */
export const PORTKEY_VERSION = '1.15.2';
export const NGINX_BIN = '/usr/sbin/nginx';

export interface Peer {
  /** Column title. */
  name: string;
  origin: string;
  pid: number;
  /** Headers each request carries (Portkey takes the provider and upstream from headers). */
  headers: Record<string, string>;
  child: Child<unknown>;
}

export interface PeerStatus {
  name: string;
  peer?: Peer;
  /** Why the peer is not in the run. */
  notRun?: string;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** True once anything answers HTTP on `origin` (any status: the peer is up). */
async function answers(origin: string): Promise<boolean> {
  const res = await request(`${origin}/`, { method: 'GET', headersTimeout: 1_000, bodyTimeout: 1_000 });
  await res.body.dump();
  return true;
}

function run(cmd: string, args: string[], cwd: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd, timeout: timeoutMs, maxBuffer: 16 * 2 ** 20 }, (err, _out, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')}: ${err.message.split('\n')[0]} ${String(stderr).trim().split('\n').slice(-2).join(' ')}`));
      else resolve();
    });
  });
}

/**
 * Portkey 1.15.2 on Node 20 answers every proxied call with a 500 ("TypeError: immutable"): its
 * Node server (@hono/node-server) replaces the global Response with one that keeps the headers object
 * of the Response it is built from, and the headers of a fetch() answer are immutable, so Portkey's
 * own header edits throw. This shim, loaded before Portkey, hands Portkey fetch answers whose
 * headers are a copy. It adds one Response object per call, a small part of Portkey's per-request cost.
 */
const PORTKEY_SHIM = `const NativeResponse = globalThis.Response;
const nativeFetch = globalThis.fetch;
globalThis.fetch = async (...args) => {
  const r = await nativeFetch(...args);
  return new NativeResponse(r.body, r);
};
await import(process.env.PORTKEY_ENTRY);
`;

/**
 * Installs Portkey (once per machine: the scratch directory under the OS temp dir is reused by later
 * runs) and starts it headless on a free port. Requests name the provider and the upstream in headers.
 */
export async function startPortkey(upstream: { url: string; apiKey: string }, logDir: string, log: (l: string) => void): Promise<PeerStatus> {
  const name = `Portkey ${PORTKEY_VERSION}`;
  try {
    const dir = join(tmpdir(), `gw-bench-portkey-${PORTKEY_VERSION}`);
    const entry = join(dir, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js');
    if (!existsSync(entry)) {
      log(`installing @portkey-ai/gateway@${PORTKEY_VERSION} into ${dir}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'bench-portkey', private: true }));
      const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
      await run(npm, ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--no-save', `@portkey-ai/gateway@${PORTKEY_VERSION}`], dir, 240_000);
    }
    writeFileSync(join(dir, 'shim.mjs'), PORTKEY_SHIM);
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const child = await spawnForeign(name, process.execPath, [join(dir, 'shim.mjs'), `--port=${port}`, '--headless'], {
      cwd: dir,
      env: { ...process.env, PORTKEY_ENTRY: entry, NODE_ENV: 'production' },
      logFile: join(logDir, 'portkey.log'),
      ready: () => answers(origin),
    });
    const headers = {
      'x-portkey-provider': 'openai',
      'x-portkey-custom-host': `${upstream.url}/v1`,
      authorization: `Bearer ${upstream.apiKey}`,
      'content-type': 'application/json',
    };
    return { name, peer: { name, origin, pid: child.pid, headers, child } };
  } catch (e) {
    return { name, notRun: (e as Error).message };
  }
}

/**
 * nginx as a reverse proxy with keep-alive to the upstream and buffered access logging, in one
 * process (`master_process off`) with its own prefix directory, so it needs no root and touches no
 * system configuration.
 */
export async function startNginx(upstream: { url: string; apiKey: string }, runDir: string): Promise<PeerStatus> {
  const name = 'nginx';
  if (!existsSync(NGINX_BIN)) return { name, notRun: `${NGINX_BIN} is not installed (Debian package nginx)` };
  try {
    const prefix = join(runDir, 'nginx');
    mkdirSync(join(prefix, 'tmp'), { recursive: true });
    const port = await freePort();
    const up = new URL(upstream.url);
    const conf = [
      'worker_processes 1;',
      'master_process off;',
      'daemon off;',
      `pid ${join(prefix, 'nginx.pid')};`,
      `error_log ${join(prefix, 'error.log')} warn;`,
      'events { worker_connections 4096; }',
      'http {',
      `  access_log ${join(prefix, 'access.log')} combined buffer=64k flush=1s;`,
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${join(prefix, 'tmp', t)};`),
      '  client_max_body_size 10m;',
      `  upstream embeddings { server ${up.host}; keepalive 128; }`,
      '  server {',
      `    listen 127.0.0.1:${port};`,
      '    location / {',
      '      proxy_pass http://embeddings;',
      '      proxy_http_version 1.1;',
      '      proxy_set_header Connection "";',
      '    }',
      '  }',
      '}',
    ].join('\n');
    writeFileSync(join(prefix, 'nginx.conf'), conf);
    const origin = `http://127.0.0.1:${port}`;
    const child = await spawnForeign(name, NGINX_BIN, ['-p', prefix, '-e', join(prefix, 'error.log'), '-c', join(prefix, 'nginx.conf')], {
      cwd: prefix,
      logFile: join(prefix, 'stdout.log'),
      ready: () => answers(origin),
      timeoutMs: 10_000,
    });
    return { name, peer: { name, origin, pid: child.pid, headers: { authorization: `Bearer ${upstream.apiKey}`, 'content-type': 'application/json' }, child } };
  } catch (e) {
    return { name, notRun: (e as Error).message };
  }
}

import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Pool } from 'undici';
import { childOptions, runChild } from './child.js';

/**
 * The floor: the least an HTTP proxy in Node can do. Every request goes to one upstream through a
 * keep-alive undici pool, request and response bodies are piped (never parsed or buffered), and only
 * hop-by-hop headers are dropped. Whatever the gateway spends beyond this is its own work.
 */
export interface FloorProxyOptions {
  upstream: string;
}

export interface FloorProxyInfo {
  url: string;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host']);

function forwardable(h: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const k in h) {
    const v = h[k];
    if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v;
  }
  return out;
}

runChild(async () => {
  const { upstream } = childOptions<FloorProxyOptions>();
  const pool = new Pool(upstream, { connections: 128, pipelining: 1, keepAliveTimeout: 30_000 });
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    pool.stream(
      { path: req.url ?? '/', method: req.method as 'GET', headers: forwardable(req.headers), body: hasBody ? req : null },
      ({ statusCode, headers }) => {
        const out: Record<string, string | string[]> = {};
        for (const k in headers) if (!HOP_BY_HOP.has(k)) out[k] = headers[k] as string | string[];
        res.writeHead(statusCode, out);
        return res;
      },
      (err) => {
        if (!err) return;
        if (!res.headersSent) {
          res.writeHead(502, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: `floor proxy: ${err.message}` } }));
        } else res.destroy();
      },
    );
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const info: FloorProxyInfo = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  return {
    info,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      await pool.destroy();
    },
  };
});

import { request, type IncomingHttpHeaders } from 'node:http';
import { readdirSync } from 'node:fs';

/**
 * Test-side HTTP helpers that leave nothing open: every request uses its own connection and asks
 * for it to be closed, so descriptor counts before and after a case can be compared exactly.
 */

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  json: any;
  /** The connection ended before the announced body was complete. */
  truncated: boolean;
}

export interface CallOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: unknown;
  key?: string;
  /** Gives up (and reports) after this long: a hung gateway must fail the test, not stall it. */
  timeoutMs?: number;
}

export function httpCall(url: string, opts: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { connection: 'close', ...(opts.headers ?? {}) };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  let payload: Buffer | undefined;
  if (opts.body !== undefined) {
    payload = Buffer.from(typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body));
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(payload.length);
  }
  return new Promise((resolve, reject) => {
    const req = request(url, { method: opts.method ?? (payload ? 'POST' : 'GET'), headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let truncated = false;
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('aborted', () => (truncated = true));
      res.on('error', () => (truncated = true));
      res.on('close', () => {
        const body = Buffer.concat(chunks);
        if (!res.complete) truncated = true;
        let json: any;
        try {
          json = JSON.parse(body.toString('utf8'));
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json, truncated });
      });
    });
    req.setTimeout(opts.timeoutMs ?? 15_000, () => req.destroy(new Error(`no answer from ${url} in time`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** Open file descriptors of a process (sockets included), from /proc. */
export function fdCount(pid: number | 'self' = 'self'): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** Waits until `check` holds (descriptors and sockets close asynchronously), or gives up. */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 5_000): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Starts a request and cuts the connection once `afterBytes` of the answer arrived (0: as soon as
 * the headers did). Resolves with the status and the bytes received before the cut.
 */
export function abortAfter(url: string, opts: CallOptions & { afterBytes: number }): Promise<{ status: number; received: number }> {
  const headers: Record<string, string> = { connection: 'close', ...(opts.headers ?? {}) };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  const payload = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
  if (payload) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(payload.length);
  }
  return new Promise((resolve, reject) => {
    const req = request(url, { method: payload ? 'POST' : 'GET', headers, agent: false }, (res) => {
      let received = 0;
      const cut = () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, received });
      };
      if (opts.afterBytes === 0) return cut();
      res.on('data', (c: Buffer) => {
        received += c.length;
        if (received >= opts.afterBytes) cut();
      });
      res.on('error', () => undefined);
      res.on('end', () => reject(new Error(`the answer ended after ${received} bytes, before the cut`)));
    });
    req.on('error', () => undefined);
    req.setTimeout(opts.timeoutMs ?? 15_000, () => {
      req.destroy();
      reject(new Error('no answer in time'));
    });
    req.end(payload);
  });
}

/** Opens a raw connection, writes `chunks` (with pauses), and returns everything read until the server closes it. */
export async function rawExchange(port: number, chunks: string[], pauseMs = 0, maxMs = 15_000): Promise<{ text: string; closedAfterMs: number }> {
  const { connect } = await import('node:net');
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for ${maxMs} ms`));
    }, maxMs);
    socket.on('data', (c) => (text += c.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closedAfterMs: Date.now() - started });
    });
    socket.on('connect', async () => {
      for (const c of chunks) {
        if (socket.destroyed) return;
        socket.write(c);
        if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
      }
    });
  });
}

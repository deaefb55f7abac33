import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { listenOutsideEphemeral } from '../helpers/ports.js';

/**
 * A programmable fault upstream: a loopback HTTP server that passes requests on to a real vendor
 * simulator, except on the paths a test has given a fault. Every answer asks for its connection to
 * be closed, so `openConnections` going back to 0 proves the gateway released every socket.
 */
export type Fault =
  /** The connection is reset (RST) before any answer. */
  | { kind: 'reset-before-headers' }
  /** The real answer's headers and first `after` bytes, then a reset. */
  | { kind: 'reset-mid-body'; after: number }
  /** The real answer's headers (its full Content-Length) and `send` bytes, then a clean close. */
  | { kind: 'short-body'; send: number }
  /** The real answer's headers and first `after` bytes, then silence (`ignoreRange`: as a server that ignores Range). */
  | { kind: 'stall'; after: number; ignoreRange?: boolean }
  /** Accepts the request and never answers. */
  | { kind: 'stall-headers' }
  /** The real answer, one byte every `everyMs`. */
  | { kind: 'trickle'; everyMs: number }
  /** 302 to itself, forever. */
  | { kind: 'redirect-loop' }
  /** An answer of its own: any status, content type and body (malformed JSON or SSE, 404, 410 ...). */
  | { kind: 'answer'; status: number; contentType?: string; body: string | Buffer };

export class FaultUpstream {
  private readonly rules: { path: RegExp; fault: Fault }[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly stalled = new Set<ServerResponse>();
  /** Requests that matched a fault, by kind. */
  readonly hits: Record<string, number> = {};
  /** Every request received (method and path). */
  readonly received: string[] = [];
  private port = 0;

  private constructor(
    private server: Server,
    private readonly target: string,
  ) {}

  static async start(target: string): Promise<FaultUpstream> {
    const up = new FaultUpstream(createServer(), target);
    await up.listen(0);
    return up;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Connections from the gateway that are still open. */
  get openConnections(): number {
    return this.sockets.size;
  }

  /** Gives requests whose path matches `path` this fault (the latest rule for a path wins). */
  set(path: RegExp, fault: Fault): void {
    this.rules.unshift({ path, fault });
  }

  clear(): void {
    this.rules.length = 0;
    for (const res of this.stalled) res.destroy();
    this.stalled.clear();
  }

  /** Stops listening: connections are refused (ECONNREFUSED) until `accept()`. */
  async refuse(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  async accept(): Promise<void> {
    this.server = createServer();
    await this.listen(this.port);
  }

  async close(): Promise<void> {
    this.clear();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  /** On `port`, or first (port 0) on one no other test's server can take while it refuses (helpers/ports.ts). */
  private async listen(port: number): Promise<void> {
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => undefined);
    });
    this.server.on('request', (req, res) => this.handle(req, res));
    if (port === 0) this.port = await listenOutsideEphemeral(this.server);
    else await new Promise<void>((r) => this.server.listen(port, '127.0.0.1', () => r()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    req.on('error', () => undefined);
    res.on('error', () => undefined);
    res.shouldKeepAlive = false;
    const path = (req.url ?? '/').split('?')[0]!;
    this.received.push(`${req.method} ${path}`);
    const fault = this.rules.find((r) => r.path.test(path))?.fault;
    if (fault) this.hits[fault.kind] = (this.hits[fault.kind] ?? 0) + 1;
    switch (fault?.kind) {
      case 'reset-before-headers':
        req.socket.resetAndDestroy();
        return;
      case 'stall-headers':
        this.stalled.add(res);
        return;
      case 'redirect-loop':
        res.writeHead(302, { location: req.url ?? '/', 'content-length': '0' });
        res.end();
        return;
      case 'answer':
        res.writeHead(fault.status, { 'content-type': fault.contentType ?? 'application/json' });
        res.end(fault.body);
        return;
    }
    this.forward(req, res, fault);
  }

  /** Passes the request to the simulator and its answer back, bent by `fault`. */
  private forward(req: IncomingMessage, res: ServerResponse, fault: Fault | undefined): void {
    const headers = { ...req.headers, host: new URL(this.target).host, connection: 'close' };
    if (fault?.kind === 'stall' && fault.ignoreRange) delete headers.range;
    const out = request(this.target + (req.url ?? '/'), { method: req.method, headers, agent: false }, (answer) => {
      answer.on('error', () => undefined);
      const h = { ...answer.headers, connection: 'close' };
      res.writeHead(answer.statusCode ?? 502, h);
      let sent = 0;
      const limit = fault?.kind === 'reset-mid-body' || fault?.kind === 'stall' ? fault.after : fault?.kind === 'short-body' ? fault.send : Infinity;
      const trickle: Buffer[] = [];
      answer.on('data', (c: Buffer) => {
        if (fault?.kind === 'trickle') {
          trickle.push(c);
          return;
        }
        if (sent >= limit) return;
        const part = c.subarray(0, limit - sent);
        sent += part.length;
        res.write(part);
        if (sent < limit) return;
        answer.destroy();
        if (fault?.kind === 'reset-mid-body') setTimeout(() => res.socket?.resetAndDestroy(), 20);
        else if (fault?.kind === 'short-body') setTimeout(() => res.socket?.end(), 20);
        else this.stalled.add(res);
      });
      answer.on('end', () => {
        if (fault?.kind === 'trickle') return this.dribble(Buffer.concat(trickle), res, fault.everyMs);
        if (sent < limit || limit === Infinity) res.end();
      });
    });
    out.on('error', () => res.destroy());
    // The gateway hung up: pass that on, so the simulator sees its client leave too.
    res.on('close', () => out.destroy());
    req.pipe(out);
  }

  private dribble(bytes: Buffer, res: ServerResponse, everyMs: number): void {
    let i = 0;
    const timer = setInterval(() => {
      if (res.destroyed || i >= bytes.length) {
        clearInterval(timer);
        if (!res.destroyed) res.end();
        return;
      }
      res.write(bytes.subarray(i, i + 1));
      i += 1;
    }, everyMs);
  }
}

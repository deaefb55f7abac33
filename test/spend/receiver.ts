import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

/**
 * A webhook receiver on loopback: records every request and answers with the next queued status
 * (200 once the queue is empty), optionally after a delay or never.
 */
export class Receiver {
  readonly log: Received[] = [];
  statuses: number[] = [];
  delayMs = 0;
  hang = false;
  /** How many of the next requests get a status line and half a body, then a TCP reset. */
  resets = 0;
  /** Requests cut off by a reset. */
  resetCount = 0;
  private constructor(private readonly server: Server, readonly url: string) {}

  static async start(): Promise<Receiver> {
    let self!: Receiver;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('error', () => res.destroy());
      req.on('end', () => {
        if (self.hang) return;
        if (self.resets > 0) {
          self.resets--;
          self.resetCount++;
          // Mid-response: the head and part of the body are on the wire, then the connection is reset.
          res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100' });
          res.write('partial');
          setTimeout(() => req.socket.resetAndDestroy(), 10);
          return;
        }
        const status = self.statuses.shift() ?? 200;
        self.log.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), status });
        setTimeout(() => res.writeHead(status, { 'content-type': 'text/plain' }).end('ok'), self.delayMs);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    self = new Receiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
    return self;
  }

  /** Requests answered 2xx. */
  accepted(): Received[] {
    return this.log.filter((r) => r.status >= 200 && r.status < 300);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

export async function until(check: () => boolean | Promise<boolean>, maxMs = 10_000): Promise<void> {
  const end = Date.now() + maxMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Readable } from 'node:stream';
import type { BodyBudget } from '../http/body-budget.js';
import { guard } from '../http/streams.js';
import type { TaskBook } from './tasks.js';
import { answerFault, type Fault } from './faults.js';
import { send } from './reply.js';

export { echoOfCredentials, hexWithColons, type EchoFault, type Fault } from './faults.js';

/** A request as a simulator received it: kept so tests can assert what the upstream actually got. */
export interface SimRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  raw: Buffer;
  /** Parsed JSON body, when it was JSON. */
  json: any;
  at: number;
}

export interface SimReply {
  status?: number;
  headers?: Record<string, string>;
  /** Serialised as JSON. */
  json?: unknown;
  /** Sent as it is (a stream is piped with backpressure). */
  body?: Buffer | string | Readable;
}

interface QueuedFault {
  fault: Fault;
  remaining: number;
  match?: RegExp;
  method?: string;
}

export type SimHandler = (req: SimRequest, sim: SimServer) => SimReply | Promise<SimReply>;

/**
 * A real HTTP server on loopback that speaks one vendor's protocol. Knobs: fixed latency, queued
 * faults (status, timeout, reset, malformed body, latency, held open), and a log of every request received.
 */
export class SimServer {
  readonly requests: SimRequest[] = [];
  /** Latency added to every answer. */
  latencyMs = 0;
  /** Free-form per-simulator settings (e.g. how long a task takes). */
  readonly settings: Record<string, any> = {};
  private faults: QueuedFault[] = [];
  private readonly sockets = new Set<Socket>();
  private url_ = '';
  /** Set to false to stop recording requests (long benchmarks). */
  record = true;
  /**
   * The embedded default runs its simulators in the gateway's process: there, large answers wait for
   * room in the gateway's answer budget before they are built into a reply, so the simulators' copies
   * are bounded too (and answer 503 when none comes in time).
   */
  memory?: BodyBudget;
  /** The simulator's tasks, for a video simulator (what tests read of its bounds). */
  tasks?: TaskBook;

  private constructor(
    readonly name: string,
    private readonly server: Server,
  ) {}

  static async start(
    name: string,
    handler: SimHandler,
    opts: { port?: number; host?: string; settings?: Record<string, any> } = {},
  ): Promise<SimServer> {
    const server = createServer();
    const sim = new SimServer(name, server);
    Object.assign(sim.settings, opts.settings ?? {});
    server.keepAliveTimeout = 60_000;
    server.on('connection', (s) => {
      sim.sockets.add(s);
      s.on('close', () => sim.sockets.delete(s));
    });
    server.on('request', (req, res) => {
      // A client that resets mid-upload or mid-download fails these streams; the handler sees it.
      guard(req);
      guard(res);
      sim.handle(req, res, handler).catch((e: unknown) => {
        if (res.destroyed) return;
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: `simulator error: ${String(e)}` } }));
        } else res.destroy();
      });
    });
    const host = opts.host ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 0, host, () => resolve());
    });
    const addr = server.address() as AddressInfo;
    sim.url_ = `http://${host}:${addr.port}`;
    return sim;
  }

  /** Origin like http://127.0.0.1:PORT (no trailing slash). */
  get url(): string {
    return this.url_;
  }

  /** Queues a fault for the next `count` requests whose path matches `match` (all when omitted), of `method` if given. */
  inject(fault: Fault, count = 1, match?: RegExp, method?: string): void {
    this.faults.push({ fault, remaining: count, match, method });
  }

  clearFaults(): void {
    this.faults = [];
  }

  reset(): void {
    this.requests.length = 0;
    this.faults = [];
    this.latencyMs = 0;
  }

  /** Requests whose method and path match. */
  received(method: string, path: RegExp | string): SimRequest[] {
    return this.requests.filter(
      (r) => r.method === method && (typeof path === 'string' ? r.path === path : path.test(r.path)),
    );
  }

  lastReceived(method: string, path: RegExp | string): SimRequest | undefined {
    const all = this.received(method, path);
    return all[all.length - 1];
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private takeFault(method: string, path: string): Fault | undefined {
    const i = this.faults.findIndex((f) => (!f.match || f.match.test(path)) && (!f.method || f.method === method));
    if (i < 0) return undefined;
    const q = this.faults[i]!;
    q.remaining -= 1;
    if (q.remaining <= 0) this.faults.splice(i, 1);
    return q.fault;
  }

  private async handle(req: IncomingMessage, res: ServerResponse, handler: SimHandler): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const u = new URL(req.url ?? '/', 'http://sim');
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    let json: any;
    if (raw.length > 0) {
      try {
        json = JSON.parse(raw.toString('utf8'));
      } catch {
        json = undefined;
      }
    }
    const simReq: SimRequest = { method: req.method ?? 'GET', path: u.pathname, query: u.searchParams, headers, raw, json, at: Date.now() };
    if (this.record) this.requests.push(simReq);

    const fault = this.takeFault(req.method ?? 'GET', u.pathname);
    if (this.latencyMs > 0) await sleep(this.latencyMs);
    if (fault && (await answerFault(fault, req, res, simReq))) return;
    const reply = await handler(simReq, this);
    await send(res, reply, this.memory);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Bearer token from an Authorization header, or undefined. */
export function bearer(req: SimRequest): string | undefined {
  const h = req.headers['authorization'];
  const m = h ? /^Bearer\s+(.+)$/i.exec(h) : null;
  return m ? m[1] : undefined;
}

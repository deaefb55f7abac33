import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';

/** How a test answers the vendor's `GET .../content`. */
export type ContentAnswer = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * Sora's protocol from the simulator, except `GET .../content`, which answers as the test says (and
 * sees the gateway's request: its URL, credential and Range). The simulator knows its own key only,
 * so the key the gateway sends may be another (one a hostile vendor would echo).
 */
export class ContentVendor {
  answer: ContentAnswer = () => undefined;
  readonly seen: { url: string; authorization: string | undefined; range: string | undefined }[] = [];
  private constructor(private readonly server: Server, private readonly sim: SimServer, private readonly simKey: string) {}

  static async start(sim: SimServer, simKey: string): Promise<ContentVendor> {
    const v = new ContentVendor(createServer(), sim, simKey);
    v.server.on('request', (req, res) => v.handle(req, res));
    await new Promise<void>((r) => v.server.listen(0, '127.0.0.1', () => r()));
    return v;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    res.on('error', () => undefined);
    if (req.method === 'GET' && /\/content$/.test((req.url ?? '').split('?')[0]!)) {
      this.seen.push({ url: req.url ?? '', authorization: req.headers.authorization, range: req.headers.range });
      return this.answer(req, res);
    }
    const headers = { ...req.headers, host: new URL(this.sim.url).host, authorization: `Bearer ${this.simKey}` };
    const out = request(this.sim.url + (req.url ?? '/'), { method: req.method, headers, agent: false }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  }
}

/** A gateway whose one Sora upstream is a ContentVendor, a funded key, and one completed job to download. */
export interface ContentSetup {
  sim: SimServer;
  vendor: ContentVendor;
  gw: TestGateway;
  key: string;
  account: string;
  /** The completed job's public id. */
  job: string;
  /** The gateway's log lines (info level). */
  lines: string[];
  close(): Promise<void>;
}

/** `upstreamKey`: the key the gateway is configured with (and sends the vendor); the simulator's own by default. */
export async function completedJobBehindVendor(opts: { upstreamKey?: string } = {}): Promise<ContentSetup> {
  const sim = await sora.simulator.start({ taskMs: 30 });
  const cfg = upstreamsFor([{ module: sora, sim }]);
  const vendor = await ContentVendor.start(sim, String(cfg.upstreams[0]!.api_key));
  cfg.upstreams[0]!.base_url = vendor.url;
  if (opts.upstreamKey) cfg.upstreams[0]!.api_key = opts.upstreamKey;
  const lines: string[] = [];
  const gw = await startTestGateway({ ...cfg, log_level: 'info' }, { logSink: { write: (line: string) => lines.push(line) } });
  const { key, account } = await gw.newKey(100);
  const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'a red fox in snow' } });
  expect(created.status, created.text).toBe(200);
  const done = await pollUntilDone(gw, key, created.json.id);
  expect(done.status).toBe('completed');
  return {
    sim, vendor, gw, key, account, job: done.id as string, lines,
    async close() {
      await gw.close();
      await vendor.close();
      await sim.close();
    },
  };
}

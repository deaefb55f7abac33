import { connect, createServer, type Server, type Socket } from 'node:net';
import { listenOutsideEphemeral } from './ports.js';

/**
 * A TCP relay in front of a local service (PostgreSQL, Redis) that a test can cut and bring back
 * on the same port: an outage of the service as its clients see it, without touching the shared
 * server itself.
 */
export class TcpRelay {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  private readonly pairs = new Set<{ client: Socket; upstream: Socket }>();
  port = 0;
  private stalled = false;
  /** Redis commands named `PING` the clients have sent through the relay (the probe's traffic). */
  pingsSent = 0;

  constructor(private readonly targetPort: number, private readonly targetHost = '127.0.0.1') {}

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost);
      this.sockets.add(client).add(upstream);
      client.pipe(upstream);
      if (!this.stalled) upstream.pipe(client);
      client.on('data', (chunk: Buffer) => {
        this.pingsSent += chunk.toString('latin1').match(/\r\nPING\r\n/gi)?.length ?? 0;
      });
      const pair = { client, upstream };
      this.pairs.add(pair);
      const drop = () => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
    });
    if (this.port === 0) {
      // A port no other test's server can take while this relay is stopped (helpers/ports.ts).
      this.port = await listenOutsideEphemeral(server);
    } else {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(this.port, '127.0.0.1', () => resolve());
      });
    }
    this.server = server;
  }

  /**
   * Stops passing the service's answers on (a hung service): requests time out, connections stay up.
   * With `newConnectionsToo`, connections opened meanwhile get no answer either (a stopped process).
   */
  stall({ newConnectionsToo = false } = {}): void {
    this.stalled = newConnectionsToo;
    for (const p of this.pairs) p.upstream.unpipe(p.client);
  }

  resume(): void {
    this.stalled = false;
    for (const p of this.pairs) p.upstream.pipe(p.client);
  }

  /** Closes the listener and every relayed connection: the service is gone until `start()`. */
  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_PIPELINED_REQUESTS } from '../../src/http/connection-requests.js';
import { InflightList, type InflightNode } from '../../src/http/inflight-list.js';
import { installRequestLifecycle } from '../../src/http/lifecycle.js';

/**
 * Pipelined requests queued behind an answer that is not written yet: Node emits no response
 * 'close' for them when their connection dies, so each must be ended by the connection's close,
 * not left in flight until its deadline; and a connection may not queue more than
 * MAX_PIPELINED_REQUESTS of them.
 */
const apps: FastifyInstance[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  while (apps.length) await apps.pop()!.close();
});

/** A gateway-like app: a minute's deadline, a route that answers only once aborted, and a fast one. */
async function listen(): Promise<{ port: number; abandoned: () => number; blocked: () => number }> {
  const app = Fastify();
  apps.push(app);
  let abandoned = 0;
  let blocked = 0;
  installRequestLifecycle(app, 60_000, () => abandoned++);
  app.get('/block', async (req) => {
    blocked++;
    await new Promise<void>((r) => req.abortSignal.addEventListener('abort', () => r()));
    return { aborted: true };
  });
  app.get('/fast', async () => ({ ok: true }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { port: (app.server.address() as AddressInfo).port, abandoned: () => abandoned, blocked: () => blocked };
}

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
    sockets.push(s);
  });
}

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;

const until = async (check: () => boolean, ms = 2_000): Promise<void> => {
  for (const end = Date.now() + ms; !check() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 10));
};

describe('pipelined requests on one connection', () => {
  it('are all ended at once when the connection closes, not left in flight until their deadline', async () => {
    const gw = await listen();
    const s = await open(gw.port);
    // The first holds the connection's answer slot; the 20 behind it are queued.
    s.write(get('/block') + get('/fast').repeat(20));
    await until(() => gw.blocked() === 1);
    s.destroy();
    await until(() => gw.abandoned() === 21);
    expect(gw.abandoned()).toBe(21);
  });

  it(`close a connection that queues more than ${MAX_PIPELINED_REQUESTS} requests unanswered`, async () => {
    const gw = await listen();
    const s = await open(gw.port);
    const closed = new Promise<void>((r) => s.once('close', () => r()));
    s.on('error', () => {});
    s.write(get('/block') + get('/fast').repeat(MAX_PIPELINED_REQUESTS + 10));
    const byServer = await Promise.race([closed.then(() => true), new Promise((r) => setTimeout(() => r(false), 2_000))]);
    expect(byServer).toBe(true);
    await until(() => gw.abandoned() >= MAX_PIPELINED_REQUESTS + 1);
    expect(gw.abandoned()).toBeGreaterThan(MAX_PIPELINED_REQUESTS);
  });

  it(`leave a connection with up to ${MAX_PIPELINED_REQUESTS} requests queued open, and answer them all`, async () => {
    const gw = await listen();
    const s = await open(gw.port);
    let text = '';
    s.setEncoding('utf8');
    s.on('data', (d: string) => (text += d));
    s.write(get('/fast').repeat(MAX_PIPELINED_REQUESTS));
    await until(() => text.split('HTTP/1.1 200').length - 1 === MAX_PIPELINED_REQUESTS);
    expect(text.split('HTTP/1.1 200').length - 1).toBe(MAX_PIPELINED_REQUESTS);
    expect(s.destroyed).toBe(false);
  });
});

describe('InflightList.forEach', () => {
  class Node implements InflightNode<Node> {
    prevInflight: Node | undefined;
    nextInflight: Node | undefined;
    inList: object | undefined;
    constructor(readonly id: number) {}
  }

  it('visits every node once while the walk deletes the current node, the next one, or both', () => {
    const list = new InflightList<Node>();
    const nodes = Array.from({ length: 10 }, (_, i) => new Node(i));
    for (const n of nodes) list.add(n);
    const seen: number[] = [];
    list.forEach((n) => {
      seen.push(n.id);
      // Node 2 takes node 3 with it; node 5 takes itself and node 6; the others stay.
      if (n.id === 2) list.delete(nodes[3]);
      if (n.id === 5) {
        list.delete(n);
        list.delete(nodes[6]);
      }
    });
    expect(seen).toEqual([0, 1, 2, 4, 5, 7, 8, 9]);
    const cut: number[] = [];
    list.forEach((n) => {
      cut.push(n.id);
      list.delete(n);
    });
    expect(cut).toEqual([0, 1, 2, 4, 7, 8, 9]);
    expect(list.size).toBe(0);
  });
});

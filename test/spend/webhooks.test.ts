import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';
import { PG_URL } from '../store/harness.js';
import { Receiver, until } from './receiver.js';

/**
 * Standard Webhooks delivery: signatures that two verifiers nobody here wrote accept, retries until
 * the receiver takes the event (once), one delivery per event with two instances, and the SSRF guard.
 */
let sim: SimServer;
let receiver: Receiver;
const fast = { allow_private_networks: true, interval_ms: 20, retry_base_ms: 100, timeout_ms: 1_000 };
const admin = (gw: TestGateway) => ({ authorization: `Bearer ${gw.adminToken}` });

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 50 });
  receiver = await Receiver.start();
});
afterAll(async () => {
  await sim?.close();
  await receiver?.close();
});

async function register(gw: TestGateway, account: string, url = receiver.url, events?: string[]) {
  const r = await call(gw, 'POST', '/admin/webhooks', { headers: admin(gw), body: { account, url, ...(events ? { events } : {}) } });
  expect(r.status, r.text).toBe(201);
  return r.json as { id: string; secret: string };
}

async function finishedVideo(gw: TestGateway, key: string, prompt = 'a webhook test', extra: Record<string, unknown> = {}) {
  const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt, ...extra } });
  expect(created.status, created.text).toBe(200);
  return pollUntilDone(gw, key, created.json.id);
}

describe('webhook delivery (SQLite)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ ...upstreamsFor([{ module: sora, sim }]), webhooks: fast });
    gw.services.webhooks.dispatcher.start();
  });
  afterAll(async () => gw?.close());

  it('signs video.completed so the standardwebhooks verifier and openai client.webhooks.unwrap() accept it', async () => {
    receiver.log.length = 0;
    const { key, account } = await gw.newKey(10);
    const endpoint = await register(gw, account);
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/);
    // Shown once: never listed again.
    const listed = await call(gw, 'GET', `/admin/webhooks?account=${account}`, { headers: admin(gw) });
    expect(listed.json.data[0].id).toBe(endpoint.id);
    expect(JSON.stringify(listed.json)).not.toContain(endpoint.secret);

    const done = await finishedVideo(gw, key);
    expect(done.status).toBe('completed');
    await until(() => receiver.accepted().length === 1);
    const got = receiver.accepted()[0]!;
    const headers = {
      'webhook-id': String(got.headers['webhook-id']),
      'webhook-timestamp': String(got.headers['webhook-timestamp']),
      'webhook-signature': String(got.headers['webhook-signature']),
    };
    const event = new Webhook(endpoint.secret).verify(got.body, headers) as Record<string, unknown>;
    expect(event).toMatchObject({ object: 'event', type: 'video.completed', data: { id: done.id } });
    expect(String(event.id)).toMatch(/^evt_/);
    expect(typeof event.created_at).toBe('number');
    const client = new OpenAI({ apiKey: 'unused', webhookSecret: endpoint.secret });
    expect(await client.webhooks.unwrap(got.body, headers)).toEqual(event);
    // A tampered body or another secret is refused by both.
    expect(() => new Webhook(endpoint.secret).verify(got.body.replace('completed', 'failed'), headers)).toThrow();
    await expect(client.webhooks.unwrap(got.body, headers, `whsec_${randomBytes(32).toString('base64')}`)).rejects.toThrow();
  });

  it('a receiver failing twice gets the event exactly once after retries; the delivery log shows every attempt', async () => {
    receiver.log.length = 0;
    receiver.statuses = [500, 503];
    const { key, account } = await gw.newKey(10);
    const endpoint = await register(gw, account);
    await finishedVideo(gw, key);
    await until(() => receiver.accepted().length === 1);
    await new Promise((r) => setTimeout(r, 300)); // nothing more arrives
    expect(receiver.log.map((r) => r.status)).toEqual([500, 503, 200]);
    expect(new Set(receiver.log.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(receiver.accepted()).toHaveLength(1);
    const log = await call(gw, 'GET', `/admin/webhooks/${endpoint.id}/deliveries`, { headers: admin(gw) });
    expect(log.json.data).toHaveLength(1);
    expect(log.json.data[0]).toMatchObject({ type: 'video.completed', state: 'delivered', attempts: 3 });
    expect(log.json.attempts.map((a: { attempt: number; status: number }) => [a.attempt, a.status])).toEqual([
      [3, 200],
      [2, 503],
      [1, 500],
    ]);
    for (const a of log.json.attempts) expect(typeof a.latency_ms).toBe('number');
  });

  it('a receiver that never answers is cut off at the attempt timeout and retried', async () => {
    receiver.log.length = 0;
    const { key, account } = await gw.newKey(10);
    const endpoint = await register(gw, account);
    receiver.hang = true;
    await finishedVideo(gw, key);
    await until(async () => {
      const log = await call(gw, 'GET', `/admin/webhooks/${endpoint.id}/deliveries`, { headers: admin(gw) });
      return log.json.attempts.length >= 1;
    });
    receiver.hang = false;
    await until(() => receiver.accepted().length === 1, 15_000);
    // The receiver has the event before the gateway has read its 2xx and recorded the delivery.
    const deliveries = () => call(gw, 'GET', `/admin/webhooks/${endpoint.id}/deliveries`, { headers: admin(gw) });
    await until(async () => (await deliveries()).json.data[0]?.state !== 'pending');
    const log = await deliveries();
    const first = log.json.attempts.at(-1);
    expect(first).toMatchObject({ attempt: 1, status: null, error: 'no answer within 1000 ms' });
    expect(log.json.data[0].state).toBe('delivered');
  });

  it('sends video.failed to subscribers of it only, and to the per-job target gateway_webhook_url', async () => {
    receiver.log.length = 0;
    const { key, account } = await gw.newKey(10);
    const other = await Receiver.start();
    try {
      await register(gw, account, receiver.url, ['video.completed']);
      const failed = await finishedVideo(gw, key, 'please [fail]', { gateway_webhook_url: other.url });
      expect(failed.status).toBe('failed');
      await until(() => other.accepted().length === 1);
      expect(JSON.parse(other.accepted()[0]!.body)).toMatchObject({ type: 'video.failed', data: { id: failed.id } });
      await new Promise((r) => setTimeout(r, 200));
      expect(receiver.log).toHaveLength(0);
    } finally {
      await other.close();
    }
  });

  it('refuses bad endpoint registrations in the error shape and writes nothing', async () => {
    const { account } = await gw.newKey(10);
    for (const body of [
      { account, url: 'ftp://example.com/x' },
      { account, url: 'not a url' },
      { account, url: 'https://user:pw@example.com/' },
      { account, url: receiver.url, events: ['video.exploded'] },
      { account, url: receiver.url, extra: 1 },
    ]) {
      const r = await call(gw, 'POST', '/admin/webhooks', { headers: admin(gw), body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.error.type).toBe('invalid_request_error');
    }
    expect((await call(gw, 'POST', '/admin/webhooks', { headers: admin(gw), body: { account: 'nobody', url: receiver.url } })).status).toBe(404);
    expect((await call(gw, 'GET', `/admin/webhooks?account=${account}`, { headers: admin(gw) })).json.data).toEqual([]);
  });
});

describe('SSRF guard on webhook targets', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ ...upstreamsFor([{ module: sora, sim }]), webhooks: { ...fast, allow_private_networks: false } });
  });
  afterAll(async () => gw?.close());

  it('refuses a receiver at a private or loopback address, by literal or by name', async () => {
    const { key, account } = await gw.newKey(10);
    for (const url of [receiver.url, 'http://10.1.2.3/hook', 'http://[::1]:8080/hook', 'http://localhost:9/hook', 'http://169.254.169.254/latest']) {
      const r = await call(gw, 'POST', '/admin/webhooks', { headers: admin(gw), body: { account, url } });
      expect(r.status, url).toBe(400);
      expect(r.json.error).toMatchObject({ code: 'invalid_webhook_url', param: 'url' });
    }
    const before = await gw.balance(account);
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'x', gateway_webhook_url: 'http://192.168.1.1/h' } });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'invalid_webhook_url', param: 'gateway_webhook_url' });
    expect(await gw.balance(account)).toBe(before);
  });
});

describe('two instances on PostgreSQL', () => {
  const schema = `gw_hooks_${randomBytes(4).toString('hex')}`;
  let a: TestGateway;
  let b: TestGateway;
  beforeAll(async () => {
    // A long attempt timeout: an attempt that timed out on a busy machine would be sent again, and
    // the receiver would count a second delivery that no second instance made.
    const shared = { ...upstreamsFor([{ module: sora, sim }]), database: `${PG_URL}?schema=${schema}`, webhooks: { ...fast, interval_ms: 10, timeout_ms: 10_000 } };
    a = await startTestGateway(shared);
    b = await startTestGateway(shared);
    a.services.webhooks.dispatcher.start();
    b.services.webhooks.dispatcher.start();
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  });

  it('deliver each event once', async () => {
    receiver.log.length = 0;
    receiver.delayMs = 100; // a slow receiver widens any window in which both could send
    const { key, account } = await a.newKey(100);
    await register(a, account);
    const jobs = await Promise.all(Array.from({ length: 6 }, (_, i) => finishedVideo(i % 2 ? a : b, key, `clip ${i}`)));
    await until(() => receiver.log.length >= 6);
    await new Promise((r) => setTimeout(r, 500));
    receiver.delayMs = 0;
    expect(receiver.log).toHaveLength(6);
    const ids = receiver.log.map((r) => JSON.parse(r.body).data.id).sort();
    expect(ids).toEqual(jobs.map((j) => j.id).sort());
    expect(new Set(receiver.log.map((r) => r.headers['webhook-id'])).size).toBe(6);
  });
});

describe('gateway webhooks (CLI)', () => {
  it('adds an endpoint (secret on the last line, once), lists, disables and reads its log', async () => {
    const { writeFileSync, mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { vi } = await import('vitest');
    const { main } = await import('../../src/main.js');
    const dir = mkdtempSync(join(tmpdir(), 'gw-hooks-cli-'));
    const cfg = join(dir, 'gw.yaml');
    writeFileSync(cfg, `database: sqlite:${join(dir, 'gw.db')}\ndata_dir: ${dir}\nwebhooks:\n  allow_private_networks: false\n`);
    const cli = async (...argv: string[]) => {
      let out = '';
      const o = vi.spyOn(process.stdout, 'write').mockImplementation((c) => ((out += String(c)), true));
      const e = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
      try {
        return { code: await main(argv), out };
      } finally {
        o.mockRestore();
        e.mockRestore();
      }
    };
    try {
      expect((await cli('accounts', 'create', 'hooks', '--config', cfg)).code).toBe(0);
      expect((await cli('webhooks', 'add', '--account', 'hooks', '--url', 'http://127.0.0.1:9/x', '--config', cfg)).code).not.toBe(0);
      const added = await cli('webhooks', 'add', '--account', 'hooks', '--url', 'https://93.184.215.14/hook', '--events', 'video.completed', '--config', cfg);
      expect(added.code).toBe(0);
      const lines = added.out.trim().split('\n');
      expect(lines.at(-1)).toMatch(/^whsec_/);
      const id = JSON.parse(lines.slice(0, -1).join('\n')).id;
      const listed = await cli('webhooks', 'list', '--account', 'hooks', '--config', cfg);
      expect(JSON.parse(listed.out)[0]).toMatchObject({ id, events: ['video.completed'], disabled_at: null });
      expect(listed.out).not.toContain('whsec_');
      expect(JSON.parse((await cli('webhooks', 'disable', id, '--config', cfg)).out).disabled_at).not.toBeNull();
      expect(JSON.parse((await cli('webhooks', 'deliveries', id, '--config', cfg)).out)).toEqual({ data: [], attempts: [] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

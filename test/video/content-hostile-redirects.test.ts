import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4 } from '../../src/sim/media.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { videoModule as wan } from '../../src/video/vendors/wan/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { download, pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * A vendor that points the gateway's video download at the gateway's own network: by redirecting its
 * content answer, or by answering with such a download URL. The gateway runs with the production
 * media rules (no private networks, one listed origin); the vendors are simulators on loopback, as
 * in the embedded default, and are reached because their base URLs are the operator's choice.
 */

/** A server standing for something internal (an admin endpoint, a metadata service): it must never be reached. */
interface Target {
  server: Server;
  port: number;
  hits: string[];
}

async function startTarget(body: Buffer | string, type = 'video/mp4'): Promise<Target> {
  const t: Target = { server: createServer(), port: 0, hits: [] };
  t.server.on('request', (req, res) => {
    t.hits.push(`${req.method} ${req.url}`);
    res.writeHead(200, { 'content-type': type, 'content-length': String(Buffer.byteLength(body)) });
    res.end(body);
  });
  await new Promise<void>((r) => t.server.listen(0, '127.0.0.1', () => r()));
  t.port = (t.server.address() as AddressInfo).port;
  return t;
}

async function stopTarget(t: Target | undefined): Promise<void> {
  if (!t) return;
  t.server.closeAllConnections();
  await new Promise<void>((r) => t.server.close(() => r()));
}

const SECRET = 'internal-admin-secret-do-not-serve';
const SIGNATURE = 'sig-0123456789abcdef-never-logged';

let soraSim: SimServer;
let wanSim: SimServer;
let internal: Target;
let cdn: Target;
/** A listed origin whose "thumbnail" is an SVG document with a script in it. */
let svgHost: Target;
const SVG = '<svg xmlns="http://www.w3.org/2000/svg"><script>fetch("/console/api/keys")</script></svg>';
let gw: TestGateway;
let key: string;
let account: string;
let soraJob: string;
const lines: string[] = [];

beforeAll(async () => {
  internal = await startTarget(SECRET);
  // A loopback "CDN" the operator listed in video.media.allowed_origins.
  cdn = await startTarget(sampleMp4());
  svgHost = await startTarget(SVG, 'image/svg+xml');
  soraSim = await sora.simulator.start({ taskMs: 30 });
  wanSim = await wan.simulator.start({ taskMs: 30 });
  gw = await startTestGateway(
    {
      ...upstreamsFor([
        { module: sora, sim: soraSim },
        { module: wan, sim: wanSim },
      ]),
      log_level: 'info',
      video: { media: { allow_private_networks: false, allowed_origins: [`http://127.0.0.1:${cdn.port}`, `http://127.0.0.1:${svgHost.port}`] } },
    },
    { logSink: { write: (line: string) => lines.push(line) } },
  );
  ({ key, account } = await gw.newKey(100));
  const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'a red fox in snow' } });
  expect(created.status, created.text).toBe(200);
  const done = await pollUntilDone(gw, key, created.json.id);
  expect(done.status).toBe('completed');
  soraJob = done.id;
}, 30_000);

afterAll(async () => {
  await gw?.close();
  await Promise.all([soraSim?.close(), wanSim?.close(), stopTarget(internal), stopTarget(cdn), stopTarget(svgHost)]);
});

beforeEach(() => {
  soraSim.clearFaults();
  wanSim.clearFaults();
  internal.hits.length = 0;
  cdn.hits.length = 0;
  lines.length = 0;
});

const CONTENT = /\/content$/;
const redirectTo = (location: string) => soraSim.inject({ kind: 'status', status: 302, headers: { location }, json: {} }, 1, CONTENT);

function expectRefused(r: { status: number; json: any; text: string }): void {
  expect(r.status, r.text).toBe(502);
  expect(r.json?.error, r.text).toMatchObject({ type: 'server_error', code: 'upstream_error' });
  expect(r.json.error.message).toMatch(/does not fetch from/);
  expect(r.text).not.toContain(SECRET);
}

/** The refusal's log line: present, with the origin, and without the path, the signature or the vendor key. */
function expectLogged(origin: string): void {
  const refused = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'video download: refused a location the vendor gave');
  expect(refused, lines.join('\n')).toHaveLength(1);
  expect(refused[0].refused).toBe(origin);
  const all = lines.join('\n');
  expect(all).not.toContain(SIGNATURE);
  expect(all).not.toContain('/admin/secrets');
  expect(all).not.toContain(soraSim.settings.apiKey);
}

describe('a vendor redirects the video download into the gateway network', () => {
  it('to a loopback address: refused with 502 in the error shape, the internal server is never hit', async () => {
    redirectTo(`http://127.0.0.1:${internal.port}/admin/secrets?signature=${SIGNATURE}`);
    const r = await call(gw, 'GET', `/v1/videos/${soraJob}/content`, { key });
    expectRefused(r);
    expect(internal.hits).toEqual([]);
    expectLogged(`http://127.0.0.1:${internal.port}`);
  });

  it('to an IPv4-mapped IPv6 literal ([::ffff:127.0.0.1]): refused, never hit', async () => {
    redirectTo(`http://[::ffff:127.0.0.1]:${internal.port}/admin/secrets?signature=${SIGNATURE}`);
    const r = await call(gw, 'GET', `/v1/videos/${soraJob}/content`, { key });
    expectRefused(r);
    expect(internal.hits).toEqual([]);
    // The URL parser writes the mapped address in its hex form.
    expectLogged(`http://[::ffff:7f00:1]:${internal.port}`);
  });

  it('to a name that resolves to loopback (localhost): refused at connect time, never hit', async () => {
    redirectTo(`http://localhost:${internal.port}/admin/secrets?signature=${SIGNATURE}`);
    const r = await call(gw, 'GET', `/v1/videos/${soraJob}/content`, { key });
    expectRefused(r);
    expect(internal.hits).toEqual([]);
    expectLogged(`http://localhost:${internal.port}`);
  });

  it('to the cloud metadata address: refused at once, no connection is even tried', async () => {
    redirectTo('http://169.254.169.254/video.mp4');
    const started = Date.now();
    const r = await call(gw, 'GET', `/v1/videos/${soraJob}/content`, { key });
    expectRefused(r);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('to a non-http scheme: refused', async () => {
    redirectTo('file:///etc/passwd');
    expectRefused(await call(gw, 'GET', `/v1/videos/${soraJob}/content`, { key }));
  });

  it('the preview asset (variant=thumbnail) follows the same rules', async () => {
    redirectTo(`http://127.0.0.1:${internal.port}/admin/secrets`);
    const r = await call(gw, 'GET', `/v1/videos/${soraJob}/content?variant=thumbnail`, { key });
    expectRefused(r);
    expect(internal.hits).toEqual([]);
  });
});

describe('what stays allowed', () => {
  it('a redirect within the upstream origin is followed, with the vendor key kept', async () => {
    const first = await download(`${gw.url}/v1/videos/${soraJob}/content`, { authorization: `Bearer ${key}` });
    expect(first.status).toBe(200);
    const path = soraSim.lastReceived('GET', CONTENT)!.path;
    redirectTo(`${path}?again=1`);
    const r = await download(`${gw.url}/v1/videos/${soraJob}/content`, { authorization: `Bearer ${key}` });
    expect(r.status).toBe(200);
    expect(r.bytes.equals(first.bytes)).toBe(true);
    expect(soraSim.lastReceived('GET', CONTENT)!.query.get('again')).toBe('1');
  });

  it('a preview asset that is not a raster image (an SVG, which a browser runs scripts in) is refused, never served from the gateway origin', async () => {
    redirectTo(`http://127.0.0.1:${svgHost.port}/thumb.svg`);
    const r = await call(gw, 'GET', `/v1/videos/${soraJob}/content?variant=thumbnail`, { key });
    expect(r.status, r.text).toBe(502);
    expect(r.json?.error).toMatchObject({ type: 'server_error', code: 'upstream_error' });
    expect(r.text).not.toContain('<script>');
    expect(svgHost.hits).toEqual(['GET /thumb.svg']);
  });

  it('downloads are marked nosniff, so a browser keeps to the declared type', async () => {
    const video = await download(`${gw.url}/v1/videos/${soraJob}/content`, { authorization: `Bearer ${key}` });
    expect(video.status).toBe(200);
    expect(video.headers.get('x-content-type-options')).toBe('nosniff');
    const thumb = await download(`${gw.url}/v1/videos/${soraJob}/content?variant=thumbnail`, { authorization: `Bearer ${key}` });
    expect(thumb.status).toBe(200);
    expect(thumb.headers.get('content-type')).toBe('image/png');
    expect(thumb.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('a redirect to an origin listed in video.media.allowed_origins is followed, without the vendor key', async () => {
    redirectTo(`http://127.0.0.1:${cdn.port}/files/video.mp4?signature=${SIGNATURE}`);
    const r = await download(`${gw.url}/v1/videos/${soraJob}/content`, { authorization: `Bearer ${key}` });
    expect(r.status).toBe(200);
    expect(r.bytes.equals(sampleMp4())).toBe(true);
    expect(cdn.hits).toEqual([`GET /files/video.mp4?signature=${SIGNATURE}`]);
  });
});

describe('wan: the download URL comes from the vendor answer itself', () => {
  async function wanJob(): Promise<string> {
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'wan2.6-t2v', prompt: 'a red fox in snow' } });
    expect(created.status, created.text).toBe(200);
    return created.json.id;
  }

  it('a video_url on the simulator (the upstream origin) downloads as before', async () => {
    const id = await wanJob();
    const done = await pollUntilDone(gw, key, id);
    expect(done.status).toBe('completed');
    const r = await download(`${gw.url}/v1/videos/${id}/content`, { authorization: `Bearer ${key}` });
    expect(r.status).toBe(200);
    expect(r.bytes.length).toBeGreaterThan(0);
  });

  it('a video_url on a loopback address: the job fails when it settles, nothing charged, the internal server is never hit', async () => {
    const before = await gw.balance(account);
    const id = await wanJob();
    await new Promise((r) => setTimeout(r, 60));
    const url = `http://127.0.0.1:${internal.port}/admin/secrets?Signature=${SIGNATURE}`;
    // The next poll answers SUCCEEDED with a download URL inside the gateway's network.
    wanSim.inject(
      { kind: 'status', status: 200, json: { request_id: 'r-1', output: { task_id: 't-1', task_status: 'SUCCEEDED', video_url: url }, usage: { duration: 5 } } },
      1,
      /^\/api\/v1\/tasks\//,
    );
    const done = await pollUntilDone(gw, key, id);
    // No download could ever fetch it (an address literal is refused whatever it resolves to): no video to pay for.
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({ code: 'generation_failed' });
    expect(done.error.message).toMatch(/does not fetch from \(it is a private or local network address\); nothing was charged/);
    expect(JSON.stringify(done)).not.toContain('/admin/secrets');
    expect(await gw.balance(account)).toBe(before);
    const r = await call(gw, 'GET', `/v1/videos/${id}/content`, { key });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('video_not_ready');
    expect(internal.hits).toEqual([]);
    const refused = lines.map((l) => JSON.parse(l)).filter((l) => /never fetches from/.test(l.msg));
    expect(refused, lines.join('\n')).toHaveLength(1);
    expect(refused[0].refused).toBe(`http://127.0.0.1:${internal.port}`);
    expect(lines.join('\n')).not.toContain(SIGNATURE);
  });
});

import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { imageSize } from 'image-size';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { thumbnailBlob } from '../../src/video/thumbnail.js';
import { videoModule as wan } from '../../src/video/vendors/wan/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * Thumbnails the gateway makes with ffmpeg for a vendor that makes none (wan), and every way that
 * can go wrong: ffmpeg missing, failing, hanging, writing too much, too many at once, a client
 * leaving mid-extraction. Fake ffmpeg binaries are small shell scripts that answer `-version`.
 */
let sim: SimServer;
let scripts: string;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  sim = await wan.simulator.start({ taskMs: 150 });
  scripts = mkdtempSync(join(tmpdir(), 'fake-ffmpeg-'));
});
afterAll(async () => {
  for (const gw of gateways) await gw.close();
  await sim?.close();
  rmSync(scripts, { recursive: true, force: true });
});

async function gateway(thumbnails: Record<string, unknown> = {}): Promise<TestGateway> {
  const gw = await startTestGateway({ ...upstreamsFor([{ module: wan, sim }]), video: { thumbnails } });
  gateways.push(gw);
  return gw;
}

/** A fake ffmpeg: answers `-version`, otherwise records its pid in `<name>.pid` and runs `body`. */
function fakeFfmpeg(name: string, body: string): { path: string; pidFile: string } {
  const path = join(scripts, name);
  const pidFile = `${path}.pid`;
  writeFileSync(path, `#!/bin/sh\ncase "$*" in *-version*) echo "ffmpeg version fake"; exit 0;; esac\necho $$ > '${pidFile}'\n${body}\n`);
  chmodSync(path, 0o755);
  return { path, pidFile };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(what: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!what()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A finished wan job (wan makes no thumbnail of its own). */
async function finishedJob(gw: TestGateway): Promise<{ key: string; id: string }> {
  const { key } = await gw.newKey(100);
  const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'wan2.6-t2v', prompt: 'a lighthouse at dusk', seconds: 5 } });
  expect(r.status).toBe(200);
  const done = await pollUntilDone(gw, key, r.json.id);
  expect(done.status).toBe('completed');
  return { key, id: r.json.id };
}

const thumbPath = (id: string) => `/v1/videos/${id}/content?variant=thumbnail`;
const tmpLeft = (gw: TestGateway) => (existsSync(join(gw.dataDir, 'tmp')) ? readdirSync(join(gw.dataDir, 'tmp')) : []);

describe('gateway-made thumbnails (real ffmpeg)', () => {
  it('extracts a JPEG frame of the finished video, caches it, and removes it with the job', async () => {
    const gw = await gateway();
    const { key, id } = await finishedJob(gw);
    const downloads = () => sim.received('GET', /\.mp4$/).length;
    const before = downloads();
    const res = await fetch(`${gw.url}${thumbPath(id)}`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/jpeg');
    const image = Buffer.from(await res.arrayBuffer());
    expect(image.subarray(0, 2).toString('hex')).toBe('ffd8');
    expect(Number(res.headers.get('content-length'))).toBe(image.length);
    const size = imageSize(image);
    expect(size.type).toBe('jpg');
    expect(size.width).toBeGreaterThan(0);
    expect(size.width).toBeLessThanOrEqual(640);
    expect(downloads()).toBe(before + 1);
    expect(tmpLeft(gw)).toEqual([]);
    // The models list says so: wan makes no thumbnail, the gateway does.
    expect((await call(gw, 'GET', '/v1/models/wan2.6-t2v', { key })).json.video.variants).toEqual(['video', 'thumbnail']);

    // Served from the blob store the second time: the vendor is not asked for the video again.
    const blobs = gw.services.video.deps.blobs;
    expect(await blobs.size(thumbnailBlob(gw.services.video.deps.sealer.open(id)!.j))).toBe(image.length);
    const again = await fetch(`${gw.url}${thumbPath(id)}`, { headers: { authorization: `Bearer ${key}` } });
    expect(Buffer.from(await again.arrayBuffer()).equals(image)).toBe(true);
    expect(downloads()).toBe(before + 1);

    // Another account cannot read it; deleting the job removes it.
    const other = await gw.newKey(100);
    expect((await call(gw, 'GET', thumbPath(id), { key: other.key })).status).toBe(404);
    expect((await call(gw, 'DELETE', `/v1/videos/${id}`, { key })).status).toBe(200);
    expect(await blobs.size(thumbnailBlob(gw.services.video.deps.sealer.open(id)!.j))).toBeUndefined();
  });

  it('a job still processing has no thumbnail yet (400 video_not_ready)', async () => {
    const slow = await wan.simulator.start({ taskMs: 60_000 });
    const gw = await startTestGateway(upstreamsFor([{ module: wan, sim: slow }]));
    try {
      const { key } = await gw.newKey(100);
      const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'wan2.6-t2v', prompt: 'x', seconds: 5 } });
      const t = await call(gw, 'GET', thumbPath(r.json.id), { key });
      expect(t.status).toBe(400);
      expect(t.json.error.code).toBe('video_not_ready');
    } finally {
      await gw.close();
      await slow.close();
    }
  });

  it('an image larger than max_output_bytes is refused (500 thumbnail_failed), nothing cached', async () => {
    const gw = await gateway({ max_output_bytes: 64 });
    const { key, id } = await finishedJob(gw);
    const r = await call(gw, 'GET', thumbPath(id), { key });
    expect(r.status).toBe(500);
    expect(r.json.error).toMatchObject({ type: 'server_error', code: 'thumbnail_failed' });
    expect(await gw.services.video.deps.blobs.size(thumbnailBlob(gw.services.video.deps.sealer.open(id)!.j))).toBeUndefined();
    expect(tmpLeft(gw)).toEqual([]);
  });
});

describe('gateway-made thumbnails: faults', () => {
  it('without ffmpeg the thumbnail stays 404 variant_unavailable', async () => {
    const gw = await gateway({ ffmpeg_path: join(scripts, 'no-such-ffmpeg') });
    const { key, id } = await finishedJob(gw);
    const r = await call(gw, 'GET', thumbPath(id), { key });
    expect(r.status).toBe(404);
    expect(r.json.error).toMatchObject({ type: 'not_found', code: 'variant_unavailable' });
    expect((await call(gw, 'GET', '/v1/models/wan2.6-t2v', { key })).json.video.variants).toEqual(['video']);
  });

  it('ffmpeg failing is a 500 thumbnail_failed that quotes nothing of its output', async () => {
    const fake = fakeFfmpeg('failing', `echo "cannot open /secret/place/video: Invalid data" >&2\nexit 1`);
    const gw = await gateway({ ffmpeg_path: fake.path });
    const { key, id } = await finishedJob(gw);
    const r = await call(gw, 'GET', thumbPath(id), { key });
    expect(r.status).toBe(500);
    expect(r.json.error).toMatchObject({ type: 'server_error', code: 'thumbnail_failed' });
    expect(r.text).not.toContain('/secret/place');
    expect(existsSync(fake.pidFile)).toBe(true);
    expect(tmpLeft(gw)).toEqual([]);
  });

  it('ffmpeg answering 0 with something that is not a JPEG is a failure too', async () => {
    const fake = fakeFfmpeg('liar', `printf 'not an image'\nexit 0`);
    const gw = await gateway({ ffmpeg_path: fake.path });
    const { key, id } = await finishedJob(gw);
    const r = await call(gw, 'GET', thumbPath(id), { key });
    expect(r.json.error.code).toBe('thumbnail_failed');
  });

  it('ffmpeg hanging is killed at timeout_ms: 504 thumbnail_timeout, no process or temp file left', async () => {
    const fake = fakeFfmpeg('hanging', 'exec sleep 60');
    const gw = await gateway({ ffmpeg_path: fake.path, timeout_ms: 700 });
    const { key, id } = await finishedJob(gw);
    const r = await call(gw, 'GET', thumbPath(id), { key });
    expect(r.status).toBe(504);
    expect(r.json.error).toMatchObject({ type: 'server_error', code: 'thumbnail_timeout' });
    const pid = Number(readFileSync(fake.pidFile, 'utf8'));
    await until(() => !alive(pid));
    expect(gw.services.video.deps.frames!.active).toBe(0);
    expect(tmpLeft(gw)).toEqual([]);
  });

  it('a client leaving mid-extraction kills ffmpeg and frees its slot', async () => {
    const fake = fakeFfmpeg('abandoned', 'exec sleep 60');
    const gw = await gateway({ ffmpeg_path: fake.path, timeout_ms: 60_000, concurrency: 1, queue_limit: 0 });
    const { key, id } = await finishedJob(gw);
    rmSync(fake.pidFile, { force: true });
    // A raw request whose socket is destroyed: the client is gone, not just uninterested.
    const client = request(`${gw.url}${thumbPath(id)}`, { headers: { authorization: `Bearer ${key}` }, agent: false });
    const pending = new Promise((resolve) => client.once('error', resolve).once('response', resolve));
    client.end();
    await until(() => existsSync(fake.pidFile) && readFileSync(fake.pidFile, 'utf8').trim() !== '');
    const pid = Number(readFileSync(fake.pidFile, 'utf8'));
    expect(alive(pid)).toBe(true);

    // The one slot is taken and nothing may wait: a second request is shed, not queued.
    const busy = await call(gw, 'GET', thumbPath(id), { key });
    expect(busy.status).toBe(503);
    expect(busy.json.error.code).toBe('overloaded');
    expect(busy.headers.get('retry-after')).toBe('2');

    client.destroy();
    expect(await pending).toBeInstanceOf(Error);
    await until(() => !alive(pid));
    await until(() => gw.services.video.deps.frames!.active === 0);
    await until(() => tmpLeft(gw).length === 0);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MediaFetcher, MediaUnreachableError } from '../../src/http/media.js';
import { SimServer, type SimReply } from '../../src/sim/framework.js';
import { samplePng } from '../../src/sim/media.js';

let sim: SimServer;
beforeAll(async () => {
  sim = await SimServer.start('media', (req): SimReply => {
    if (req.path === '/a.png') return { headers: { 'content-type': 'image/png' }, body: samplePng() };
    if (req.path === '/redirect') return { status: 302, headers: { location: '/a.png' } };
    if (req.path === '/big') return { headers: { 'content-type': 'image/png' }, body: Buffer.alloc(4096) };
    return { status: 404, json: {} };
  });
});
afterAll(() => sim.close());

const port = () => new URL(sim.url).port;
const open = new MediaFetcher({ allowPrivateNetworks: true, maxBytes: 1024, timeoutMs: 2000 });
const guarded = new MediaFetcher({ allowPrivateNetworks: false, maxBytes: 1024, timeoutMs: 2000 });

describe('client media fetching', () => {
  it('fetches by hostname and by IP when private networks are allowed', async () => {
    for (const host of ['localhost', '127.0.0.1']) {
      const m = await open.fetch(`http://${host}:${port()}/a.png`, 'frame_images[0].image_url');
      expect(Buffer.from(m.base64, 'base64').equals(samplePng())).toBe(true);
      expect(m.mimeType).toBe('image/png');
    }
  });

  it('refuses loopback by name, by IP and by IPv4-mapped IPv6 when they are not allowed', async () => {
    for (const url of [`http://localhost:${port()}/a.png`, `http://127.0.0.1:${port()}/a.png`, `http://[::ffff:127.0.0.1]:${port()}/a.png`, `http://[::1]:${port()}/a.png`]) {
      await expect(guarded.fetch(url, 'p'), url).rejects.toMatchObject({ status: 400, code: 'invalid_media', param: 'p' });
    }
    expect(sim.received('GET', '/a.png').length).toBe(2); // only the two allowed fetches above arrived
  });

  it('does not follow redirects, and bounds the size', async () => {
    await expect(open.fetch(`http://localhost:${port()}/redirect`, 'p')).rejects.toBeInstanceOf(MediaUnreachableError);
    await expect(open.fetch(`http://localhost:${port()}/big`, 'p')).rejects.toMatchObject({ code: 'invalid_media' });
    await expect(open.fetch(`http://localhost:${port()}/missing`, 'p')).rejects.toBeInstanceOf(MediaUnreachableError);
  });

  it('decodes base64 data URLs without any request', async () => {
    const m = await guarded.fetch(`data:image/png;base64,${samplePng().toString('base64')}`, 'p');
    expect(m.mimeType).toBe('image/png');
    await expect(guarded.fetch('data:image/png,rawtext', 'p')).rejects.toMatchObject({ code: 'invalid_media' });
  });
});
